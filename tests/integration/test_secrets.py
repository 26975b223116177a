"""Secrets (issue #6.7): fake API keys never reach traces, logs, results, reports or checkpoints.

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

import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from factdebate.tools.base import clear_retriever_cache
from factdebate.tools.indexing import build_indexes

REPO = Path(__file__).resolve().parents[2]
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


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Servers)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("secrets-index")
    corpus = root / "corpus.jsonl"
    corpus.write_text(json.dumps({"doc_id": "d1", "title": "Eiffel Tower",
                                  "text": "The Eiffel Tower is a tower in Paris."}) + "\n")
    build_indexes(corpus, root / "index")
    clear_retriever_cache()
    return root / "index"


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
