"""``eval --server URL``: items run as threads on a ``langgraph dev`` server through langgraph_sdk,
with the same results format as in-process runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import LANGGRAPH, free_port, start_langgraph_dev, stop_server

REPO = Path(__file__).resolve().parents[2]
FACTDEBATE = Path(sys.executable).parent / "factdebate"
API_KEY = "eval-server-key"
SERVER_LOGS: dict[str, Path] = {}

pytestmark = pytest.mark.skipif(not LANGGRAPH.exists(), reason="langgraph-cli not installed")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, wiki_index: Path) -> Iterator[str]:
    # the server's own copy: a Milvus Lite folder opens in one process at a time, and this test
    # process may hold the session's index open from earlier tests
    work = tmp_path_factory.mktemp("server")
    served = work / "index"
    shutil.copytree(wiki_index, served, ignore=shutil.ignore_patterns(".*.lock"))
    # one run at a time per user: eval's default --concurrency (4) is above it, so items are
    # refused with 429 until the previous one finishes, and eval waits for the server's Retry-After
    proc, url = start_langgraph_dev(work, {"FACTDEBATE_API_KEY": API_KEY,
                                           "FACTDEBATE_ALLOW_SCRIPTED": "1",
                                           "FACTDEBATE_MAX_RUNS_PER_USER": "1",
                                           "FACTDEBATE_INDEX_DIR": str(served)})
    SERVER_LOGS[url] = work / "server.log"
    try:
        yield url
    finally:
        stop_server(proc)


def run_eval(out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FACTDEBATE_HOME": str(out.parent / "home")}
    env.pop("LANGSMITH_TRACING", None)
    return subprocess.run(
        [str(FACTDEBATE), "eval", "--framework", "tool_mad", "--dataset", "fever", "--limit", "3",
         "--model", "scripted:agree", "--out", str(out),
         "--set", "scoring_mode=consistency", "--server-api-key", API_KEY, *extra],
        capture_output=True, text=True, env=env, timeout=240, cwd=REPO,
    )


async def test_eval_runs_items_as_server_threads(server: str, wiki_index: Path, tmp_path: Path):
    from langgraph_sdk import get_client

    out = tmp_path / "out"
    done = run_eval(out, "--server", server)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and {r["status"] for r in rows} == {"ok"}
    client = get_client(url=server, api_key=API_KEY)
    for row in rows:
        assert row["prediction"]["label"] == "SUPPORTS" and row["stopped_by"] == "consensus"
        # the server's operator chose the index (FACTDEBATE_INDEX_DIR) and the default backends
        assert row["ledger"]["tool_calls"] == {"milvus": 1, "local_search": 1}
        state = await client.threads.get_state(row["thread_id"])  # one server thread per item
        assert state["values"]["label"] == "SUPPORTS" and state["values"]["claim"] == row["claim"]
    summary = json.loads((out / "summary.json").read_text())["runs"][0]
    assert summary["n_ok"] == 3 and json.loads((out / "run.json").read_text())["server"] == server
    # resuming a finished run starts nothing and writes no row twice
    again = run_eval(out, "--server", server, "--resume")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len((out / "results.jsonl").read_text().splitlines()) == 3


def test_items_refused_by_the_per_user_run_limit_wait_and_run(server: str, tmp_path: Path):
    """The server admits one run of this user at a time; eval runs three items at once, is refused
    (429 with Retry-After), waits and asks again: every item is a result, none an error row."""
    out = tmp_path / "out"
    log = SERVER_LOGS[server]
    refused_before = log.read_text(errors="replace").count(" 429")
    done = run_eval(out, "--server", server, "--concurrency", "3",
                    "--model", "scripted:agree?latency=0.4")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and {r["status"] for r in rows} == {"ok"}, rows
    assert log.read_text(errors="replace").count(" 429") > refused_before  # the limit did refuse


def test_unreachable_server_is_one_line_error(tmp_path: Path):
    if not os.environ.get("FACTDEBATE_DATA_DIR"):  # the items are read before the server is asked
        pytest.skip("FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
    done = run_eval(tmp_path / "out", "--server", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 3 and "unreachable" in done.stderr and "Traceback" not in done.stderr


def test_operator_setting_with_server_is_refused(server: str, tmp_path: Path):
    """An operator-only field given to a server eval is an error naming it, not silently dropped."""
    if not os.environ.get("FACTDEBATE_DATA_DIR"):
        pytest.skip("FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
    out = tmp_path / "out"
    done = run_eval(out, "--server", server, "--set", "rag_backend=keyword")
    assert done.returncode != 0 and "rag_backend" in done.stderr and "operator" in done.stderr
    assert "Traceback" not in done.stderr
