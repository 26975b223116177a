"""``eval --tool-faults``: an item whose retriever failed is an error row, not a measurement.

In process, no index: Tool-MAD over a retriever that raises while ``DOWN`` is set (as a Milvus
server that went away: a connection error naming a URL with a password), the static retriever for
the search debater, the scripted model, SQLite checkpoints. With the default ``error`` the rows are
``ToolFault`` error rows (verdict and ledger kept, credentials masked), a plain ``--resume`` keeps
them, ``--resume --retry-errors`` starts their finished threads over and gives the rows of a run
that never saw the fault; ``score`` keeps them scored with the fault in their flags. Over
``--server`` (slow tier: a real ``langgraph dev`` whose search tool is a local HTTP stand-in for
Tavily, answering 503 while down) the retried items' server threads are deleted and run again.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.errors import InputError
from factdebate.evaluation.reports import write_reports
from factdebate.evaluation.results import failed_tools, tool_fault_row
from factdebate.evaluation.runner import RunSpec, run_eval
from factdebate.tools.base import RETRIEVERS, clear_retriever_cache
from tests.conftest import StaticRetriever

SECRET = "s3cret-milvus-pw"
DOWN = {"now": False}


class FlakyRetriever(StaticRetriever):
    """The static passages, or a connection error while ``DOWN["now"]``."""

    async def search(self, query: str, *, k: int) -> list[Any]:
        if DOWN["now"]:
            raise ConnectionError(f"cannot reach http://op:{SECRET}@127.0.0.1:9/ (refused)")
        return await super().search(query, k=k)


if "flaky" not in RETRIEVERS:
    RETRIEVERS.register("flaky", lambda settings: FlakyRetriever("flaky"))

CLAIMS = [("eiffel", "The Eiffel Tower is in Paris.", "SUPPORTS"),
          ("everest", "Mount Everest is the highest mountain.", "SUPPORTS"),
          ("curie", "Marie Curie won two Nobel Prizes.", "REFUTES")]
SETS = ["rag_backend=flaky", "search_backend=static", "scoring_mode=none", "tool_retries=0",
        "llm_retries=0"]


@pytest.fixture(autouse=True)
def _no_index(monkeypatch: pytest.MonkeyPatch):
    # the static test retrievers need no index on disk
    monkeypatch.setattr("factdebate.evaluation.runner._check_index", lambda spec, ctx, console: ctx)
    DOWN["now"] = False
    yield
    DOWN["now"] = False
    clear_retriever_cache()


def dataset(folder: Path) -> Path:
    path = folder / "mini.jsonl"
    path.write_text("".join(json.dumps({"id": i, "dataset": "mini", "claim": c, "label": lab}) + "\n"
                            for i, c, lab in CLAIMS), encoding="utf-8")
    return path


def run(folder: Path, out: str, **extra: Any) -> dict[str, dict[str, Any]]:
    spec = RunSpec(framework="tool_mad", dataset=str(dataset(folder)), out=folder / out,
                   concurrency=2, model="scripted:agree", sets=SETS, **extra)
    asyncio.run(run_eval(spec))
    return lines(folder / out)


def lines(out: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    by_id = {r["item_id"]: r for r in rows}
    assert len(by_id) == len(rows), "one row per item"
    return by_id


def measured(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["status"], row["prediction"], row["rounds"], row["stopped_by"],
            row["ledger"].get("tool_calls"), row["ledger"].get("tool_faults"), row["flags"])


def test_a_failed_retriever_makes_error_rows_that_retry_errors_reruns_from_the_start(tmp_path):
    DOWN["now"] = True
    rows = run(tmp_path, "out")
    assert set(rows) == {i for i, _, _ in CLAIMS}
    for row in rows.values():
        assert row["status"] == "error" and row["error"]["type"] == "ToolFault", row
        message = row["error"]["message"]
        assert message.startswith("flaky (1 failed call): the debate went on without that "
                                  "evidence"), message
        assert "first: flaky failed for agent rag in round 1 after 0 retries (ConnectionError: " \
               "cannot reach http://op:***@127.0.0.1:9/ (refused)))" in message
        assert row["prediction"]["label"] and row["ledger"]["tool_faults"] == {"flaky": 1}
    assert SECRET not in (tmp_path / "out" / "results.jsonl").read_text()
    record = json.loads((tmp_path / "out" / "run.json").read_text())
    assert record["tool_faults"] == "error"
    summary = write_reports(tmp_path / "out", [tmp_path / "out"])["runs"][0]
    assert summary["n_ok"] == 0 and summary["metrics"]["errors"] == 3
    assert summary["caveats"]["error_types"] == {"ToolFault": 3}

    DOWN["now"] = False  # the retriever is back; a plain resume keeps the recorded error rows
    assert {r["status"] for r in run(tmp_path, "out", resume=True).values()} == {"error"}

    retried = run(tmp_path, "out", resume=True, retry_errors=True)
    never_faulted = run(tmp_path, "clean")
    assert {r["status"] for r in retried.values()} == {"ok"}
    for item, row in retried.items():  # started over: no fault read back from the old thread
        assert not row["ledger"].get("tool_faults") and not [
            f for f in row["flags"] if f.startswith("tool fault")], row["flags"]
        assert measured(row) == measured(never_faulted[item])
    after = write_reports(tmp_path / "out", [tmp_path / "out"])["runs"][0]
    clean = write_reports(tmp_path / "clean", [tmp_path / "clean"])["runs"][0]
    assert after["n_ok"] == 3 and after["metrics"]["accuracy"] == clean["metrics"]["accuracy"]
    assert not list((tmp_path / "out").glob("results.jsonl.set-aside-*"))


def test_tool_faults_score_keeps_the_rows_scored_and_a_resume_must_match(tmp_path):
    DOWN["now"] = True
    rows = run(tmp_path, "out", tool_faults="score")
    for row in rows.values():
        assert row["status"] == "ok" and row["ledger"]["tool_faults"] == {"flaky": 1}
        assert any(f.startswith("tool fault: flaky failed for agent rag") for f in row["flags"])
    assert json.loads((tmp_path / "out" / "run.json").read_text())["tool_faults"] == "score"
    summary = write_reports(tmp_path / "out", [tmp_path / "out"])["runs"][0]
    assert summary["n_ok"] == 3 and summary["metrics"]["errors"] == 0
    with pytest.raises(InputError, match="--tool-faults 'score' -> 'error'"):
        run(tmp_path, "out", resume=True)
    with pytest.raises(InputError, match="--tool-faults 'ignore' is not a choice"):
        run(tmp_path, "other", tool_faults="ignore")


def test_a_tool_the_model_named_but_was_never_offered_is_not_a_tool_fault():
    # MERMAID's executor asking for a tool it was not given: a tool_faults entry without a call
    row = {"status": "ok", "ledger": {"tool_calls": {"search_wikipedia": 2},
                                      "tool_faults": {"search_web": 1}},
           "flags": ["tool fault: search_web in ReAct step 1 (the tool is not available to the "
                     "executor)"]}
    assert failed_tools(row) == {} and tool_fault_row(row) is None
    row["ledger"]["tool_faults"]["search_wikipedia"] = 2
    row["flags"].append("tool fault: search_wikipedia in ReAct step 2 (TimeoutError: )")
    faulted = tool_fault_row(row)
    assert faulted is not None and faulted["error"]["message"] == (
        "search_wikipedia (2 failed calls): the debate went on without that evidence, so the "
        "item is not scored (first: search_wikipedia in ReAct step 2 (TimeoutError: ))")


def test_eval_cli_names_the_tool_faults_and_the_command_to_rerun_them(tmp_path):
    DOWN["now"] = True
    out = tmp_path / "out"
    args = ["eval", "--framework", "tool_mad", "--dataset", str(dataset(tmp_path)), "--out",
            str(out), "--model", "scripted:agree", *[x for s in SETS for x in ("--set", s)]]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 4, result.output
    tail = " ".join(result.stderr.split())
    assert "3 of 3 item(s) ended in an error (first: ToolFault: flaky (1 failed call)" in tail
    assert "3 of them ToolFault: a tool failed" in tail and "--tool-faults score" in tail
    assert f"Rerun them with: factdebate eval ... --out {out} --resume --retry-errors" in tail
    assert SECRET not in result.output

    refused = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "x"), "--tool-faults", "no"])
    errors = [x for x in refused.stderr.splitlines() if x.startswith("error:")]
    assert refused.exit_code == 2 and len(errors) == 1 and "--tool-faults 'no'" in errors[0]

    DOWN["now"] = False
    again = CliRunner().invoke(app, [*args, "--resume", "--retry-errors"])
    assert again.exit_code == 0, again.output
    assert {r["status"] for r in lines(out).values()} == {"ok"}


class TavilyStandIn(BaseHTTPRequestHandler):
    """Tavily's ``/search``: 503 while ``DOWN["now"]``, else one Eiffel Tower result."""

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        code, body = (503, {"detail": {"error": "HTTP 503"}}) if DOWN["now"] else (200, {
            "query": "q", "results": [{"title": "Eiffel Tower", "url": "https://example.org/e",
                                       "content": "The Eiffel Tower is a tower in Paris.",
                                       "score": 0.9}]})
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def tavily_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), TavilyStandIn)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.mark.slow  # a langgraph dev server of its own (its search tool is the stand-in)
def test_retry_errors_starts_tool_fault_threads_over_on_a_langgraph_server(tavily_server,
                                                                           tmp_path):
    from langgraph_sdk import get_client

    from tests.integration.servers import LANGGRAPH, start_langgraph_dev, stop_server, tiny_index

    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli not installed")
    work = tmp_path / "server"
    work.mkdir()
    key = "tool-fault-key"
    proc, url = start_langgraph_dev(work, {
        "FACTDEBATE_API_KEY": key, "FACTDEBATE_ALLOW_SCRIPTED": "1",
        "FACTDEBATE_INDEX_DIR": str(tiny_index(work)), "FACTDEBATE_SEARCH_BACKEND": "tavily",
        "TAVILY_API_KEY": "tvly-fake-key-for-tests", "TAVILY_BASE_URL": tavily_server})
    try:
        DOWN["now"] = True
        out = tmp_path / "out"
        args = ["eval", "--framework", "tool_mad", "--dataset", str(dataset(tmp_path)), "--out",
                str(out), "--model", "scripted:agree", "--server", url, "--server-api-key", key,
                "--set", "scoring_mode=none", "--set", "tool_retries=0"]
        first = CliRunner().invoke(app, args)
        assert first.exit_code == 4, first.output
        rows = lines(out)
        assert {r["error"]["type"] for r in rows.values()} == {"ToolFault"}, rows
        assert all(r["error"]["message"].startswith("tavily (1 failed call)") for r in rows.values())

        DOWN["now"] = False
        again = CliRunner().invoke(app, [*args, "--resume", "--retry-errors"])
        assert again.exit_code == 0, again.output
        rows = lines(out)
        assert {r["status"] for r in rows.values()} == {"ok"} and len(rows) == len(CLAIMS)

        async def states() -> list[Any]:
            client = get_client(url=url, api_key=key)
            return [await client.threads.get_state(r["thread_id"]) for r in rows.values()]

        for row, state in zip(rows.values(), asyncio.run(states()), strict=True):
            assert not row["ledger"].get("tool_faults") and row["ledger"]["tool_calls"]["tavily"] == 1
            assert not state["values"]["ledger"].get("tool_faults")  # the thread started over
            search = next(t for t in state["values"]["turns"] if t["agent"] == "search")
            assert search["evidence"][0]["source"] == "tavily"
    finally:
        stop_server(proc)
