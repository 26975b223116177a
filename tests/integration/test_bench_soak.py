"""``factdebate bench soak`` for 3 minutes against a real ``langgraph dev`` (slow tier).

Four users with keys of their own stream, wait for and background their runs, update and fork
threads and delete old ones while the server is sampled. Asserted: no errors and nothing lost
(every run ended ``success``, every thread not deleted answers), each kind of operation ran, the
threads the users keep stay bounded (deletes reach the server), the samples and CPU figures are
there and ``soak.json`` / the markdown section are written. Whether memory and checkpoints stay
flat is the 30-minute run's budget (``BENCHMARKS.md``); three minutes on a shared machine are
reported, not judged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factdebate.evaluation.bench import run_bench
from factdebate.evaluation.bench_report import write_markdown
from tests.integration.servers import LANGGRAPH, warm_home

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not LANGGRAPH.exists(), reason="langgraph-cli not installed")]

USERS, SESSIONS, KEEP = 4, 2, 3


@pytest.mark.timeout(900)
def test_soak_three_minutes(tmp_path: Path):
    warm_home(tmp_path / "work" / "soak" / "home")  # the server's home: no ONNX export at start
    result = run_bench("soak", tmp_path, "factdebate bench soak --duration 180 (test)",
                       duration_s=180.0, users=USERS, claims=4)
    assert result["errors"] == 0, result["error_messages"]
    assert result["lost_runs"] == 0 and result["lost_threads"] == 0, result["lost"]
    assert result["verdicts"]["no_errors"] and result["verdicts"]["no_lost_runs"]
    ops = result["operations"]
    for op in ("threads.create", "runs.stream", "runs.create", "runs.join", "runs.wait",
               "threads.update_state", "threads.get_history", "threads.get", "threads.delete",
               "runs.list"):
        assert ops.get(op, 0) > 0, (op, ops)
    assert result["runs"] >= 20 and result["runs_checked"] >= result["runs"]
    assert result["run_latency_p50_s"] >= 1.0  # at least one 1 s model call per run
    samples = result["samples"]
    assert len(samples) >= 10
    written = (tmp_path / "work" / "soak" / "samples.jsonl").read_text().splitlines()
    assert [json.loads(line)["t_s"] for line in written] == [s["t_s"] for s in samples]
    assert all(s["rss_mb"] > 50 for s in samples)
    assert samples[-1]["checkpoints"] > 0 and samples[-1]["bytes"] > 0
    assert set(samples[-1]["per_user"]) == {f"soak{i}" for i in range(1, USERS + 1)}
    # each session keeps its 3 newest threads (one more while the next is being made)
    assert max(s["threads"] for s in samples) <= USERS * SESSIONS * (KEEP + 1)
    assert result["server_cpu_s_per_claim"] > 0 and result["lean_cpu_s_per_claim"] > 0
    assert result["server_cpu_over_lean"] > 0
    # the agree episode's critical path: query, answer, then the score's chain (>= 3 calls)
    assert result["critical_path_calls"] >= 3 and result["critical_path_s"] >= 3.0
    assert result["run_latency_p50_over_critical_path"] == pytest.approx(
        result["run_latency_p50_s"] / result["critical_path_s"], abs=0.001)
    alone = result["run_alone_latency_s"]
    assert set(alone) == {"wait", "stream", "background"}
    assert all(seconds >= result["critical_path_s"] for seconds in alone.values()), alone
    assert result["run_alone_latency_over_critical_path"] == {
        mode: pytest.approx(seconds / result["critical_path_s"], abs=0.001)
        for mode, seconds in alone.items()}
    judged = {b["name"] for b in result["budgets"] if b["judged"]}
    assert {"server_cpu_over_lean", "p50_over_critical_path", "errors", "lost"} <= judged
    saved = json.loads((tmp_path / "soak.json").read_text())
    assert saved["benchmark"] == "soak" and saved["git_sha"] and "(test)" in saved["command"]
    write_markdown(tmp_path, tmp_path / "B.md")
    text = (tmp_path / "B.md").read_text()
    assert "## soak" in text and "run_latency_p99_s" in text and '"t_s"' not in text
