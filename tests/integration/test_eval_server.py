"""``eval --server URL``: items run as threads on a ``langgraph dev`` server through langgraph_sdk,
with the same results format as in-process runs."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from servers import LANGGRAPH, free_port, start_langgraph_dev, stop_server, warm_home

from tests.integration.loopback import serve_http

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
    # one run at a time per user: limited_run's --concurrency (3) is above it, so items are
    # refused with 429 until the previous one finishes, and eval waits for the server's Retry-After;
    # a warm home: the server does not export MiniLM's ONNX graph at its start
    proc, url = start_langgraph_dev(work, {"FACTDEBATE_HOME": str(warm_home(work / "home")),
                                           "FACTDEBATE_API_KEY": API_KEY,
                                           "FACTDEBATE_ALLOW_SCRIPTED": "1",
                                           "FACTDEBATE_MAX_RUNS_PER_USER": "1",
                                           "FACTDEBATE_INDEX_DIR": str(served)})
    SERVER_LOGS[url] = work / "server.log"
    try:
        yield url
    finally:
        stop_server(proc)


def run_eval(out: Path, *extra: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess:
    env = {**os.environ, "FACTDEBATE_HOME": str(out.parent / "home"), **(env or {})}
    env.pop("LANGSMITH_TRACING", None)
    return subprocess.run(
        [str(FACTDEBATE), "eval", "--framework", "tool_mad", "--dataset", "fever", "--limit", "3",
         "--model", "scripted:agree", "--out", str(out),
         "--set", "scoring_mode=consistency", "--server-api-key", API_KEY, *extra],
        capture_output=True, text=True, env=env, timeout=240, cwd=REPO,
    )


LIMITED_RUN = ("--concurrency", "3", "--model", "scripted:agree?latency=0.4")


@pytest.fixture(scope="module")
def limited_run(server: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """One eval of three items at once (``--concurrency 3``, each model call 0.4 s) on the server
    that admits one run per user: its output folder and the server log's count of 429 replies
    before it. The tests of the server's threads and of the per-user limit read this one run."""
    out = tmp_path_factory.mktemp("limited-run") / "out"
    refused_before = SERVER_LOGS[server].read_text(errors="replace").count(" 429")
    done = run_eval(out, "--server", server, *LIMITED_RUN)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, refused_before


async def test_eval_runs_items_as_server_threads(server: str, wiki_index: Path,
                                                 limited_run: tuple[Path, int]):
    from langgraph_sdk import get_client

    out = limited_run[0]
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
    record = json.loads((out / "run.json").read_text())
    assert summary["n_ok"] == 3 and record["server"] == server
    # the server named its index (its 200-passage corpus); the data folder's corpus is the whole
    # wiki.jsonl, another file: no ceiling from it, one line says why
    manifest = json.loads((wiki_index / "manifest.json").read_text())
    index = record["index"]
    assert (index["searched_by"], index["corpus_sha256"]) == ("server", manifest["corpus_sha256"])
    assert index["ceiling"].startswith("not computed: the server's corpus wiki200.jsonl")
    assert not any("gold_in_index" in row for row in rows)
    assert "searched by the server" in (out / "report.md").read_text()
    # resuming a finished run starts nothing and writes no row twice
    again = run_eval(out, "--server", server, *LIMITED_RUN, "--resume")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len((out / "results.jsonl").read_text().splitlines()) == 3


def test_the_index_route_names_the_servers_index_to_its_users_only(server: str, wiki_index: Path):
    """GET /factdebate/index: 401/403 without a valid key (the Studio header opens nothing); with
    one, the identity of the operator's index without its folder, Milvus URI or corpus path."""
    import httpx

    route = f"{server}/factdebate/index"
    assert httpx.get(route, timeout=30).status_code == 401
    assert httpx.get(route, headers={"x-auth-scheme": "langsmith"}, timeout=30).status_code == 401
    assert httpx.get(route, headers={"x-api-key": "wrong"}, timeout=30).status_code == 403
    answer = httpx.get(route, headers={"x-api-key": API_KEY}, timeout=30)
    assert answer.status_code == 200, answer.text
    manifest = json.loads((wiki_index / "manifest.json").read_text())
    body = answer.json()
    assert body["status"] == "ok" and body["corpus"] == "wiki200.jsonl"
    assert (body["corpus_sha256"], body["passages"]) == (manifest["corpus_sha256"],
                                                         manifest["passages"])
    assert body["embedding_model"] == manifest["embedding_model"] and not body["demo"]
    served = SERVER_LOGS[server].parent / "index"  # the operator's FACTDEBATE_INDEX_DIR
    for secret in (str(served), str(served / "milvus.db"), str(Path(manifest["corpus"]).parent),
                   str(wiki_index), "milvus.db"):
        assert secret not in answer.text, secret
    assert not {"index_dir", "milvus_uri"} & set(body)


@pytest.mark.slow  # an eval and a refused resume on the server (~12-17 s): the slow tier; the
# server's index in run.json in the default one: test_eval_runs_items_as_server_threads
def test_a_server_run_over_the_servers_corpus_has_its_ceiling_and_resumes_on_that_index_only(
        server: str, wiki_index: Path, tmp_path: Path):
    """The data folder holds the server's corpus (same bytes): run.json names the server's index
    (no path, no URI), each item's gold_in_index is what that index's keyword index says; a resume
    whose recorded index is not the one the server now names is refused."""
    from factdebate.evaluation.ceiling import IndexLookup, gold_in_index

    manifest = json.loads((wiki_index / "manifest.json").read_text())
    data = tmp_path / "data"
    (data / "corpus").mkdir(parents=True)
    shutil.copyfile(manifest["corpus"], data / "corpus" / "wiki.jsonl")
    (data / "fever").symlink_to(Path(os.environ["FACTDEBATE_DATA_DIR"]) / "fever")
    out = tmp_path / "out"
    # one item at a time: none is refused by the server's one-run limit (whose 429 eval waits out
    # for its Retry-After of 5 s; test_items_refused_by_the_per_user_run_limit_wait_and_run)
    done = run_eval(out, "--server", server, "--data-dir", str(data), "--concurrency", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    text = (out / "run.json").read_text()
    index = json.loads(text)["index"]
    assert (index["status"], index["searched_by"]) == ("ok", "server")
    assert (index["corpus_sha256"], index["passages"]) == (manifest["corpus_sha256"],
                                                           manifest["passages"])
    assert index["ceiling"] == ("from the data folder's corpus wiki.jsonl, the server's corpus "
                                "(same SHA-256)")
    served = SERVER_LOGS[server].parent / "index"
    assert str(served) not in text and "milvus.db" not in text and "milvus_uri" not in index
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    lookup = IndexLookup(wiki_index)
    golds = [r for r in rows if r["gold"].get("evidence")]
    assert golds, rows
    for row in golds:
        assert row["gold_in_index"] == gold_in_index(row["gold"]["evidence"], lookup), row
    ceiling = json.loads((out / "summary.json").read_text())["runs"][0]["evidence"]["ceiling"]
    with_sets = sum(isinstance(r["gold_in_index"], dict) for r in golds)
    assert with_sets and ceiling["n"] == with_sets
    # the run recorded another index than the one the server names now: the resume is refused
    record = json.loads(text)
    record["index"]["corpus_sha256"] = "0" * 64
    (out / "run.json").write_text(json.dumps(record))
    refused = run_eval(out, "--server", server, "--data-dir", str(data), "--resume")
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "the index changed since the run started" in " ".join(refused.stderr.split())


def test_items_refused_by_the_per_user_run_limit_wait_and_run(server: str,
                                                               limited_run: tuple[Path, int]):
    """The server admits one run of this user at a time; eval runs three items at once, is refused
    (429 with Retry-After), waits and asks again: every item is a result, none an error row."""
    out, refused_before = limited_run
    log = SERVER_LOGS[server]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and {r["status"] for r in rows} == {"ok"}, rows
    assert log.read_text(errors="replace").count(" 429") > refused_before  # the limit did refuse
    # each refusal was waited out inside the item's one attempt (runs.wait's 429 is an
    # httpx.HTTPStatusError), not by the item runner starting the item over
    assert [r["attempts"] for r in rows] == [1, 1, 1], rows


@pytest.mark.slow  # the connection retries take ~8 s (~11 s in all): the slow tier
def test_unreachable_server_is_one_line_error(tmp_path: Path):
    if not os.environ.get("FACTDEBATE_DATA_DIR"):  # the items are read before the server is asked
        pytest.skip("FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
    # nothing listens: the connection is refused on every retry (~8 s), and the error says so
    done = run_eval(tmp_path / "out", "--server", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 3 and "unreachable" in done.stderr and "Traceback" not in done.stderr
    assert "ConnectError" in done.stderr, done.stderr[-2000:]


def test_operator_setting_with_server_is_refused(server: str, tmp_path: Path):
    """An operator-only field given to a server eval is an error naming it, not silently dropped."""
    if not os.environ.get("FACTDEBATE_DATA_DIR"):
        pytest.skip("FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
    out = tmp_path / "out"
    done = run_eval(out, "--server", server, "--set", "rag_backend=keyword")
    assert done.returncode != 0 and "rag_backend" in done.stderr and "operator" in done.stderr
    assert "Traceback" not in done.stderr


# --- a hostile or busy server: a real HTTP server on 127.0.0.1 speaking the LangGraph API -------
# (the few routes ``eval --server`` calls), whose ``runs/wait`` refuses, trickles, stays silent or
# sends an endless reply. Every run is bounded by the subprocess timeout; rows are asserted.

FINAL_STATE = {"claim": "The Eiffel Tower is in Paris.", "task": "fever", "label": "SUPPORTS",
               "stopped_by": "consensus", "round": 1}


class FakeLangGraph(BaseHTTPRequestHandler):
    """``mode`` decides what ``POST /threads/<id>/runs/wait`` does; ``log`` keeps
    ``(method, path, time)`` and ``sent`` the body bytes the wait handler managed to send."""

    mode: dict = {}
    log: list = []
    sent: list = []

    def log_message(self, *args) -> None:
        pass

    def reply(self, status: int, body: object, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        FakeLangGraph.log.append(("GET", self.path, time.monotonic()))
        if self.path == "/factdebate/index":  # a deployment that does not name its index
            return self.reply(404, {"detail": "Not Found"})
        self.reply(200, {"values": {}, "next": [], "tasks": []})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        FakeLangGraph.log.append(("POST", self.path, time.monotonic()))
        if self.path == "/assistants/search":
            return self.reply(200, [{"assistant_id": "a", "graph_id": "tool_mad"}])
        if not self.path.endswith("/runs/wait"):
            return self.reply(200, {"thread_id": self.path.split("/")[-1]})
        refusals = FakeLangGraph.mode.get("refusals", [])
        waits = sum(1 for m, p, _ in FakeLangGraph.log if p.endswith("/runs/wait"))
        if waits <= len(refusals) or FakeLangGraph.mode.get("busy"):
            retry = refusals[waits - 1] if waits <= len(refusals) else "1"
            return self.reply(429, {"detail": "alice has 1 runs pending or running"},
                              {"Retry-After": retry() if callable(retry) else retry})
        behaviour = FakeLangGraph.mode.get("wait", "answer")
        if behaviour == "answer":
            return self.reply(200, FINAL_STATE)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if behaviour == "declared":
            self.send_header("Content-Length", str(10**9))
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent, stop = 0, time.monotonic() + 60
        # a small send buffer: what the client did not read stays here, not in the kernel
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        try:
            if behaviour == "silent":
                self.connection.settimeout(60)
                self.rfile.read(1)  # returns when the client hangs up
                return
            head = json.dumps(FINAL_STATE)[:-1].encode() + b', "pad": "'
            self.wfile.write(head)
            sent += len(head)
            while time.monotonic() < stop and sent < 48 * 2**20:
                chunk = b" " if behaviour == "trickle" else b"x" * 65536
                self.wfile.write(chunk)
                self.wfile.flush()
                sent += len(chunk)
                if behaviour == "trickle":
                    time.sleep(1.0)
            self.wfile.write(b'"}')
        except OSError:  # the client hung up: what it refused is not sent
            pass
        finally:
            FakeLangGraph.sent.append(sent)


@pytest.fixture
def fake_server() -> Iterator[str]:
    FakeLangGraph.mode, FakeLangGraph.log, FakeLangGraph.sent = {}, [], []
    with serve_http(FakeLangGraph) as host:
        yield f"http://op:SECRET-pw@{host}"


def eval_fake(tmp_path: Path, url: str, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    """``eval --server URL`` of one item against the fake server; its one results row."""
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps({"id": "one-1", "dataset": "one", "claim": FINAL_STATE["claim"],
                                "label": "SUPPORTS"}) + "\n")
    out = tmp_path / "out"
    full_env = {**os.environ, "FACTDEBATE_HOME": str(tmp_path / "home"), **env}
    full_env.pop("LANGSMITH_TRACING", None)
    done = subprocess.run(
        [str(FACTDEBATE), "eval", "--framework", "tool_mad", "--dataset", str(data),
         "--model", "scripted:agree", "--out", str(out), "--server", url,
         "--server-api-key", API_KEY],
        capture_output=True, text=True, env=full_env, timeout=120, cwd=REPO)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()] \
        if (out / "results.jsonl").exists() else []
    assert len(rows) == 1, done.stderr[-3000:]
    return done, rows[0]


def wait_requests() -> list[float]:
    return [t for m, p, t in FakeLangGraph.log if p.endswith("/runs/wait")]


@pytest.mark.slow  # 6 s of Retry-After waits (~12 s in all): the slow tier; a 429 waited out in the
# default one: test_items_refused_by_the_per_user_run_limit_wait_and_run
def test_a_busy_server_is_waited_out_after_its_retry_after_in_both_forms(fake_server, tmp_path):
    """Three 429s (langgraph_sdk's runs.wait raises a plain httpx.HTTPStatusError for them), the
    last with an HTTP-date Retry-After 4 s ahead: the item waits each out inside one attempt
    (one thread create, attempts 1) and its row is a result."""
    from email.utils import formatdate

    FakeLangGraph.mode = {"refusals": ["1", "1", lambda: formatdate(time.time() + 4, usegmt=True)]}
    done, row = eval_fake(tmp_path, fake_server)
    assert done.returncode == 0 and row["status"] == "ok", row
    assert row["attempts"] == 1 and row["prediction"]["label"] == "SUPPORTS"
    creates = [p for m, p, _ in FakeLangGraph.log if m == "POST" and p == "/threads"]
    assert len(creates) == 1, "the wait restarted the item instead of asking again"
    times = wait_requests()
    assert len(times) == 4
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert gaps[0] >= 0.95 and gaps[1] >= 0.95, gaps  # Retry-After: 1
    assert gaps[2] >= 2.9, gaps  # the HTTP-date, 3-4 s ahead when it was sent
    index = json.loads((tmp_path / "out" / "run.json").read_text())["index"]  # a 404: not named
    assert index["status"] == "server" and "no /factdebate/index route" in index["note"]


def test_a_server_that_never_admits_ends_in_one_error_naming_the_limit(fake_server, tmp_path):
    FakeLangGraph.mode = {"busy": True}
    done, row = eval_fake(tmp_path, fake_server, FACTDEBATE_EVAL_ADMISSION_WAIT_S="3")
    assert row["status"] == "error" and row["attempts"] == 1, row
    message = row["error"]["message"]
    assert row["error"]["type"] == "ServerAdmissionError"
    assert "admission wait limit of 3 s (FACTDEBATE_EVAL_ADMISSION_WAIT_S)" in message, message
    assert "alice has 1 runs pending" in message and "op:***@127.0.0.1" in message
    assert "SECRET-pw" not in message and "SECRET-pw" not in done.stderr
    assert 2 <= len(wait_requests()) <= 4  # Retry-After 1 (x1-1.5) within 3 s


@pytest.mark.parametrize("behaviour", [pytest.param("trickle", marks=pytest.mark.slow),
                                       "silent"])  # trickle: ~10 s, the slow tier
def test_a_trickling_or_silent_server_ends_at_the_item_deadline(fake_server, tmp_path, behaviour):
    """A byte a second (no read timeout ever fires) or nothing at all: the item is an error row at
    its deadline naming the server and the limit, not a wait until killed."""
    FakeLangGraph.mode = {"wait": behaviour}
    started = time.monotonic()
    done, row = eval_fake(tmp_path, fake_server, FACTDEBATE_EVAL_ITEM_DEADLINE_S="3")
    assert row["status"] == "error", row
    message = row["error"]["message"]
    assert "within the item deadline of 3 s (FACTDEBATE_EVAL_ITEM_DEADLINE_S)" in message, message
    assert "op:***@127.0.0.1" in message and "SECRET-pw" not in message
    assert time.monotonic() - started < 100
    deadline = time.monotonic() + 10  # the server's handler sees the hang-up and stops
    while not FakeLangGraph.sent and time.monotonic() < deadline:
        time.sleep(0.1)
    assert FakeLangGraph.sent and FakeLangGraph.sent[0] < 200, FakeLangGraph.sent


@pytest.mark.parametrize("behaviour", [pytest.param("endless", marks=pytest.mark.slow),
                                       "declared"])  # endless: ~1 min of streaming, slow tier
def test_a_huge_reply_is_refused_at_the_size_cap_without_reading_it(fake_server, tmp_path,
                                                                    behaviour):
    """A 48 MB reply (chunked, or with a declared Content-Length of 1 GB) and a 1 MB cap: an
    error row naming the cap, and the server could hand over only a fraction of it."""
    FakeLangGraph.mode = {"wait": behaviour}
    done, row = eval_fake(tmp_path, fake_server, FACTDEBATE_EVAL_MAX_REPLY_BYTES=str(2**20))
    assert row["status"] == "error", row
    message = row["error"]["message"]
    assert "reply size cap of 1,048,576 bytes (FACTDEBATE_EVAL_MAX_REPLY_BYTES)" in message, message
    assert "op:***@127.0.0.1" in message and "SECRET-pw" not in message
    deadline = time.monotonic() + 10
    while not FakeLangGraph.sent and time.monotonic() < deadline:
        time.sleep(0.1)
    assert FakeLangGraph.sent and FakeLangGraph.sent[0] < 8 * 2**20, FakeLangGraph.sent


@pytest.mark.parametrize("variable", ["FACTDEBATE_EVAL_ADMISSION_WAIT_S",
                                      "FACTDEBATE_EVAL_ITEM_DEADLINE_S",
                                      "FACTDEBATE_EVAL_MAX_REPLY_BYTES"])
def test_a_bad_limit_is_one_error_line_naming_the_variable(fake_server, tmp_path, variable):
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps({"id": "one-1", "claim": FINAL_STATE["claim"],
                                "label": "SUPPORTS"}) + "\n")
    done = subprocess.run(
        [str(FACTDEBATE), "eval", "--framework", "tool_mad", "--dataset", str(data),
         "--model", "scripted:agree", "--out", str(tmp_path / "out"), "--server", fake_server],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "FACTDEBATE_HOME": str(tmp_path / "home"), variable: "0"})
    assert done.returncode == 2 and f"{variable}='0' is not a valid limit" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out" / "results.jsonl").exists()
