"""Secrets: fake API keys never reach traces, logs, results, reports or checkpoints.

Real components on loopback: an OpenAI-compatible chat server (so a real ``ChatOpenAI`` client
holds ``OPENAI_API_KEY``), a Tavily stand-in (the real ``tavily-python`` client holds
``TAVILY_API_KEY``), and a LangSmith capture endpoint receiving the traces
(``LANGSMITH_TRACING=true``). ``factdebate verify`` and ``factdebate eval`` run in subprocesses
with random keys; then every captured trace body, stdout/stderr, and every file the runs wrote
(results, summary, report, run record, SQLite checkpoints and memory, logs) is searched for them.
The model and search servers are the keys' intended recipients: only there may a key appear, and
only in the ``Authorization`` header.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from factdebate.tools.base import clear_retriever_cache
from tests.integration.langsmith_capture import LangSmithState, langsmith_capture, posted_runs
from tests.integration.loopback import serve_http, stand_in
from tests.integration.servers import REPO, index_of, serving, tiny_index, warm_home

FACTDEBATE = Path(sys.executable).parent / "factdebate"
KEYS = {name: f"{prefix}{secrets.token_hex(20)}" for name, prefix in (
    ("OPENAI_API_KEY", "sk-test-"), ("TAVILY_API_KEY", "tvly-test-"),
    ("LANGSMITH_API_KEY", "lsv2_pt_"), ("FACTDEBATE_API_KEY", "fd-"))}
CLAIM = "The Eiffel Tower is in Paris."


def fill(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """A value valid for a JSON schema: first enum member, first non-null option, empty list."""
    if "$ref" in schema:
        return fill(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in schema:
        return schema["enum"][0]
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return fill(next((o for o in options if o.get("type") != "null"), options[0]), defs)
    kind = schema.get("type")
    if kind == "object":
        return {k: fill(v, defs) for k, v in schema.get("properties", {}).items()}
    return {"array": [], "string": "The Eiffel Tower is in Paris.", "integer": 1, "number": 1.0,
            "boolean": False}.get(kind, "")


class Servers(BaseHTTPRequestHandler):
    """``/v1/chat/completions`` (OpenAI-compatible), ``/search`` (Tavily), and LangSmith's
    ``/info``, ``/runs/*`` - every request recorded as (path, headers, body)."""

    captured: list[tuple[str, dict[str, str], bytes]] = []

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def _reply(self, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        Servers.captured.append((self.path, dict(self.headers), b""))
        self._reply({"version": "capture"} if self.path.startswith("/info") else [])

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Servers.captured.append((self.path, dict(self.headers), body))
        if self.path.endswith("/chat/completions"):
            self._reply(self._completion(json.loads(body)))
        elif self.path == "/search":
            self._reply({"query": "q", "results": [{
                "title": "Eiffel Tower", "url": "https://example.org/eiffel", "score": 0.9,
                "content": "The Eiffel Tower is a wrought-iron lattice tower in Paris."}]})
        else:
            self._reply({})

    @staticmethod
    def _completion(request: dict[str, Any]) -> dict[str, Any]:
        fmt = (request.get("response_format") or {}).get("json_schema") or {}
        schema = fmt.get("schema") or {}
        content = json.dumps(fill(schema, schema.get("$defs", {}))) if schema else "SUPPORTS"
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                "model": request.get("model", "m"), "choices": [{
                    "index": 0, "finish_reason": "stop", "logprobs": None,
                    "message": {"role": "assistant", "content": content, "refusal": None}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


server = stand_in(Servers)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = index_of(tmp_path_factory.mktemp("secrets-index"), [
        {"doc_id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a tower in Paris."}])
    clear_retriever_cache()
    return index


def run_cli(args: list[str], server: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **KEYS, "FACTDEBATE_HOME": str(home), "TAVILY_BASE_URL": server,
           "LANGSMITH_TRACING": "true", "LANGSMITH_ENDPOINT": server,
           "LANGSMITH_PROJECT": "secrets-test", "LOG_LEVEL": "DEBUG"}
    done = subprocess.run([str(FACTDEBATE), *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def leaks(data: bytes, keys: dict[str, str]) -> list[str]:
    """Names of the keys whose value (or its first 16 characters) occurs in ``data``."""
    return [name for name, value in keys.items()
            if value.encode() in data or value[:16].encode() in data]


def assert_nothing_leaked(done: subprocess.CompletedProcess, folders: list[Path]) -> int:
    """Grep outputs, written files and captured requests; returns how many trace posts there were."""
    assert leaks((done.stdout + done.stderr).encode(), KEYS) == []
    files = [p for folder in folders for p in folder.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert leaks(path.read_bytes(), KEYS) == [], path
    traces = 0
    for path, headers, body in Servers.captured:
        recipient = path.endswith("/chat/completions") or path == "/search"
        assert leaks(body, KEYS) == [], path
        allowed = {"OPENAI_API_KEY", "TAVILY_API_KEY"} if recipient else {"LANGSMITH_API_KEY"}
        header_text = json.dumps(headers).encode()
        assert set(leaks(header_text, KEYS)) <= allowed, (path, leaks(header_text, KEYS))
        traces += path.startswith("/runs")
    return traces


def test_verify_with_tracing_leaks_no_key(server, index_dir, tmp_path):
    Servers.captured.clear()
    home = tmp_path / "home"
    done = run_cli(["verify", CLAIM, "--model", "openai:gpt-4o-mini", "--base-url",
                    f"{server}/v1", "--search-backend", "tavily", "--rag-backend", "keyword",
                    "--index-dir", str(index_dir), "--scoring", "none", "--rounds", "1",
                    "--json"], server, home)
    out = json.loads(done.stdout)
    assert out["label"] == "SUPPORTS" and out["ledger"]["tool_calls"] == {"keyword": 1, "tavily": 1}
    assert (home / "checkpoints.sqlite").stat().st_size > 0
    paths = [p for p, _, _ in Servers.captured]
    assert any(p.endswith("/chat/completions") for p in paths) and "/search" in paths
    # the model server saw the OpenAI key and Tavily its own: the keys were really in use
    assert any(KEYS["OPENAI_API_KEY"] in json.dumps(h) for p, h, _ in Servers.captured
               if p.endswith("/chat/completions"))
    traces = assert_nothing_leaked(done, [home])
    assert traces > 0, "no trace reached the capture endpoint: the test would prove nothing"
    posted = b"".join(b for p, _, b in Servers.captured if p.startswith("/runs"))
    assert b"fd_context" in posted and b"tool_mad" in posted  # run metadata was traced


def test_eval_with_tracing_leaks_no_key(server, tmp_path):
    Servers.captured.clear()
    dataset = tmp_path / "items.jsonl"
    dataset.write_text("\n".join(json.dumps({"id": f"c{i}", "claim": CLAIM, "label": "SUPPORTS"})
                                 for i in range(3)) + "\n")
    out, home = tmp_path / "out", tmp_path / "home"
    done = run_cli(["eval", "--framework", "cot", "--dataset", str(dataset), "--model",
                    "openai:gpt-4o-mini", "--set", f"model_base_url={server}/v1", "--out",
                    str(out), "--concurrency", "2"], server, home)
    rows = [json.loads(r) for r in (out / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["ok"] * 3
    assert {"summary.json", "report.md", "run.json", "checkpoints.sqlite"} <= {
        p.name for p in out.iterdir()}
    assert assert_nothing_leaked(done, [out, home]) > 0


OPERATOR_SECRET = f"opPw{secrets.token_hex(8)}"


def test_credentials_in_the_operator_base_url_stay_out_of_traces(server, index_dir, tmp_path):
    Servers.captured.clear()
    home = tmp_path / "home"
    base = server.replace("http://", f"http://op:{OPERATOR_SECRET}@") + "/v1"
    done = run_cli(["verify", CLAIM, "--model", "openai:gpt-4o-mini", "--base-url", base,
                    "--rag-backend", "keyword", "--index-dir", str(index_dir), "--scoring",
                    "none", "--rounds", "1", "--json"], server, home)
    posted = [b for p, _, b in Servers.captured if p.startswith("/runs")]
    assert posted, "no trace reached the capture endpoint: the test would prove nothing"
    assert OPERATOR_SECRET.encode() not in done.stdout.encode() + done.stderr.encode()
    for path in (p for p in home.rglob("*") if p.is_file()):
        assert OPERATOR_SECRET.encode() not in path.read_bytes(), path
    leaks = [b for b in posted if OPERATOR_SECRET.encode() in b]
    assert not leaks, [b[max(0, b.find(OPERATOR_SECRET.encode()) - 300):
                         b.find(OPERATOR_SECRET.encode()) + 50] for b in leaks][:2]


# --- a provider that repeats the request's credentials in its error ---------
OP_KEY = f"sk-op-{secrets.token_hex(16)}"
OP_PASSWORD = f"Pw{secrets.token_hex(6)}+="  # URL-special characters (encoded: %2B, %3D)
SERVER_KEYS = {"alice": f"alice-{secrets.token_hex(10)}", "bob": f"bob-{secrets.token_hex(10)}"}


def secret_forms() -> dict[str, bytes]:
    """Every way the operator's secrets could show: plain, base64 (``Basic``), URL-encoded."""
    from urllib.parse import quote

    basic = base64.b64encode(f"op:{OP_PASSWORD}".encode())
    forms = {"key": OP_KEY.encode(), "password": OP_PASSWORD.encode(),
             "password (url-encoded)": quote(OP_PASSWORD, safe="").encode(),
             "basic": basic, "basic (its password part)": basic[4:-4],
             "key (base64)": base64.b64encode(OP_KEY.encode())[:-4]}
    forms.update({f"server key {u}": k.encode() for u, k in SERVER_KEYS.items()})
    return forms


def found_secrets(data: bytes) -> list[str]:
    return [name for name, form in secret_forms().items() if form in data]


class Repeater(BaseHTTPRequestHandler):
    """A model server whose 401 repeats the request's headers (``Authorization`` included), as
    error texts of some providers and proxies do; each reply is recorded. With ``in_a_reply``
    the same error comes in an HTTP 200 completion (as some OpenAI-compatible servers send
    them), which ``langchain_openai`` raises as a plain ``ValueError`` of the error's text."""

    replies: list[bytes] = []
    in_a_reply = False

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        said = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
        basic = base64.b64encode(f"op:{OP_PASSWORD}".encode()).decode()
        error = {"message": f"invalid credentials in request ({said}); also tried Basic {basic} "
                            f"and ?api_key={OP_KEY}", "type": "invalid_request_error",
                 "code": "invalid_api_key"}
        reply = {**Servers._completion(request), "error": error} if Repeater.in_a_reply else {
            "error": error}
        body = json.dumps(reply).encode()
        Repeater.replies.append(body)
        self.send_response(200 if Repeater.in_a_reply else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def repeater() -> Iterator[str]:
    """``http://op:PASSWORD@127.0.0.1:PORT/v1`` of a :class:`Repeater`."""
    with serve_http(Repeater) as host:
        yield f"http://op:{OP_PASSWORD}@{host}/v1"


@pytest.fixture(scope="module")
def langsmith() -> Iterator[tuple[str, LangSmithState]]:
    """A LangSmith stand-in on loopback recording every trace post."""
    with langsmith_capture() as (endpoint, state):
        yield endpoint, state


def operator_env(base_url: str, langsmith_endpoint: str | None = None) -> dict[str, str]:
    tracing = {"LANGSMITH_TRACING": "true", "LANGSMITH_ENDPOINT": langsmith_endpoint,
               "LANGSMITH_API_KEY": KEYS["LANGSMITH_API_KEY"],
               "LANGSMITH_PROJECT": "operator"} if langsmith_endpoint else {
        "LANGSMITH_TRACING": "false"}
    return {"OPENAI_API_KEY": OP_KEY, "FACTDEBATE_BASE_URL": base_url,
            "FACTDEBATE_MODEL": "openai:gpt-4o-mini", **tracing}


def traced(state: LangSmithState) -> tuple[bytes, dict[str, dict[str, Any]]]:
    """Every byte posted to the LangSmith stand-in, and the runs read back from it."""
    with state.lock:
        captured = list(state.captured)
    return b"".join(body for _, _, body in captured), posted_runs(captured)


def traced_error(state: LangSmithState, text: str) -> tuple[bytes, dict[str, dict[str, Any]]]:
    """:func:`traced` once a run whose error holds ``text`` has arrived (a server posts its
    traces in the background); fails after 60 s without one."""
    deadline = time.monotonic() + 60
    while True:
        posted, runs = traced(state)
        if any(text in (run.get("error") or "") for run in runs.values()):
            return posted, runs
        assert time.monotonic() < deadline, f"no traced run with error {text!r}"
        time.sleep(0.5)


@pytest.mark.parametrize("in_a_reply", [False, True], ids=["401", "error-in-a-200-reply"])
def test_cli_error_of_a_repeating_provider_holds_no_secret(repeater, tmp_path, in_a_reply):
    """The error line, and every log line on stderr (the retry policy logs each retried fault,
    here a plain ValueError of the OpenAI client with the repeated headers), hold no secret."""
    Repeater.replies.clear()
    Repeater.in_a_reply = in_a_reply
    env = {**os.environ, **operator_env(repeater), "FACTDEBATE_HOME": str(tmp_path / "home")}
    try:
        done = subprocess.run([str(FACTDEBATE), "verify", CLAIM, "--framework", "cot",
                               "--model", "openai:gpt-4o-mini"], capture_output=True, env=env,
                              cwd=REPO, timeout=240)
    finally:
        Repeater.in_a_reply = False
    assert Repeater.replies and OP_KEY.encode() in Repeater.replies[0]  # the provider said it
    assert done.returncode in (2, 3, 4), done.stderr[-2000:]  # one error line, no traceback
    assert b"Traceback" not in done.stderr, done.stderr[-2000:]
    if not in_a_reply:
        assert b"HTTP 401" in done.stderr, done.stderr[-2000:]
    assert found_secrets(done.stdout + done.stderr) == [], done.stderr[-2000:]


@contextmanager
def operator_server_on(work: Path, base_url: str,
                       langsmith_endpoint: str | None = None) -> Iterator[tuple[str, Path]]:
    """A LangGraph server with the operator's model at ``base_url`` (:func:`operator_env`), the
    users of :data:`SERVER_KEYS` and debug logging: its URL and its log."""
    with serving(work, {
        **operator_env(base_url, langsmith_endpoint),
        "FACTDEBATE_HOME": str(warm_home(work / "home")),
        "FACTDEBATE_API_KEYS": ",".join(f"{u}:{k}" for u, k in SERVER_KEYS.items()),
        "FACTDEBATE_INDEX_DIR": str(tiny_index(work)), "LOG_LEVEL": "DEBUG"}) as url:
        yield url, work / "server.log"


@pytest.fixture(scope="module")
def operator_server(repeater, langsmith, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    with operator_server_on(tmp_path_factory.mktemp("secret-server"), repeater,
                            langsmith[0]) as served:
        yield served


async def test_server_run_error_and_log_of_a_repeating_provider_hold_no_secret(
        operator_server):
    from langgraph_sdk import get_client

    url, log = operator_server
    Repeater.replies.clear()
    bob = get_client(url=url, api_key=SERVER_KEYS["bob"])
    thread = await bob.threads.create()
    result = await bob.runs.wait(thread["thread_id"], "cot", input={"claim": CLAIM},
                                 raise_error=False)
    streamed = [part async for part in bob.runs.stream(None, "cot", input={"claim": CLAIM})]
    state = await bob.threads.get_state(thread["thread_id"])
    assert Repeater.replies and OP_KEY.encode() in Repeater.replies[0]
    error = result["__error__"]
    assert "HTTP 401" in error["message"], error  # the provider's error reached bob, readably
    replies = json.dumps([result, [p.data for p in streamed], state], default=str).encode()
    assert found_secrets(replies) == [], error
    assert b"HTTP 401" in log.read_bytes()  # the log holds the failed runs ...
    assert found_secrets(log.read_bytes()) == []  # ... and none of the secrets


def test_traces_of_a_repeating_provider_hold_no_secret(repeater, langsmith, tmp_path):
    """The model call's traced run records the provider's exception before any project error is
    made: every run posted to LangSmith (inputs, outputs, error, extra, events) is redacted."""
    endpoint, state = langsmith
    state.captured.clear()
    Repeater.replies.clear()
    env = {**os.environ, **operator_env(repeater, endpoint),
           "FACTDEBATE_HOME": str(tmp_path / "home")}
    done = subprocess.run([str(FACTDEBATE), "verify", CLAIM, "--framework", "cot", "--model",
                           "openai:gpt-4o-mini"], capture_output=True, env=env, cwd=REPO,
                          timeout=240)
    assert done.returncode in (2, 3), done.stderr[-2000:]
    assert Repeater.replies and OP_KEY.encode() in Repeater.replies[0]
    posted, runs = traced(state)
    errors = [run["error"] for run in runs.values() if run.get("error")]
    assert any("401" in e and "invalid credentials" in e for e in errors), errors  # traced
    assert found_secrets(posted) == [], found_secrets(posted)
    assert found_secrets(json.dumps(runs).encode()) == []


async def test_foreign_error_of_a_server_run_holds_no_secret(operator_server, langsmith):
    """A library's own exception (langchain_openai's ``ValueError`` of an error in a 200 reply)
    is not a FactDebateError: its text is redacted where the node raised it, so the run's error,
    the checkpointed task error, the streamed error, the server log and the traces hold none."""
    from langgraph_sdk import get_client

    url, log = operator_server
    endpoint, state = langsmith
    Repeater.replies.clear()
    Repeater.in_a_reply = True
    try:
        bob = get_client(url=url, api_key=SERVER_KEYS["bob"])
        thread = await bob.threads.create()
        result = await bob.runs.wait(thread["thread_id"], "cot", input={"claim": CLAIM},
                                     raise_error=False)
        streamed = [p async for p in bob.runs.stream(None, "cot", input={"claim": CLAIM})]
        history = await bob.threads.get_history(thread["thread_id"])
    finally:
        Repeater.in_a_reply = False
    assert Repeater.replies and OP_KEY.encode() in Repeater.replies[0]
    error = result["__error__"]
    assert error["error"] == "ValueError" and "invalid credentials" in error["message"], error
    tasks = [t for snapshot in history for t in snapshot["tasks"] if t.get("error")]
    assert tasks, history  # the failed node's error is checkpointed
    replies = json.dumps([result, [p.data for p in streamed], history], default=str).encode()
    assert found_secrets(replies) == [], error
    assert b"invalid credentials" in log.read_bytes()
    assert found_secrets(log.read_bytes()) == []
    posted, runs = traced_error(state, "invalid credentials")
    assert found_secrets(posted) == []


# --- a model reply that holds the operator's key: the server's edge filter (server/egress.py) ---
def key_forms() -> dict[str, str]:
    """The operator's key as a model reply may carry it."""
    data = OP_KEY.encode()
    return {"plain": OP_KEY, "base64": base64.b64encode(data).decode(),
            "url-safe base64": base64.urlsafe_b64encode(b"\xfb" + data).decode(),
            "hex": data.hex(), "zero-width split": "\u200b".join(OP_KEY)}


def key_found(data: bytes) -> list[str]:
    """Which forms of the operator's key (or of the other secrets) ``data`` shows, invisible
    characters and their escapes removed first."""
    from factdebate.core.secrets_filter import INVISIBLE

    visible = INVISIBLE.sub("", data.decode("utf-8", "replace")).encode()
    raw = OP_KEY.encode()
    shown = {"key": raw, "key (its first 16)": raw[:16], "base64": base64.b64encode(raw)[:-4],
             "url-safe base64": base64.urlsafe_b64encode(b"\xfb" + raw)[4:-4],
             "hex": raw.hex().encode(), "hex (its tail)": raw.hex().encode()[-24:]}
    return [n for n, f in shown.items() if f in visible] + found_secrets(visible)


class Leaker(BaseHTTPRequestHandler):
    """A model server whose 200 reply holds the operator's key: ``mode`` "text" answers a body
    that is no JSON (a proxy's page), any :func:`key_forms` name a JSON completion whose every
    string holds the key in that form, ``"<form> (no JSON)"`` a completion whose text is the key
    alone where a JSON verdict is asked for (the verdict's validation error quotes it) - streamed
    in 4-character deltas when the client asks for a stream, so the key is split over many stream
    events."""

    mode = "plain"
    replies: list[bytes] = []
    said: list[str] = []

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if Leaker.mode == "text":
            self._send("application/json", f"upstream proxy: forwarded with {OP_KEY}\n".encode())
            return
        hidden = key_forms()[Leaker.mode.removesuffix(" (no JSON)")]
        completion = Servers._completion(request)
        content = completion["choices"][0]["message"]["content"]
        said = json.dumps(_with_key(json.loads(content), hidden), ensure_ascii=False) if (
            content.startswith(
            "{") and not Leaker.mode.endswith("(no JSON)")) else f"{hidden}"
        Leaker.said.append(said)
        if not request.get("stream"):
            completion["choices"][0]["message"]["content"] = said
            self._send("application/json", json.dumps(completion).encode())
            return
        chunks = [said[i:i + 4] for i in range(0, len(said), 4)]
        events = [{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                   "model": request.get("model", "m"), "choices": [{
                       "index": 0, "delta": {"role": "assistant", "content": c},
                       "finish_reason": None}]} for c in chunks]
        events.append({**events[-1], "choices": [{"index": 0, "delta": {},
                                                  "finish_reason": "stop"}]})
        self._send("text/event-stream", b"".join(
            f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n")

    def _send(self, kind: str, body: bytes) -> None:
        Leaker.replies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _with_key(value: Any, hidden: str) -> Any:
    if isinstance(value, str) and value not in ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO"):
        return f"{value} (read {hidden} in the reply)"
    if isinstance(value, dict):
        return {k: _with_key(v, hidden) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_key(v, hidden) for v in value] or [f"read {hidden}"]
    return value


@pytest.fixture(scope="module")
def leaking_server(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """A LangGraph server whose model server is a :class:`Leaker` (operator key in its env)."""
    with serve_http(Leaker) as host, operator_server_on(
            tmp_path_factory.mktemp("leaking-server"), f"http://op:{OP_PASSWORD}@{host}/v1") as served:
        yield served


STREAM_MODES = ["values", "updates", "messages", "messages-tuple", "events", "debug", "custom",
                "tasks", "checkpoints"]


def joined_model_text(raw: str) -> dict[str, str]:
    """The text a client joins from a stream's model chunks, per message (messages-tuple and
    events mode)."""
    joined: dict[str, str] = {}
    for block in raw.replace("\r\n", "\n").split("\n\n"):
        lines = dict(ln.split(": ", 1) for ln in block.split("\n") if ": " in ln)
        name, data = lines.get("event", ""), lines.get("data")
        if data is None:
            continue
        value = json.loads(data)
        if name.split("|")[0] == "messages" and isinstance(value, list):
            chunk = value[0]
        elif name == "events" and value.get("event") == "on_chat_model_stream":
            chunk = value["data"]["chunk"]
        else:
            continue
        if isinstance(chunk.get("content"), str):
            key = f"{name}:{chunk.get('id')}"
            joined[key] = joined.get(key, "") + chunk["content"]
    return joined


DEFAULT_TIER = ("plain (no JSON)", "hex", "zero-width split")
"""The leaking replies the default test run checks (~30 s with the server's start); the slow tier
checks the other forms too."""


@pytest.mark.parametrize("mode", [
    m if m in DEFAULT_TIER else pytest.param(m, marks=pytest.mark.slow)
    for m in ["text", "plain (no JSON)", "base64 (no JSON)", *key_forms()]])
async def test_a_reply_that_holds_the_key_reaches_no_client_and_no_log_line(leaking_server,
                                                                           mode):
    """A model server answering 200 with the operator's key - a body that is no JSON, or a JSON
    completion holding it plain, base64, URL-safe base64, hex or split by zero-width spaces, and
    streamed in pieces: runs/wait's reply, every stream mode's events (the model text a client
    joins from many events too), the thread state and history, the run error, the web page and
    the server log hold none of its forms."""
    import httpx
    from langgraph_sdk import get_client

    url, log = leaking_server
    Leaker.replies.clear()
    Leaker.said.clear()
    Leaker.mode = mode
    bob = get_client(url=url, api_key=SERVER_KEYS["bob"])
    headers = {"x-api-key": SERVER_KEYS["bob"]}
    thread = await bob.threads.create()
    result = await bob.runs.wait(thread["thread_id"], "cot", input={"claim": CLAIM},
                                 raise_error=False)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http:
        streams = [await http.post(f"/threads/{thread['thread_id']}/runs/stream", json={
            "assistant_id": "cot", "input": {"claim": CLAIM}, "stream_mode": modes})
            for modes in (STREAM_MODES, ["messages"])]  # with messages-tuple: no partials
        state = await http.get(f"/threads/{thread['thread_id']}/state")
        history = await http.post(f"/threads/{thread['thread_id']}/history", json={"limit": 20})
        page = [await http.get(p) for p in ("/app/", "/app/api/options", "/factdebate/index")]
    said = "".join(Leaker.said)
    assert mode == "text" or key_forms()[mode.removesuffix(" (no JSON)")] in said, said[:3000]
    assert all(r.status_code == 200 for r in [*streams, state]), streams[0].text[:500]
    if mode == "text":
        assert "__error__" in result, result  # the run failed on the reply
    elif mode.endswith("(no JSON)"):  # the verdict's validation error quotes the reply, masked
        assert "validation error" in result["__error__"]["message"], result
        assert "***" in result["__error__"]["message"], result
    else:
        assert "***" in json.dumps(state.json()), state.text[:2000]  # the key was in the state
    modes = {ln.split(": ", 1)[1].split("|")[0] for r in streams for ln in r.text.splitlines()
             if ln.startswith("event: ")}
    if mode in key_forms():
        assert {"values", "updates", "events", "debug", "tasks", "checkpoints",
                "custom"} <= modes, modes
    # an OpenAI-compatible model's calls stream no token chunks here (only whole messages in
    # values/updates); the model text split over events is tested in test_egress_filter.py
    joined = {k: v for r in streams for k, v in joined_model_text(r.text).items()}
    for name, data in [("runs/wait", json.dumps(result, ensure_ascii=False).encode()),
                       *((f"runs/stream {i}", r.content) for i, r in enumerate(streams)),
                       ("state", state.content), ("history", history.content),
                       *((r.url.path, r.content) for r in page),
                       *((f"joined {k}", v.encode()) for k, v in joined.items())]:
        assert key_found(data) == [], (name, key_found(data))
    assert page[0].headers.get("content-security-policy")  # the page's own headers kept
    logged = log.read_bytes()
    if mode.endswith("(no JSON)"):  # the failed run is logged with its traceback, masked
        assert b"validation error for Verdict_fever" in logged and b"Logging error" not in logged
    assert key_found(logged) == [], key_found(logged)


async def test_breakpoint_refusals_of_the_server_are_small_and_name_the_key(leaking_server):
    """The inner-breakpoint key in ``config.configurable`` is checked like ``interrupt_before``
    (422, no run), and no refusal sends a 200 KB name back."""
    import httpx

    from factdebate.graphs.exported import BREAKPOINTS_KEY

    url, _ = leaking_server
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": SERVER_KEYS["bob"]},
                                 timeout=60) as http:
        thread = (await http.post("/threads", json={})).json()["thread_id"]
        runs = f"/threads/{thread}/runs"
        bad_key = await http.post(runs, json={"assistant_id": "tool_mad", "input": {
            "claim": CLAIM}, "config": {"configurable": {BREAKPOINTS_KEY: "respond"}}})
        long_name = await http.post(runs, json={"assistant_id": "tool_mad", "input": {
            "claim": CLAIM}, "interrupt_before": ["n" * 200_000]})
        long_type = await http.post(runs, json={"assistant_id": "tool_mad", "input": {
            "claim": CLAIM}, "interrupt_before": "n" * 200_000})
        listed = (await http.get(f"/threads/{thread}/runs")).json()
    assert bad_key.status_code == 422 and BREAKPOINTS_KEY in bad_key.text, bad_key.text
    for refused in (long_name, long_type):
        assert refused.status_code == 422 and len(refused.content) < 4096, refused.text[:300]
    assert listed == []  # nothing ran
