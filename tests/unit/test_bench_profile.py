"""``bench profile``'s grouping of py-spy samples by owner, and the soak's CPU and latency budgets."""

from __future__ import annotations

from pathlib import Path

from factdebate.evaluation.bench_profile import EVENT_LOOP, frame_owner, owner_table, owners_of
from factdebate.evaluation.bench_soak import cpu_budgets

LOOP = "run (asyncio/base_events.py:600);_run_once (asyncio/base_events.py:1900)"


def test_each_frame_has_the_owner_its_module_says() -> None:
    assert frame_owner("put (checkpoint/memory/__init__.py:300)") == "checkpoints"
    assert frame_owner("_msgpack_default (serde/jsonplus.py:20)") == "checkpoints"
    assert frame_owner("prepare_next_tasks (pregel/_algo.py:10)") == "langgraph_loop"
    assert frame_owner("_configure (langchain_core/callbacks/manager.py:5)") == \
        "langchain_callbacks_tracing"
    assert frame_owner("BaseModel.__init__ (pydantic/main.py:5)") == "langchain_other"
    assert frame_owner("known_secrets (factdebate/core/secrets_filter.py:9)") == "filters"
    assert frame_owner("respond (factdebate/nodes/respond.py:9)") == "our_nodes_tools"
    assert frame_owner("Route.matches (starlette/routing.py:1)") == "http_sse"
    assert frame_owner("dumps (json/__init__.py:1)") is None  # the standard library: the caller's


def test_a_sample_belongs_to_its_innermost_owned_frame(tmp_path: Path) -> None:
    raw = tmp_path / "profile.txt"
    raw.write_text("\n".join([
        # json called by the secrets filter: the filter's
        f"{LOOP};redact (factdebate/core/secrets_filter.py:1);dumps (json/__init__.py:1) 6",
        # a node that writes a checkpoint: the checkpoint's
        f"{LOOP};respond (factdebate/nodes/respond.py:9);put (checkpoint/memory/__init__.py:3) 3",
        # nothing but the loop
        f"{LOOP} 1",
        "not a sample line",
    ]) + "\n")
    got = owners_of(raw)
    assert got["samples"] == 10
    assert got["shares"]["filters"] == 0.6
    assert got["shares"]["checkpoints"] == 0.3
    assert got["shares"][EVENT_LOOP] == 0.1
    assert got["shares"]["our_nodes_tools"] == 0.0
    table = owner_table({"server": {"samples": 10, "cpu_s_per_claim": 0.2,
                                    "shares": got["shares"],
                                    "s_per_claim": {k: v * 0.2 for k, v in got["shares"].items()}}})
    assert "| filters | 60.0% | 0.1200 |" in table


def test_the_soak_judges_cpu_and_latency_against_their_limits() -> None:
    met = cpu_budgets({"server_cpu_over_lean": 1.2, "run_latency_p50_over_critical_path": 1.04})
    assert [b["met"] for b in met] == [True, True]
    missed = cpu_budgets({"server_cpu_over_lean": 2.4, "run_latency_p50_over_critical_path": 1.2})
    assert [b["met"] for b in missed] == [False, False]
    unknown = cpu_budgets({"server_cpu_over_lean": None})
    assert all(b["met"] is None and b["why_not_judged"] for b in unknown)
