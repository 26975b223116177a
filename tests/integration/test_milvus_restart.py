"""``eval`` across a Milvus server killed and restarted mid-evaluation: nothing lost,
error rows retried.

Real components: a Milvus standalone server of this test's own (PyPI's ``milvus`` package, its own
data folder and loopback ports, so the session's ``milvus_server`` is never touched), the demo
corpus indexed into it by ``factdebate index``, ``eval`` of Tool-MAD with the scripted model and
SQLite checkpoints, the ``factdebate`` CLI in process. The first row's arrival SIGKILLs the
server's process group, so every later item of the run (one at a time) searches a dead server;
its debate goes on without evidence and the row is a ``ToolFault`` error. The server is started
again on the same data and ports and, once it has loaded the collection again, ``eval --resume
--retry-errors`` reruns those items from the start; the run then holds one ok row per item, equal
to a run that never saw the fault.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.evaluation.milvus_standalone import MilvusStandalone, milvus_unavailable
from factdebate.evaluation.reports import write_reports
from factdebate.evaluation.runner import RunSpec, run_eval
from factdebate.tools import DEMO_CORPUS_DIR
from factdebate.tools.base import clear_retriever_cache

pytestmark = pytest.mark.slow  # a Milvus standalone server of its own, started twice

runner = CliRunner()
CLAIMS = [("eiffel", "The Eiffel Tower is in Paris.", "SUPPORTS"),
          ("everest", "Mount Everest is the highest mountain on Earth.", "SUPPORTS"),
          ("curie", "Marie Curie was born in Germany.", "REFUTES"),
          ("tokyo", "Tokyo is the capital of Japan.", "SUPPORTS")]
"""Run one at a time in the sampled order; the first finished one kills the server."""


@pytest.fixture
def own_server(tmp_path: Path, request: pytest.FixtureRequest):
    """A Milvus standalone server for this test alone (the binary unpacked once per cache)."""
    reason = milvus_unavailable()
    if reason:
        pytest.skip(reason)
    cache = getattr(request.config, "cache", None)
    server = MilvusStandalone(tmp_path / "milvus",
                              cache_dir=cache.mkdir("milvus-server-2.3.5") if cache else None)
    server.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    yield
    clear_retriever_cache()


def serving(uri: str) -> None:
    """Return once the restarted server has loaded the index's collection again (~25 s after its
    proxy answers, measured: until then opening it or a search waits for the load)."""
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    try:
        client.load_collection("factdebate_passages", timeout=300)
    finally:
        client.close()


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines() if x]


def measured(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["status"], row["prediction"], row["rounds"], row["stopped_by"],
            row["final_labels"], row["contexts"], row["ledger"]["tool_calls"],
            row["ledger"].get("tool_faults"), row["flags"],
            [e.get("id") for e in row.get("evidence") or []])


def figures(out: Path) -> dict[str, Any]:
    run = write_reports(out, [out])["runs"][0]
    metrics = {k: v for k, v in run["metrics"].items() if k != "wall_time_s"}
    return {"n_ok": run["n_ok"], "n_items": run["n_items"], "metrics": metrics,
            "accuracy_all": run.get("accuracy_all"), "evidence": run.get("evidence")}


def test_eval_resumes_after_the_milvus_server_is_killed_and_restarted(own_server, tmp_path, caplog):
    lines_of = (DEMO_CORPUS_DIR / "passages.jsonl").read_text(encoding="utf-8").splitlines()[:30]
    (tmp_path / "c.jsonl").write_text("\n".join(lines_of) + "\n", encoding="utf-8")
    built = runner.invoke(app, ["index", str(tmp_path / "c.jsonl"), "--index-dir",
                                str(tmp_path / "index"), "--milvus-uri", own_server.uri])
    assert built.exit_code == 0, built.output
    data = tmp_path / "claims.jsonl"
    data.write_text("".join(json.dumps({"id": i, "dataset": "mini", "claim": c, "label": lab})
                            + "\n" for i, c, lab in CLAIMS), encoding="utf-8")
    sets = [f"index_dir={tmp_path / 'index'}", f"milvus_uri={own_server.uri}"]
    out = tmp_path / "out"
    spec = RunSpec(framework="tool_mad", dataset=str(data), out=out, concurrency=1,
                   model="scripted:agree", sets=sets)
    killed: list[str] = []

    def kill_after_first_row(row: dict[str, Any]) -> None:
        if not killed:  # a crash: the whole process group, no shutdown
            killed.append(row["item_id"])
            os.killpg(own_server.pid, signal.SIGKILL)
            own_server.kill()  # reaps it; start() brings it back on the same data and ports

    with caplog.at_level("WARNING"):
        asyncio.run(run_eval(spec, on_row=kill_after_first_row))
    # the fault is each row's one error line, never pymilvus' reconnect tracebacks on the terminal
    milvus_logs = [f"{r.name}: {r.getMessage()}" for r in caplog.records
                   if r.name.startswith(("pymilvus", "milvus_lite", "grpc"))]
    assert milvus_logs == []
    first = {r["item_id"]: r for r in lines(out)}
    assert len(first) == len(CLAIMS) and first[killed[0]]["status"] == "ok"
    failed = {i: r for i, r in first.items() if r["status"] == "error"}
    assert len(failed) == len(CLAIMS) - 1, {i: r.get("error") for i, r in first.items()}
    for row in failed.values():  # debated without evidence: an error, never a scored row
        assert row["error"]["type"] == "ToolFault", row["error"]
        assert row["error"]["message"].startswith("milvus (1 failed call)"), row["error"]
        assert f"Milvus at {own_server.uri} failed to search" in row["error"]["message"]
        assert row["ledger"]["tool_faults"] == {"milvus": 1}

    own_server.start()  # the same data folder and ports
    serving(own_server.uri)
    clear_retriever_cache()  # a resume is a new process

    def eval_args(folder: Path) -> list[str]:
        return ["eval", "--framework", "tool_mad", "--dataset", str(data), "--out", str(folder),
                "--concurrency", "1", "--model", "scripted:agree",
                *[x for s in sets for x in ("--set", s)]]

    resumed = runner.invoke(app, [*eval_args(out), "--resume", "--retry-errors"])
    assert resumed.exit_code == 0, resumed.output
    rows = lines(out)
    assert sorted(r["item_id"] for r in rows) == sorted(i for i, _, _ in CLAIMS)  # once each
    assert all(r["status"] == "ok" for r in rows), [r.get("error") for r in rows]
    assert not list(out.glob("results.jsonl.*"))  # nothing set aside or damaged

    clean = runner.invoke(app, eval_args(tmp_path / "clean"))
    assert clean.exit_code == 0, clean.output
    never_faulted = {r["item_id"]: r for r in lines(tmp_path / "clean")}
    for row in rows:
        assert not row["ledger"].get("tool_faults"), row["flags"]
        assert row["ledger"]["tool_calls"]["milvus"] == 1
        assert measured(row) == measured(never_faulted[row["item_id"]]), row["item_id"]
    assert figures(out) == figures(tmp_path / "clean")
