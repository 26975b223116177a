"""Bounded work per client, masked credentials, safe files and safe starts of the LangGraph server
(items 3, 6, 7, 8 and 12).

One real ``langgraph dev`` with three job slots (``--n-jobs-per-worker 3``) and alice and bob as
users, each limited to one pending or running run (``FACTDEBATE_MAX_RUNS_PER_USER=1``). Its
model endpoint and LangSmith endpoint are a loopback stand-in, reached through an operator URL
with credentials in it (``http://fduser:<secret>@127.0.0.1:<port>/v1``); its runs folder holds
files linked to files outside it. The scripted model with ``?latency=`` makes a long run.
Three more starts, each of which must refuse: a server without keys (it starts, but refuses the
Studio header), a world-readable keys file, and a second server on the first one's index.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.loopback import serve_http
from tests.integration.servers import (
    free_port,
    langgraph_dev_command,
    needs_langgraph,
    server_env,
    start_langgraph_dev,
    stop_server,
    tiny_index,
    warm_home,
)

pytestmark = needs_langgraph

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab"}
SECRET = f"pw-{secrets.token_hex(8)}"
SCRIPTED = {"debater_model": "scripted:agree"}
LONG = {"debater_model": "scripted:agree?latency=4"}
CLAIM = {"claim": "Berlin is the capital of Germany."}


class Endpoint(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint and a LangSmith endpoint: every request recorded as
    (path, content type, body)."""

    seen: list[tuple[str, str, bytes]] = []

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def _reply(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        Endpoint.seen.append((self.path, self.headers.get("content-type", ""), b""))
        self._reply({})

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        Endpoint.seen.append((self.path, self.headers.get("content-type", ""), body))
        if self.path.endswith("/chat/completions"):
            self._reply({"id": "c1", "object": "chat.completion", "created": 1,
                         "model": "fake-model", "usage": {"prompt_tokens": 1,
                                                          "completion_tokens": 1,
                                                          "total_tokens": 2},
                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                             "role": "assistant", "content": "SUPPORTS"}}]})
        else:
            self._reply({})


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with serve_http(Endpoint) as host:
        yield host


def runs_folder(work: Path) -> Path:
    """``runs/``: a good run, and runs whose files are links to files outside the root."""
    runs, outside = work / "runs", work / "outside"
    outside.mkdir()
    secret_rows = outside / "results.jsonl"
    secret_rows.write_text(json.dumps({"item_id": "s1", "status": "ok",
                                       "claim": "OUTSIDE-SECRET"}) + "\n")
    (outside / "run.json").write_text(json.dumps({"framework": "OUTSIDE-SECRET"}))
    (outside / "summary.json").write_text(json.dumps(
        {"runs": [{"metrics": {"accuracy": 0.123456}}]}))
    good = runs / "good"
    good.mkdir(parents=True)
    (good / "results.jsonl").write_text(json.dumps({"item_id": "i1", "status": "ok"}) + "\n")
    linked = runs / "linked"  # a real folder whose results.jsonl is a link out
    linked.mkdir()
    (linked / "results.jsonl").symlink_to(secret_rows)
    meta = runs / "meta"  # real rows, but run.json and summary.json link out
    meta.mkdir()
    (meta / "results.jsonl").write_text(json.dumps({"item_id": "i1", "status": "ok"}) + "\n")
    (meta / "run.json").symlink_to(outside / "run.json")
    (meta / "summary.json").symlink_to(outside / "summary.json")
    (meta / "checkpoints.sqlite").symlink_to(outside / "run.json")
    damaged = runs / "damaged"
    damaged.mkdir()
    (damaged / "results.jsonl").write_text("not a row\n")
    return runs


def start(work: Path, env: dict[str, str], *args: str,
          timeout: float = 120.0) -> tuple[subprocess.Popen, str]:
    """``langgraph dev`` with extra flags, which must answer within ``timeout`` seconds."""
    return start_langgraph_dev(work, env, timeout=timeout, args=args)


def refused_start(work: Path, env: dict[str, str]) -> tuple[int, str]:
    """A start that must fail: its exit code and its output."""
    app = work / "app"
    done = subprocess.run(langgraph_dev_command(work, free_port()), cwd=app, env=server_env(env),
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


NO_KEYS = {"FACTDEBATE_API_KEY": "", "FACTDEBATE_API_KEYS": "", "FACTDEBATE_API_KEYS_FILE": "",
           "FACTDEBATE_AUTH": ""}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, endpoint: str) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("limits-server")
    proc, url = start(work, {
        **NO_KEYS, "FACTDEBATE_API_KEYS": ",".join(f"{k}:{v}" for k, v in KEYS.items()),
        "FACTDEBATE_ALLOW_SCRIPTED": "1", "FACTDEBATE_ALLOWED_MODELS": "openai:fake-model",
        "FACTDEBATE_MODEL": "openai:fake-model",  # the default model must be an allowed one
        "FACTDEBATE_BASE_URL": f"http://fduser:{SECRET}@{endpoint}/v1",
        "OPENAI_API_KEY": "sk-fake-0123456789", "FACTDEBATE_MAX_RUNS_PER_USER": "1",
        "FACTDEBATE_MAX_RECURSION_LIMIT": "12",  # cot takes 4 steps, Tool-MAD about 20
        "LANGSMITH_TRACING": "true", "LANGSMITH_ENDPOINT": f"http://{endpoint}",
        "LANGSMITH_API_KEY": "lsv2-fake-0123456789",
        "FACTDEBATE_HOME": str(warm_home(work / "home")),  # MiniLM's graph: no export at start
        "FACTDEBATE_INDEX_DIR": str(tiny_index(work)), "FACTDEBATE_RUNS_DIR": str(
            runs_folder(work)),
    }, "--n-jobs-per-worker", "3")
    try:
        yield {"url": url, "work": work}
    finally:
        stop_server(proc)


def as_user(url: str, user: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"x-api-key": KEYS[user]}, timeout=60)


def settle(client: httpx.Client, thread_ids: list[str]) -> None:
    """Cancel what still runs on ``thread_ids`` and wait until it stopped (the next test starts
    with no runs of that user)."""
    for tid in thread_ids:
        for run in client.get(f"/threads/{tid}/runs").json():
            if run["status"] in ("pending", "running"):
                client.post(f"/threads/{tid}/runs/{run['run_id']}/cancel")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        busy = [r for tid in thread_ids for r in client.get(f"/threads/{tid}/runs").json()
                if r["status"] in ("pending", "running")]
        if not busy:
            return
        time.sleep(0.2)
    pytest.fail(f"runs did not stop: {busy}")


# --- item 3: sizes, recursion limit -----------------------------------------------------------------
def size_attacks() -> list[tuple[str, str, dict[str, Any], str, str]]:
    """(path, what, body, field, cap) of client-set sizes above the server's default caps."""
    text = {"input": {"text": "Berlin is in Germany. Paris is in France."}}
    run = {"input": CLAIM}
    return [
        ("THREAD/runs", "the issue's 200-claim text", {**text, "assistant_id": "check_text",
         "context": {**SCRIPTED, "max_claims": 200}}, "max_claims", "20"),
        ("/runs/wait", "rounds via config.configurable", {**run, "assistant_id": "tool_mad",
         "config": {"configurable": {**SCRIPTED, "max_rounds": 10}}}, "max_rounds", "5"),
        ("THREAD/runs", "five debaters", {**run, "assistant_id": "tool_mad", "context": {
            **SCRIPTED, "debaters": ["rag", "search", "rag2", "search2", "rag3"]}},
         "debaters", "4"),
        ("THREAD/runs", "top_k as text", {**run, "assistant_id": "cot", "context": {
            **SCRIPTED, "top_k": "50"}}, "top_k", "10"),
        ("THREAD/runs", "a float count", {**run, "assistant_id": "self_consistency",
         "context": {**SCRIPTED, "samples": 15.0}}, "samples", "10"),
        ("THREAD/runs", "the verifier's rounds", {**text, "assistant_id": "check_text",
         "context": {**SCRIPTED, "verifier_settings": {"max_rounds": 10}}}, "max_rounds", "5"),
        ("THREAD/runs", "the verifier's top_k as text", {**text, "assistant_id": "check_text",
         "context": {**SCRIPTED, "framework": "cot", "verifier_settings": "top_k=50"}},
         "top_k", "10"),
        ("/assistants", "an assistant's agents", {"graph_id": "multi_agent_debate",
         "context": {"agents": 10}}, "agents", "5"),
        ("/assistants", "an assistant's config.configurable", {"graph_id": "check_text",
         "config": {"configurable": {"max_claims": 21}}}, "max_claims", "20"),
        ("/runs/crons", "a cron's retries", {**run, "assistant_id": "cot", "schedule": "* * * * *",
         "context": {"llm_retries": 10}}, "llm_retries", "3"),
        ("THREAD/runs", "a long tool timeout", {**run, "assistant_id": "tool_mad", "context": {
            **SCRIPTED, "tool_timeout_s": 600}}, "tool_timeout_s", "60"),
        ("THREAD/runs", "the issue's recursion limit", {**run, "assistant_id": "tool_mad",
         "context": SCRIPTED, "config": {"recursion_limit": 10**6}}, "recursion_limit", "12"),
        ("/runs/wait", "a recursion limit in an update command", {
            "assistant_id": "tool_mad", "context": SCRIPTED, "config": {"recursion_limit": 13},
            "command": {"update": {"round": -150}, "goto": "open_round"}}, "recursion_limit",
         "12"),
        ("/assistants", "an assistant's recursion limit", {"graph_id": "cot", "config": {
            "recursion_limit": 10**6}}, "recursion_limit", "12"),
    ]


def test_client_sizes_above_the_operators_caps_are_refused(server: dict[str, Any]):
    """Sizes that multiply the work of one request are capped by the
    operator (``FACTDEBATE_CAP_<FIELD>``, ``FACTDEBATE_MAX_RECURSION_LIMIT``); the refusal names
    the field, the cap and the variable, and nothing is queued."""
    with as_user(server["url"], "bob") as bob:
        thread = bob.post("/threads", json={}).json()["thread_id"]
        for path, what, body, field, cap in size_attacks():
            refused = bob.post(path.replace("THREAD", f"/threads/{thread}"), json=body)
            assert refused.status_code == 403, (what, refused.text)
            detail = refused.json()["detail"]
            assert field in detail and f"cap of {cap}" in detail, (what, detail)
            assert "FACTDEBATE_" in detail, (what, detail)
        assert bob.get(f"/threads/{thread}/runs").json() == []
        assert bob.post("/runs/crons/search", json={}).json() == []
        at_caps = bob.post("/assistants", json={"graph_id": "check_text", "context": {
            "max_claims": 20, "verifier_settings": {"max_rounds": 5, "top_k": 10}}})
        assert at_caps.status_code == 200, at_caps.text
        assert bob.post("/assistants", json={"graph_id": "cot", "context": {
            "top_k": "ten"}}).status_code == 422  # not a number: what the run would fail on


def test_a_run_gets_the_recursion_cap_when_it_sets_none(server: dict[str, Any]):
    """Without ``recursion_limit`` a run had LangGraph's 10,007 steps; it now gets the cap (12
    here): a 4-step cot run finishes, a 20-step Tool-MAD run stops at the cap."""
    with as_user(server["url"], "alice") as alice:
        short = alice.post("/runs/wait", json={"assistant_id": "cot", "input": CLAIM,
                                               "context": SCRIPTED})
        assert short.status_code == 200 and short.json()["label"] == "SUPPORTS", short.text
        long = alice.post("/runs/wait", json={"assistant_id": "tool_mad", "input": CLAIM,
                                              "context": {"debater_model": "scripted:disagree",
                                                          "scoring_mode": "none",
                                                          "max_rounds": 5}})
        assert long.status_code == 200, long.text
        assert "recursion" in json.dumps(long.json()).lower(), long.text[:500]


# --- item 3: concurrent runs per user, job slots ------------------------------------------------
def test_one_user_cannot_starve_another(server: dict[str, Any]):
    """With three job slots and one run per user, alice's long run holds one slot; her further
    runs (another thread, a stateless run, a run queued on the same thread) are refused with 429
    naming the limit, so bob's short run starts at once instead of waiting behind them."""
    url = server["url"]
    with as_user(url, "alice") as alice, as_user(url, "bob") as bob:
        threads = [alice.post("/threads", json={}).json()["thread_id"] for _ in range(2)]
        first = alice.post(f"/threads/{threads[0]}/runs", json={
            "assistant_id": "cot", "input": CLAIM, "context": LONG})
        assert first.status_code == 200, first.text
        for path, body in (
            (f"/threads/{threads[1]}/runs", {"assistant_id": "cot", "input": CLAIM,
                                             "context": LONG}),
            ("/runs", {"assistant_id": "cot", "input": CLAIM, "context": LONG}),
            (f"/threads/{threads[0]}/runs", {"assistant_id": "cot", "input": CLAIM,
                                             "context": LONG, "multitask_strategy": "enqueue"}),
        ):
            refused = alice.post(path, json=body)
            assert refused.status_code == 429, (path, refused.text)
            assert "FACTDEBATE_MAX_RUNS_PER_USER=1" in refused.json()["detail"]
        started = time.monotonic()
        quick = bob.post("/runs/wait", json={"assistant_id": "cot", "input": CLAIM,
                                             "context": SCRIPTED})
        waited = time.monotonic() - started
        assert quick.status_code == 200 and quick.json()["label"] == "SUPPORTS", quick.text
        assert waited < 3.5, waited  # alice's run takes 4 s or more: bob did not wait for it
        status = alice.get(f"/threads/{threads[0]}/runs/{first.json()['run_id']}").json()
        assert status["status"] in ("pending", "running"), status
        settle(alice, threads)


async def test_a_burst_of_runs_admits_exactly_the_limit(server: dict[str, Any]):
    """Eight run requests of one user at the same moment (the counting happens before the
    server stores a run): exactly one is admitted; no other user waits for it."""
    url = server["url"]
    with as_user(url, "bob") as bob:
        threads = [bob.post("/threads", json={}).json()["thread_id"] for _ in range(8)]
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEYS["bob"]},
                                 timeout=60) as client:
        answers = await asyncio.gather(*(client.post(f"/threads/{t}/runs", json={
            "assistant_id": "cot", "input": CLAIM, "context": LONG}) for t in threads))
    codes = sorted(a.status_code for a in answers)
    assert codes == [200] + [429] * 7, [a.text for a in answers]
    with as_user(url, "bob") as bob:
        settle(bob, threads)


def test_back_to_back_runs_of_one_user_are_not_refused(server: dict[str, Any]):
    """The limit counts runs that are pending or running, not recent ones."""
    with as_user(server["url"], "alice") as alice:
        tid = alice.post("/threads", json={}).json()["thread_id"]
        for path in (f"/threads/{tid}/runs/wait", "/runs/wait", f"/threads/{tid}/runs/wait",
                     "/runs/wait"):
            done = alice.post(path, json={"assistant_id": "cot", "input": CLAIM,
                                          "context": SCRIPTED})
            assert done.status_code == 200 and done.json()["label"] == "SUPPORTS", done.text


# --- item 6: credentials in operator URLs -----------------------------------------------------------
def multipart_parts(body: bytes, content_type: str) -> list[tuple[str, bytes]]:
    """(name, content) of a multipart/form-data body (LangSmith's run uploads)."""
    boundary = content_type.split("boundary=", 1)[1].split(";")[0].strip().encode()
    parts = []
    for chunk in body.split(b"--" + boundary)[1:-1]:
        head, _, content = chunk.partition(b"\r\n\r\n")
        name = head.split(b'name="', 1)[1].split(b'"', 1)[0].decode() if b'name="' in head else ""
        parts.append((name, content))
    return parts


def test_credentials_in_operator_urls_are_masked(server: dict[str, Any], endpoint: str):
    """The operator's ``FACTDEBATE_BASE_URL`` holds a password. The server
    log's HTTP request lines show it masked (``fduser:***@``); the traces, with the metadata the
    server adds (model specs per run), hold none of it."""
    Endpoint.seen.clear()
    with as_user(server["url"], "alice") as alice:
        done = alice.post("/runs/wait", json={"assistant_id": "cot", "input": CLAIM,
                                              "context": {"debater_model": "openai:fake-model"}})
    assert done.status_code == 200, done.text
    assert any(path.endswith("/chat/completions") for path, _, _ in Endpoint.seen)
    deadline = time.monotonic() + 15  # traces are sent in the background
    uploads: list[tuple[str, bytes]] = []
    while time.monotonic() < deadline:
        uploads = [part for path, content_type, body in list(Endpoint.seen)
                   if path.startswith("/runs/multipart")
                   for part in multipart_parts(body, content_type)]
        if any(b"model_debater" in content for name, content in uploads):
            break
        time.sleep(0.5)
    metadata = [content for name, content in uploads if name.endswith(".extra")]
    assert any(b'"model_debater":"openai:fake-model"' in c.replace(b" ", b"") for c in metadata)
    assert not [name for name, content in uploads if SECRET.encode() in content]
    log = (server["work"] / "server.log").read_text(errors="replace")
    assert "fduser:***@" in log  # the request line is there, masked
    assert SECRET not in log
    assert " http://api/" not in log  # the server's in-process calls are not logged


# --- item 7: the evaluation browser ---------------------------------------------------------------
def test_evaluation_files_linked_outside_the_runs_root_are_not_served(server: dict[str, Any]):
    """Only folders were checked; a ``results.jsonl`` (or ``run.json``,
    ``summary.json``, ``checkpoints.sqlite``) linked to a file outside the root was served.
    Messages name files relative to the root, never by the server's absolute path."""
    url, work = server["url"], server["work"]
    headers = {"x-api-key": KEYS["bob"]}
    listed = httpx.get(f"{url}/app/api/evals", headers=headers, timeout=10).json()
    names = {r["run"]: r for r in listed["runs"]}
    assert "linked" not in names and {"good", "meta"} <= set(names), names
    assert names["meta"]["framework"] == "" and names["meta"]["metrics"] is None
    linked = httpx.get(f"{url}/app/api/evals/results", params={"run": "linked"},
                       headers=headers, timeout=10)
    assert linked.status_code == 404 and "OUTSIDE-SECRET" not in linked.text, linked.text
    meta = httpx.get(f"{url}/app/api/evals/results", params={"run": "meta"}, headers=headers,
                     timeout=10)
    assert meta.status_code == 200 and "OUTSIDE-SECRET" not in meta.text, meta.text
    assert meta.json()["record"] == {} and meta.json()["transcripts"] is False
    transcript = httpx.get(f"{url}/app/api/evals/transcript", params={"run": "meta",
                                                                      "item": "i1"},
                           headers=headers, timeout=10)
    assert transcript.status_code == 404, transcript.text
    damaged = httpx.get(f"{url}/app/api/evals/results", params={"run": "damaged"},
                        headers=headers, timeout=10)
    assert damaged.status_code == 422, damaged.text
    detail = damaged.json()["detail"]
    assert "damaged/results.jsonl" in detail and str(work) not in detail, detail


# --- items 8 and 12: starts -----------------------------------------------------------------------
def test_a_server_without_keys_refuses_the_studio_header_too(tmp_path: Path):
    """Without keys every request is refused (401), including Studio's
    ``x-auth-scheme: langsmith`` bypass, which ``langgraph dev`` lets past ``authenticate``."""
    proc, url = start(tmp_path, {**NO_KEYS, "FACTDEBATE_HOME": str(warm_home(tmp_path / "home")),
                                 "FACTDEBATE_ALLOW_SCRIPTED": "1",
                                 "FACTDEBATE_INDEX_DIR": str(tiny_index(tmp_path))})
    try:
        for headers in ({}, {"x-auth-scheme": "langsmith"}, {"X-Auth-Scheme": "LangSmith"}):
            for method, path, body in (("POST", "/threads/search", {}), ("POST", "/threads", {}),
                                       ("POST", "/runs/wait", {"assistant_id": "cot",
                                                               "input": CLAIM}),
                                       ("POST", "/assistants/search", {}),
                                       ("GET", "/app/api/options", None)):
                answer = httpx.request(method, f"{url}{path}", json=body, headers=headers,
                                       timeout=30)
                assert answer.status_code == 401, (headers, path, answer.text)
                assert "no API keys configured" in answer.text, answer.text
        assert httpx.get(f"{url}/ok", timeout=10).status_code == 200
    finally:
        stop_server(proc)


def test_a_world_readable_keys_file_stops_the_start_with_one_line(tmp_path: Path):
    keys = tmp_path / "keys.txt"
    keys.write_text(f"alice:{KEYS['alice']}\n")
    keys.chmod(0o644)
    (tmp_path / "home").mkdir()
    code, output = refused_start(tmp_path, {**NO_KEYS, "FACTDEBATE_API_KEYS_FILE": str(keys),
                                            "FACTDEBATE_HOME": str(tmp_path / "home")})
    assert code == 2, output[-2000:]
    assert "Traceback" not in output, output[-3000:]
    line = next(x for x in output.splitlines() if "cannot start" in x)
    assert line == (f"factdebate: the server cannot start: FACTDEBATE_API_KEYS_FILE {keys} is "
                    f"readable or writable by every user of this machine. run: chmod 600 {keys}")


def test_a_second_server_on_an_index_another_server_holds_is_refused_at_start(
        server: dict[str, Any], tmp_path: Path):
    """The second server stopped at its first run; now at its start."""
    started = time.monotonic()
    code, output = refused_start(tmp_path, {
        **NO_KEYS, "FACTDEBATE_API_KEYS": f"alice:{KEYS['alice']}",
        "FACTDEBATE_HOME": str(warm_home(tmp_path / "home")),
        "FACTDEBATE_INDEX_DIR": str(server["work"] / "index")})
    assert code != 0 and time.monotonic() - started < 60, output[-2000:]
    assert "Traceback" not in output, output[-3000:]
    line = next(x for x in output.splitlines() if "cannot start" in x)
    assert "in use" in line and str(server["work"] / "index") in line, line
