"""Model and embedding providers' replies are bounded (core/bounded_http.py): a chat completion
from an OpenAI-compatible server that answers 64 MiB, a gzip bomb or an endless stream stops at
``FACTDEBATE_PROVIDER_MAX_REPLY_BYTES`` (decoded bytes) and the error names the limit; a normal
reply, gzip-encoded or not, passes unchanged. Real HTTP servers on loopback; the clients are the
product's (``load_model("openai:...")`` with a base URL, ``ProviderEmbeddings``)."""

from __future__ import annotations

import contextlib
import gzip
import json
import resource

import pytest

from factdebate.core.bounded_http import ReplyTooLarge
from factdebate.evaluation.bench_hostile import QuietHandler
from tests.integration.loopback import serve_http

COMPLETION = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "SUPPORTS"},
                           "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
BOMB = b""
"""A gzip bomb, ~128 KB on the wire: made before the module's first test by :func:`_gzip_bomb`,
not at import (every collection would pay for it)."""


@pytest.fixture(scope="module", autouse=True)
def _gzip_bomb() -> None:
    global BOMB
    BOMB = gzip.compress(b" " * (128 << 20), compresslevel=9)


class Provider(QuietHandler):
    """``mode`` (set per test) picks the reply: ok, ok-gzip, huge, bomb, stream."""

    mode = "ok"

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        mode = Provider.mode
        if self.path.endswith("/embeddings"):
            body = json.dumps({"object": "list", "model": "e", "data": [
                {"object": "embedding", "index": 0, "embedding": [0.5] * 8}],
                "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
            if mode == "huge":
                body = body[:-1] + b', "pad": "' + b"x" * (8 << 20) + b'"}'
            return self.reply(200, body, {"Content-Type": "application/json"})
        if mode in ("ok", "ok-gzip"):
            body = json.dumps(COMPLETION).encode()
            if mode == "ok-gzip":
                return self.reply(200, gzip.compress(body), {"Content-Encoding": "gzip"})
            return self.reply(200, body, {"Content-Type": "application/json"})
        if mode == "bomb":
            return self.reply(200, BOMB, {"Content-Encoding": "gzip"})
        if mode == "huge":
            return self.stream(b'{"id": "c1", "pad": "', 64 << 20, b"", length=False)
        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": "word "}}]}
        line = f"data: {json.dumps(chunk)}\n\n".encode()
        self.send_response(200)  # an endless stream of chunks
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for _ in range(200_000):
                self.wfile.write(line)


@pytest.fixture(scope="module")
def provider():
    with serve_http(Provider) as host:
        yield f"http://{host}/v1"


@pytest.fixture
def limited(monkeypatch, provider):
    monkeypatch.setenv("FACTDEBATE_PROVIDER_MAX_REPLY_BYTES", str(2 << 20))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    return provider


def _model(url: str):
    from factdebate.core.models import _create

    return _create("openai:m", base_url=url, temperature=0.0)


def _cause(exc: BaseException) -> BaseException | None:
    while exc is not None and not isinstance(exc, ReplyTooLarge):
        exc = exc.__cause__ or exc.__context__
    return exc


@pytest.mark.parametrize("mode", ["ok", "ok-gzip"])
def test_a_normal_reply_passes_unchanged(limited, mode):
    Provider.mode = mode
    assert _model(limited).invoke("claim?").content == "SUPPORTS"


@pytest.mark.parametrize("mode", ["huge", "bomb"])
def test_a_huge_reply_or_a_gzip_bomb_stops_at_the_limit(limited, mode):
    Provider.mode = mode
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(Exception) as caught:
        _model(limited).invoke("claim?")
    stop = _cause(caught.value)
    assert stop is not None, repr(caught.value)
    assert "passed 2097152 bytes (decoded)" in str(stop)
    # what the run reports (not the SDK's "Connection error."), and it is not retried
    from factdebate.core.faults import backend_error
    from factdebate.core.retry import is_retryable

    assert "reply was too large" in str(backend_error(caught.value))
    assert "FACTDEBATE_PROVIDER_MAX_REPLY_BYTES" in str(backend_error(caught.value))
    assert not is_retryable(caught.value)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 48


def test_an_endless_stream_stops_at_the_limit(limited):
    Provider.mode = "stream"
    with pytest.raises(Exception) as caught:
        for _ in _model(limited).stream("claim?"):
            pass
    assert _cause(caught.value) is not None, repr(caught.value)


def test_async_calls_are_bounded_too(limited):
    import asyncio

    Provider.mode = "huge"
    with pytest.raises(Exception) as caught:
        asyncio.run(_model(limited).ainvoke("claim?"))
    assert _cause(caught.value) is not None, repr(caught.value)


def test_provider_embeddings_are_bounded(limited, monkeypatch):
    from factdebate.tools import embeddings_provider as ep

    monkeypatch.setenv("OPENAI_BASE_URL", limited)
    monkeypatch.setattr(ep, "RETRIES", 0)
    Provider.mode = "ok"
    assert ep.ProviderEmbeddings("openai:e").embed_documents(["a"]) == [[0.5] * 8]
    Provider.mode = "huge"
    with pytest.raises(Exception, match=r"announced \d+ bytes, over the limit of 2097152"):
        ep.ProviderEmbeddings("openai:e").embed_documents(["a"])
