"""Provider embeddings (``openai:<model>``) against a real loopback embeddings server.

The server is an ``http.server`` on 127.0.0.1 answering ``POST /v1/embeddings`` like OpenAI's
endpoint, with deterministic vectors (a unit vector seeded by the SHA-256 of the text) and a plan
of failures per request (429 with ``Retry-After``, 500, 400, 401, a used-up quota). The client is
the real ``openai`` client inside :class:`~factdebate.tools.embeddings_provider.ProviderEmbeddings`
and every retry goes through ``core/retry.py``. The end-to-end test runs ``factdebate index`` on
a FEVER dump into Milvus Lite: a build stopped by the provider keeps its staging folder, and the
rerun embeds only the passages not yet committed.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import factdebate.tools.embeddings_provider as provider
from factdebate.cli.main import app
from factdebate.core.errors import BackendUnavailableError, ConfigError
from factdebate.evaluation.bench_corpus import generate_fever_dump
from factdebate.tools.embeddings import get_embeddings
from factdebate.tools.embeddings_provider import (
    EmbeddingProviderUnavailable,
    EmbeddingRequestRejected,
    ProviderEmbeddings,
    TokenCounter,
)

DIM = 16
MODEL = "text-embedding-3-small"
Reply = tuple[int, dict[str, str], dict[str, Any]]


def vector(text: str) -> list[float]:
    """The server's vector of ``text``: 16 signed 16-bit numbers of its SHA-256, unit length."""
    raw = struct.unpack("<16h", hashlib.sha256(text.encode()).digest())
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def error(status: int, message: str, code: str = "", **headers: str) -> Reply:
    return status, headers, {"error": {"message": message, "type": "test", "code": code or None}}


class Embedder:
    """The server's state: the requests it got and a plan that may answer one with an error."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        """Each request's body, its arrival time (``at``) and whether it was served (``ok``)."""
        self.plan: Callable[[int], Reply | None] = lambda n: None
        """Request number (0-based) -> an error reply, or None to serve it."""
        self.shuffle = False
        self.drop_one = False
        self.lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            n = len(self.requests)
            failure = self.plan(n)
            self.requests.append({**body, "at": time.monotonic(), "ok": failure is None})
        if failure is not None:
            return failure
        inputs = body["input"]
        data = [{"object": "embedding", "index": i, "embedding": vector(t)}
                for i, t in enumerate(inputs)]
        if self.shuffle:
            data.reverse()
        if self.drop_one:
            data = data[1:]
        tokens = sum(len(t.split()) for t in inputs)
        return 200, {}, {"object": "list", "data": data, "model": body["model"],
                         "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def served_inputs(self) -> list[str]:
        return [t for r in self.requests if r["ok"] for t in r["input"]]


@pytest.fixture
def server() -> Iterator[tuple[str, Embedder]]:
    state = Embedder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert self.path == "/v1/embeddings", self.path
            status, headers, reply = state.answer(body)
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def env(server: tuple[str, Embedder], monkeypatch: pytest.MonkeyPatch) -> Embedder:
    """The process points provider embeddings at the loopback server, with fast retries."""
    url, state = server
    monkeypatch.delenv("FACTDEBATE_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setattr(provider, "RETRIES", 2)
    monkeypatch.setattr(provider, "BACKOFF_S", 0.01)
    return state


# --- requests, batching, order ----------------------------------------------------------------


def test_batches_follow_the_limits_and_vectors_keep_the_texts_order(env: Embedder) -> None:
    env.shuffle = True  # the server lists vectors in reverse: the client orders them by index
    model = ProviderEmbeddings(MODEL)
    model.max_inputs, model.max_request_tokens = 4, 30
    texts = [f"passage number {i} " + "word " * (i % 3) for i in range(10)] + [""]
    vectors = model.embed_documents(texts)
    assert len(vectors) == len(texts)
    for text, got in zip(texts, vectors, strict=True):
        assert got == pytest.approx(vector(text or " "))
    sizes = [len(r["input"]) for r in env.requests]
    assert sum(sizes) == len(texts) and max(sizes) <= 4 and len(sizes) >= 3
    assert env.requests[-1]["input"][-1] == " "  # an empty text is sent as one space
    assert all(r["model"] == MODEL and r["encoding_format"] == "float" for r in env.requests)
    counted = TokenCounter(None)
    for request in env.requests:  # each request within the token budget, as counted
        assert sum(counted.fit(t, 8191)[1] for t in request["input"]) <= 30
    usage = model.usage()
    assert usage["requests"] == len(sizes) and usage["inputs"] == len(texts)
    assert usage["retries"] == 0 and usage["tokens_reported"] > 0
    assert usage["token_count"] in ("estimate:utf8_bytes/3", "tiktoken:cl100k_base")
    assert model.dimension == DIM


def test_a_reply_with_a_missing_vector_is_an_error_not_a_shifted_index(env: Embedder) -> None:
    env.drop_one = True
    with pytest.raises(EmbeddingProviderUnavailable, match="returned 2 vectors for 3 inputs"):
        ProviderEmbeddings(MODEL).embed_documents(["a", "b", "c"])
    assert len(env.requests) == 1


def test_over_long_inputs_are_truncated_and_counted(env: Embedder) -> None:
    model = ProviderEmbeddings(MODEL)
    model.max_input_tokens = 10
    long = "abcdefghij" * 10  # 100 bytes: 34 estimated tokens
    model.embed_documents(["short", long])
    sent = env.requests[0]["input"]
    assert sent[0] == "short" and len(sent[1]) < len(long) and long.startswith(sent[1])
    assert model.usage()["truncated"] == 1


def test_tiktoken_counts_and_truncates_in_tokens() -> None:
    """A byte-level encoding (one token per byte; the real ones download their files)."""
    import tiktoken

    encoding = tiktoken.Encoding("bytes", pat_str=r"[\s\S]", mergeable_ranks={
        bytes([b]): b for b in range(256)}, special_tokens={})
    counter = TokenCounter(encoding)
    assert counter.method == "tiktoken:bytes"
    assert counter.fit("héllo", 100) == ("héllo", 6, False)
    assert counter.fit("abcdefgh", 5) == ("abcde", 5, True)


def test_the_dimensions_option_is_sent_and_bad_options_are_one_clear_error(
        env: Embedder) -> None:
    model = get_embeddings(f"openai:{MODEL}?dimensions={DIM}")
    assert model.dimension == DIM  # known without a request
    model.embed_query("x")
    assert env.requests[-1]["dimensions"] == DIM
    for spec in (f"openai:{MODEL}?dims=3", f"openai:{MODEL}?dimensions=0"):
        with pytest.raises(ConfigError, match="unknown option or a bad value"):
            get_embeddings(spec)


# --- what is retried ----------------------------------------------------------------------------


def test_a_429_waits_for_retry_after_and_5xx_is_retried(env: Embedder) -> None:
    env.plan = lambda n: {0: error(429, "Rate limit reached", "rate_limit_exceeded",
                                   **{"Retry-After": "1"}),
                          1: error(503, "overloaded")}.get(n)
    model = ProviderEmbeddings(MODEL)
    assert model.embed_documents(["claim"])[0] == pytest.approx(vector("claim"))
    times = [r["at"] for r in env.requests]
    assert len(times) == 3 and times[1] - times[0] >= 0.95  # Retry-After: 1, not 0.01 s
    usage = model.usage()
    assert usage["requests"] == 3 and usage["retries"] == 2 and usage["waited_s"] >= 1.0


def test_retry_after_is_capped_for_bulk_builds(env: Embedder, monkeypatch) -> None:
    monkeypatch.setattr(provider, "MAX_RETRY_AFTER_S", 0.2)
    env.plan = lambda n: error(429, "Rate limit reached", **{"Retry-After": "3600"}) \
        if n == 0 else None
    started = time.monotonic()
    ProviderEmbeddings(MODEL).embed_documents(["claim"])
    assert time.monotonic() - started < 5 and len(env.requests) == 2


@pytest.mark.parametrize(("status", "code", "kind", "words"), [
    (400, "", EmbeddingRequestRejected, "rejected the request (HTTP 400: bad input here)"),
    (401, "", EmbeddingRequestRejected, "refused the key (HTTP 401: bad input here)"),
    (429, "insufficient_quota", EmbeddingProviderUnavailable,
     "quota used up (HTTP 429: bad input here)"),
])
def test_errors_that_retrying_cannot_fix_are_sent_once(env: Embedder, status: int, code: str,
                                                       kind: type, words: str) -> None:
    env.plan = lambda n: error(status, "bad input here", code)
    with pytest.raises(kind) as caught:
        ProviderEmbeddings(MODEL).embed_documents(["claim"])
    message = str(caught.value)
    assert len(env.requests) == 1
    assert f"embedding model 'openai:{MODEL}' at 127.0.0.1:" in message and words in message
    assert "\n" not in message and "sk-test" not in message


def test_retries_exhausted_is_one_error_naming_model_server_and_message(env: Embedder) -> None:
    env.plan = lambda n: error(500, "the server fell over")
    model = ProviderEmbeddings(MODEL)
    with pytest.raises(EmbeddingProviderUnavailable) as caught:
        model.embed_documents(["claim"])
    assert isinstance(caught.value, BackendUnavailableError) and caught.value.exit_code == 3
    assert "failed 3 times (HTTP 500: the server fell over)" in str(caught.value)
    assert len(env.requests) == 3 and model.usage()["retries"] == 2


# --- an index build stopped by the provider resumes ---------------------------------------------


def test_a_build_stopped_by_the_provider_resumes_without_embedding_committed_passages(
        tmp_path: Path, env: Embedder, monkeypatch) -> None:
    from pymilvus import MilvusClient

    import factdebate.tools.sources.build as build
    from factdebate.tools.base import RetrieverSettings, clear_retriever_cache, get_retriever
    from factdebate.tools.index_lock import release

    dump = generate_fever_dump(tmp_path / "dump", 60)
    target = tmp_path / "index"
    monkeypatch.setattr(build, "CHECKPOINT_PASSAGES", 8)
    argv = ["index", str(dump), "--format", "fever-wiki", "--index-dir", str(target),
            "--embedding-model", f"openai:{MODEL}"]
    # two rate-limited requests, three served (the size probe and two commits), then down
    env.plan = lambda n: (error(429, "Rate limit reached", **{"Retry-After": "1"}) if n < 2
                          else None if n < 5 else error(500, "the server fell over"))

    first = CliRunner().invoke(app, argv)
    assert first.exit_code == 3, first.output
    lines = first.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: embedding model 'openai:"), lines
    assert "failed 3 times (HTTP 500: the server fell over)" in lines[0]
    assert env.requests[1]["at"] - env.requests[0]["at"] >= 0.95  # Retry-After honoured
    assert not target.exists()
    staging = list(tmp_path.glob(".index.building-*"))
    assert len(staging) == 1
    committed = json.loads((staging[0] / "checkpoint.json").read_text())["committed"]["passages"]
    assert committed > 0 and f"keeps its {committed} committed passages" in lines[0]
    embedded_before = set(env.served_inputs())

    env.plan, served_before = (lambda n: None), len(env.requests)
    second = CliRunner().invoke(app, argv)
    assert second.exit_code == 0, second.output
    assert f"resumed at passage {committed}" in second.output
    manifest = json.loads((target / "manifest.json").read_text())
    rerun = [t for r in env.requests[served_before:] for t in r["input"]]
    assert len(rerun) == manifest["passages"] - committed  # only what was not committed
    assert not set(rerun) & embedded_before  # no committed passage is embedded again
    assert manifest["embedding"]["inputs"] == len(rerun)
    assert manifest["embedding"]["requests"] == len(env.requests) - served_before
    assert manifest["embedding"]["retries"] == 0 and manifest["dimension"] == DIM

    client = MilvusClient(str(target / "milvus.db"))
    try:
        client.load_collection(manifest["collection"])
        rows = client.query(manifest["collection"], filter="id != ''",
                            output_fields=["title", "text", "vector"], limit=1000)
    finally:
        client.close()
    assert len(rows) == manifest["passages"]
    for row in rows:
        assert row["vector"] == pytest.approx(vector(f"{row['title']}\n{row['text']}"), abs=1e-6)
    some = rows[len(rows) // 2]
    settings = RetrieverSettings(index_dir=str(target), milvus_uri=str(target / "milvus.db"),
                                 embedding_model=f"openai:{MODEL}")
    try:
        top = get_retriever("milvus", settings).search_sync(f"{some['title']}\n{some['text']}", 1)
        assert top[0]["id"] == some["id"]
    finally:
        clear_retriever_cache()
        release(target)


@pytest.mark.parametrize(("variable", "value"), [("FACTDEBATE_EMBEDDING_RETRIES", "many"),
                                                 ("FACTDEBATE_EMBEDDING_RETRIES", "-1"),
                                                 ("FACTDEBATE_EMBEDDING_BACKOFF_S", "nan")])
def test_a_bad_retry_setting_is_one_error_naming_the_variable_before_any_request(
        env: Embedder, monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        ProviderEmbeddings(MODEL).embed_documents(["a passage"])
    assert env.requests == []


def test_the_retry_settings_are_read_from_the_environment_at_each_request(
        env: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    env.plan = lambda n: error(500, "overloaded") if n < 3 else None
    monkeypatch.setenv("FACTDEBATE_EMBEDDING_RETRIES", "3")
    monkeypatch.setenv("FACTDEBATE_EMBEDDING_BACKOFF_S", "0")
    model = ProviderEmbeddings(MODEL)
    assert len(model.embed_documents(["a passage"])) == 1
    assert model.usage()["retries"] == 3
