"""The real tavily-python client against a local HTTP server standing in for Tavily's /search."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from factdebate.core.errors import ConfigError
from factdebate.tools.base import RETRIEVERS, RetrieverSettings
from factdebate.tools.tavily_search import SearchBackendError, TavilyRetriever, parse_retry_after

SETTINGS = RetrieverSettings(index_dir="/nonexistent", milvus_uri="/nonexistent/milvus.db")
RESULTS = [
    {"title": "Mars - Wikipedia", "url": "https://en.wikipedia.org/wiki/Mars",
     "content": "Mars is the fourth planet from the Sun.", "score": 0.91, "raw_content": None},
    {"title": "Red planet facts", "url": "https://example.org/mars",
     "content": "Iron oxide makes Mars look red.", "score": 0.52},
    {"title": "Third", "url": "https://example.org/3", "content": "c", "score": 0.1},
]


class FakeTavily(BaseHTTPRequestHandler):
    """POST /search: 200 with RESULTS, or the error the query asks for."""

    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        """Record the request and answer it."""
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeTavily.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        query = body.get("query", "")
        if self.path != "/search":
            self._reply(404, {"detail": {"error": "not found"}})
        elif query == "rate limit me":
            self._reply(429, {"detail": {"error": "Rate limit exceeded"}}, {"Retry-After": "7"})
        elif query == "break":
            self._reply(500, {"detail": {"error": "internal"}})
        elif query == "bad key":
            self._reply(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})
        else:
            n = body.get("max_results", 5)
            self._reply(200, {"query": query, "results": RESULTS[:n], "response_time": 0.01})

    def _reply(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
               ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        """Keep test output clean."""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeTavily)  # port 0: a free port
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def tavily(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[TavilyRetriever]:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-123")
    monkeypatch.setenv("TAVILY_BASE_URL", server + "/")
    FakeTavily.requests.clear()
    retriever = RETRIEVERS.get(RETRIEVERS.resolve("web"))(SETTINGS)
    assert isinstance(retriever, TavilyRetriever)
    yield retriever
    retriever.close()


@pytest.mark.asyncio
async def test_results_are_mapped_to_evidence(tavily: TavilyRetriever) -> None:
    hits = await tavily.search("Is Mars red?", k=2)
    assert hits == [
        {"id": "https://en.wikipedia.org/wiki/Mars", "title": "Mars - Wikipedia",
         "text": "Mars is the fourth planet from the Sun.", "source": "tavily",
         "url": "https://en.wikipedia.org/wiki/Mars", "score": 0.91},
        {"id": "https://example.org/mars", "title": "Red planet facts",
         "text": "Iron oxide makes Mars look red.", "source": "tavily",
         "url": "https://example.org/mars", "score": 0.52},
    ]
    (request,) = FakeTavily.requests
    assert request["path"] == "/search"
    assert request["headers"]["Authorization"] == "Bearer tvly-test-123"
    assert request["body"]["query"] == "Is Mars red?" and request["body"]["max_results"] == 2


@pytest.mark.asyncio
async def test_long_query_is_cut_to_tavily_limit(tavily: TavilyRetriever) -> None:
    await tavily.search("word " * 300, k=1)
    assert len(FakeTavily.requests[0]["body"]["query"]) <= 400


@pytest.mark.asyncio
async def test_rate_limit_carries_status_and_retry_after(tavily: TavilyRetriever) -> None:
    with pytest.raises(SearchBackendError) as info:
        await tavily.search("rate limit me", k=3)
    err = info.value
    assert (err.status, err.retry_after, err.retryable) == (429, 7.0, True)
    assert "HTTP 429" in str(err) and "Rate limit exceeded" in str(err)


@pytest.mark.asyncio
async def test_server_error_carries_status(tavily: TavilyRetriever) -> None:
    with pytest.raises(SearchBackendError) as info:
        await tavily.search("break", k=3)
    assert (info.value.status, info.value.retry_after, info.value.retryable) == (500, None, True)


@pytest.mark.asyncio
async def test_bad_key_is_not_retryable(tavily: TavilyRetriever) -> None:
    with pytest.raises(SearchBackendError) as info:
        await tavily.search("bad key", k=3)
    assert (info.value.status, info.value.retryable) == (401, False)
    assert info.value.remedy == "check TAVILY_API_KEY"


@pytest.mark.asyncio
async def test_unreachable_host_is_a_search_backend_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on once this socket closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    retriever = TavilyRetriever("tvly-test", f"http://127.0.0.1:{port}")
    with pytest.raises(SearchBackendError, match="cannot reach Tavily") as info:
        await retriever.search("anything", k=1)
    assert info.value.status is None and info.value.retryable


def test_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(ConfigError) as info:
        RETRIEVERS.get("tavily")(SETTINGS)
    assert info.value.problem == "search backend 'tavily' needs TAVILY_API_KEY"
    assert "--search-backend local_search" in info.value.remedy


def test_retry_after_forms() -> None:
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past
