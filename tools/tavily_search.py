"""Tavily web search (the ``search`` debater's online tool) through the official ``tavily-python``.

The key comes from ``TAVILY_API_KEY``; ``TAVILY_BASE_URL`` overrides the API address (the
client's ``api_base_url``), which is how tests point the real client at a local HTTP server. With
no network use ``--search-backend local_search`` (tools/keyword.py), the offline stand-in.

``TavilyClient`` turns HTTP failures into exceptions that drop the status code and the
``Retry-After`` header (a 429 becomes ``UsageLimitExceededError(detail)``). So the client gets its
own ``requests.Session`` (a public constructor argument) whose response hook raises
:class:`SearchBackendError` with the status, the API's error detail and ``Retry-After`` before the
client sees the response; the project's retry policy (``factdebate.core.retry``, through the
retrieval node's ``with_retries``) then honours the server's back-off. This module does not retry.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from factdebate.core.errors import BackendUnavailableError, ConfigError
from factdebate.core.retry import header_retry_after
from factdebate.core.retry import parse_retry_after as parse_retry_after  # tests import it
from factdebate.core.state import Evidence
from factdebate.tools.base import RetrieverSettings, run_blocking

if TYPE_CHECKING:
    import requests
    from tavily import TavilyClient

MAX_QUERY_CHARS = 400
"""Tavily rejects longer queries with HTTP 400; claims may be up to 4,000 chars, so cut."""
MAX_RESULTS = 20
"""Tavily's upper bound for ``max_results``."""
TIMEOUT_S = 20.0
"""Per-request timeout; matches Context.tool_timeout_s's default."""


class SearchBackendError(BackendUnavailableError):
    """A web search request failed (HTTP error, timeout, unreachable host).

    Attributes:
        status: HTTP status code, or None when no response arrived.
        retry_after: Seconds the server asked to wait (``Retry-After``, parsed by
            ``factdebate.core.retry.header_retry_after``), or None.
        retryable: True for 429, 5xx and transport failures; False for 4xx such as a bad key.
    """

    def __init__(
        self, problem: str, remedy: str = "", *, status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Problem and remedy as for every user-facing error, plus the HTTP details."""
        super().__init__(problem, remedy)
        self.status = status
        self.retry_after = retry_after
        self.retryable = status is None or status == 429 or status >= 500


def _raise_for_status(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    """``requests`` response hook: any non-200 answer becomes a :class:`SearchBackendError`."""
    if response.status_code == 200:
        return
    detail = ""
    try:
        body = response.json()
        err = body.get("detail", body) if isinstance(body, dict) else body
        detail = str(err.get("error", err) if isinstance(err, dict) else err)
    except ValueError:
        detail = response.text[:200]
    status = response.status_code
    retry_after = header_retry_after(response.headers)
    wait = f", retry after {retry_after:g}s" if retry_after is not None else ""
    remedy = {
        401: "check TAVILY_API_KEY",
        429: "wait and retry, or use --search-backend local_search",
    }.get(status, "retry later or use --search-backend local_search")
    raise SearchBackendError(
        f"Tavily search failed: HTTP {status}{wait}{': ' + detail if detail else ''}",
        remedy, status=status, retry_after=retry_after,
    )


class TavilyRetriever:
    """Web search results as evidence; one ``TavilyClient`` (and HTTP session) per instance."""

    name = "tavily"

    def __init__(self, api_key: str, base_url: str | None = None) -> None:
        """Create the client.

        Args:
            api_key: Tavily API key.
            base_url: API address; None = Tavily's public endpoint.
        """
        import requests
        from tavily import TavilyClient

        session = requests.Session()
        session.hooks["response"].append(_raise_for_status)
        self.base_url = base_url
        self._client: TavilyClient = TavilyClient(
            api_key=api_key, api_base_url=base_url, session=session
        )
        self._session = session

    def search_sync(self, query: str, k: int) -> list[Evidence]:
        """Blocking search: top-``k`` web results for ``query``.

        Raises:
            SearchBackendError: HTTP error status, timeout or connection failure.
        """
        import requests
        from tavily.errors import TimeoutError as TavilyTimeout

        query = query.strip()[:MAX_QUERY_CHARS]
        if k < 1 or not query:
            return []
        where = self.base_url or "api.tavily.com"
        try:
            response = self._client.search(
                query, max_results=min(k, MAX_RESULTS), search_depth="basic", timeout=TIMEOUT_S
            )
        except TavilyTimeout as exc:
            raise SearchBackendError(
                f"Tavily search timed out after {TIMEOUT_S:g}s ({where})", "retry later"
            ) from exc
        except requests.RequestException as exc:
            raise SearchBackendError(
                f"cannot reach Tavily at {where} ({type(exc).__name__})",
                "check the network, or use --search-backend local_search offline",
            ) from exc
        return [_evidence(r) for r in response.get("results", [])[:k]]

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Top-``k`` web results for ``query``, best first (runs off the event loop)."""
        return await run_blocking(self.search_sync, query, k)

    def close(self) -> None:
        """Close the HTTP session."""
        self._session.close()


def _evidence(result: dict[str, Any]) -> Evidence:
    url = str(result.get("url") or "")
    return Evidence(
        id=url, title=str(result.get("title") or ""), text=str(result.get("content") or ""),
        source="tavily", url=url, score=float(result.get("score") or 0.0),
    )


def open_tavily_retriever(settings: RetrieverSettings) -> TavilyRetriever:
    """Registry factory for ``tavily`` (settings are unused: the key and URL come from env).

    Raises:
        ConfigError: ``TAVILY_API_KEY`` is not set.
    """
    key = os.environ.get("TAVILY_API_KEY", "").strip()
    if not key:
        raise ConfigError(
            "search backend 'tavily' needs TAVILY_API_KEY",
            "export TAVILY_API_KEY=... or use --search-backend local_search offline",
        )
    base_url = os.environ.get("TAVILY_BASE_URL", "").strip().rstrip("/") or None
    return TavilyRetriever(key, base_url)
