"""Live Wikipedia as a retriever backend (``rag_backend=wikipedia``): nothing to index, only a wiki.

For a user who has a model key and no index: each search asks the MediaWiki Action API at
``FACTDEBATE_MEDIAWIKI_URL`` (default ``https://en.wikipedia.org/w/api.php``, the URL MERMAID's
Wikipedia tools use) and answers with passages of the pages it finds:

1. ``list=search`` for the query: the titles of the top ``FACTDEBATE_WIKIPEDIA_PAGES`` pages (3);
2. per page, its plain text and current revision (``prop=extracts|revisions``, ``explaintext``;
   TextExtracts gives a whole page's text for one title per request);
3. each page split into passages of at most :data:`PASSAGE_CHARS` characters along its paragraphs
   (headings start a passage; the reference sections at the end are dropped;
   ``tools/wiki_text.py``);
4. the passages of all pages ranked against the query with Okapi BM25 (``wiki_text.bm25_rank``,
   over the fetched passages only) and the top ``k`` returned.

Every passage carries the project's passage contract - ``id`` (``<title>#<n>``), ``title``,
``text``, ``url``, ``page`` (the title), ``sentences`` (``[]``), ``pool`` (``""``) - plus
``revision`` (the revision id): ``url`` is the permanent link of that revision
(``index.php?title=<title>&oldid=<revision>`` on the same wiki), so a citation names the page text
the verdict read even after the page changes.

Politeness (the Wikimedia API etiquette):

* the ``User-Agent`` names the project and a contact, ``FACTDEBATE_CONTACT`` (an e-mail address or
  URL; Wikimedia may block clients without one);
* requests start at most ``FACTDEBATE_MEDIAWIKI_RATE`` per second in this process (4; ``0`` = no
  limit), across threads and event loops;
* every request sends ``maxlag`` (:data:`MAXLAG_S`): a wiki whose replicas lag answers with a
  ``maxlag`` error, raised as :class:`WikiLagging` with the wait it asked for (``Retry-After``),
  which the one retry policy (``core/retry.py``, through the search's caller
  ``nodes/retrieval.search_tool``) waits out before asking again;
* answers are cached on disk under ``$FACTDEBATE_HOME/wikipedia`` (``live_cache.DiskCache``; the
  rate limit is ``live_cache.RATE_LIMIT``), keyed by the wiki's URL and the query (and pages by
  the wiki's URL and title), for ``FACTDEBATE_WIKIPEDIA_CACHE_TTL_S`` seconds (one day; ``0`` = no
  cache): a repeated query sends no request. Entries are written to a temporary file and renamed
  into place, so concurrent processes read an old or a new entry, never half of one.

Faults: an HTTP error, a refused connection, a lag or an answer that is no API reply is raised to
the caller; ``search_tool`` bounds each attempt by ``tool_timeout_s``, retries transient faults
``tool_retries`` times and then records a tool fault of that turn (a flag and a ``tool_faults``
ledger entry) - the debate goes on without that evidence. A query that finds nothing is an empty
result, not a fault; nothing that failed is cached.

Who chooses the wiki: ``FACTDEBATE_MEDIAWIKI_URL`` is read from the environment of the process
that searches. It is not a ``Context`` field, and ``rag_backend``/``search_backend`` are
operator-only fields, so a client of a shared server can neither choose this backend nor point the
server at another URL.
"""

from __future__ import annotations

import asyncio
import math
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from factdebate.core.context import factdebate_home
from factdebate.core.errors import ConfigError, FactDebateError
from factdebate.core.retry import header_retry_after
from factdebate.core.settings import mask_url
from factdebate.core.state import Evidence
from factdebate.tools.base import RetrieverSettings
from factdebate.tools.live_cache import RATE_LIMIT, DiskCache, RateLimit
from factdebate.tools.web_apis import MediaWikiClient
from factdebate.tools.wiki_text import PASSAGE_CHARS, bm25_rank, split_passages, tokens

__all__ = ["PASSAGE_CHARS", "RATE_LIMIT", "DiskCache", "RateLimit", "WikipediaRetriever",
           "bm25_rank", "live_sources", "open_wikipedia_retriever",
           "page_link", "shortcut_settings", "split_passages", "tokens", "user_agent",
           "wiki_url"]

NAME = "wikipedia"
"""The backend's registered name (``core/retrievers.py``) and its passages' ``source``."""
URL_ENV = MediaWikiClient.env_var
"""``FACTDEBATE_MEDIAWIKI_URL``: the Action API endpoint (``.../w/api.php``)."""
DEFAULT_URL = MediaWikiClient.default_url
CONTACT_ENV = "FACTDEBATE_CONTACT"
"""An e-mail address or URL the ``User-Agent`` names, so a wiki's operators can reach the user."""
RATE_ENV = "FACTDEBATE_MEDIAWIKI_RATE"
DEFAULT_RATE = 4.0
"""Requests per second this process starts at most (``0`` = no limit)."""
TTL_ENV = "FACTDEBATE_WIKIPEDIA_CACHE_TTL_S"
DEFAULT_TTL_S = 86_400.0
"""How long a cached search or page is answered from disk (seconds; ``0`` = never cached)."""
PAGES_ENV = "FACTDEBATE_WIKIPEDIA_PAGES"
DEFAULT_PAGES = 3
"""Pages fetched per query; their passages are ranked together."""
HTTP_TIMEOUT_ENV = "FACTDEBATE_MEDIAWIKI_TIMEOUT_S"
DEFAULT_HTTP_TIMEOUT_S = 20.0
"""One HTTP request's timeout; a search as a whole is bounded by the run's ``tool_timeout_s``."""
MAXLAG_S = 5
"""``maxlag`` sent with every request (the value Wikimedia recommends for bots)."""
CACHE_FOLDER = "wikipedia"
"""Folder of the on-disk cache under ``$FACTDEBATE_HOME``."""


class WikiLagging(FactDebateError):
    """The wiki refused a request because its replicas lag (a ``maxlag`` error).

    ``retryable``: the one retry policy asks again after ``retry_after`` seconds.
    """

    retryable = True

    def __init__(self, wiki: str, lag: float | None, retry_after: float | None) -> None:
        """Name the wiki and the lag it reported."""
        self.retry_after = retry_after if retry_after is not None else lag
        said = f"{lag:g} s" if lag is not None else "an unknown time"
        super().__init__(f"the wiki at {mask_url(wiki)} is lagging ({said}; maxlag "
                         f"{MAXLAG_S} s)", "it is asked again after the wait it named")


class WikiError(RuntimeError):
    """The wiki answered with an API error (other than ``maxlag``) or with something other than
    a JSON object (a captive portal's page, a URL that is no api.php).

    Not a ``FactDebateError``: ``search_tool`` raises those that are not retryable, while a wiki
    that answers wrongly is a tool fault of the turn like one that answers 500 (retried
    ``tool_retries`` times, as an API error may pass, then recorded).
    """


# -- settings ------------------------------------------------------------------------------------
def _env_number(name: str, default: float, *, low: float = 0.0) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < low:
        raise ConfigError(f"{name}={raw!r} is not a number of {low:g} or more",
                          f"set {name} to a number such as {default:g}")
    return value


def wiki_url() -> str:
    """The Action API endpoint searched: ``$FACTDEBATE_MEDIAWIKI_URL`` or English Wikipedia's."""
    url = (os.environ.get(URL_ENV) or DEFAULT_URL).strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{URL_ENV}={mask_url(url)!r} is not an http(s) URL",
                          "set it to a MediaWiki API endpoint such as "
                          "https://en.wikipedia.org/w/api.php")
    return url


def user_agent() -> str:
    """``factdebate/<version> (<contact>) httpx/<version>``: the project and who runs it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("factdebate")
    except PackageNotFoundError:
        own = "0"
    contact = " ".join(os.environ.get(CONTACT_ENV, "").split())[:200]
    who = f"contact: {contact}" if contact else f"claim verification; contact unset ({CONTACT_ENV})"
    return f"factdebate/{own} ({who}) httpx/{httpx.__version__}"


def describe_source() -> dict[str, Any]:
    """What a run searching this backend searched (recorded where an index identity is):
    the wiki's URL (credentials masked), the cache's lifetime and the pages read per query."""
    return {"backend": NAME, "wiki": mask_url(wiki_url()),
            "cache_ttl_s": _env_number(TTL_ENV, DEFAULT_TTL_S),
            "pages_per_query": int(_env_number(PAGES_ENV, DEFAULT_PAGES, low=1))}


def page_link(api_url: str, title: str, revision: int | None) -> str:
    """The permanent link of ``title`` at ``revision`` on the wiki whose API is ``api_url``."""
    base = api_url[: -len("api.php")] + "index.php" if api_url.endswith("api.php") else api_url
    link = f"{base}?title={quote(title.replace(' ', '_'), safe='')}"
    return f"{link}&oldid={revision}" if revision else link


# -- the retriever -------------------------------------------------------------------------------
class _Wiki(MediaWikiClient):
    """MERMAID's MediaWiki client with the politeness of this backend: the rate limit, ``maxlag``
    and its refusals, the ``User-Agent`` naming the contact."""

    def __init__(self, url: str, timeout: float) -> None:
        super().__init__(url, timeout=timeout)
        self._http.headers["User-Agent"] = user_agent()

    async def _query(self, **params: Any) -> dict[str, Any]:
        wait = RATE_LIMIT.delay(_env_number(RATE_ENV, DEFAULT_RATE))
        if wait > 0:
            await asyncio.sleep(wait)
        params |= {"format": "json", "formatversion": 2, "maxlag": MAXLAG_S}
        response = await self._get("", params)
        try:
            data = response.json()
        except ValueError:
            raise WikiError(f"the wiki at {mask_url(self.base_url)} answered something other than "
                            f"JSON; check that {URL_ENV} is a MediaWiki api.php URL") from None
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            if error.get("code") == "maxlag":
                lag = error.get("lag")
                raise WikiLagging(self.base_url, float(lag) if isinstance(lag, int | float)
                                  else None, header_retry_after(response.headers))
            raise WikiError(f"the wiki at {mask_url(self.base_url)} refused the request "
                            f"({error.get('code')}: {str(error.get('info', ''))[:200]})")
        if not isinstance(data, dict):
            raise WikiError(f"the wiki at {mask_url(self.base_url)} answered a JSON "
                            f"{type(data).__name__}, not an object; check that {URL_ENV} is a "
                            "MediaWiki api.php URL")
        return data

    async def titles(self, query: str, limit: int) -> list[str]:
        """Titles of the top ``limit`` pages for ``query`` (the wiki's own search)."""
        data = await self._query(action="query", list="search", srsearch=query, srlimit=limit,
                                 srprop="", srnamespace=0)
        hits = data.get("query", {}).get("search", [])
        return [h["title"] for h in hits if isinstance(h, dict) and isinstance(h.get("title"), str)]

    async def page(self, title: str) -> dict[str, Any] | None:
        """``{title, revision, text}`` of a page (redirects followed); None if it is missing."""
        data = await self._query(action="query", prop="extracts|revisions", titles=title,
                                 explaintext=1, exsectionformat="wiki", rvprop="ids",
                                 redirects=1)
        pages = data.get("query", {}).get("pages", [])
        page = pages[0] if pages and isinstance(pages[0], dict) else {}
        if not page or page.get("missing") or page.get("invalid") or not page.get("extract"):
            return None
        revisions = page.get("revisions") or [{}]
        revid = revisions[0].get("revid") if isinstance(revisions[0], dict) else None
        return {"title": str(page.get("title") or title),
                "revision": int(revid) if isinstance(revid, int) else None,
                "text": str(page["extract"])}


class WikipediaRetriever:
    """Search live Wikipedia (or any MediaWiki) and rank its pages' passages against the query."""

    name = NAME

    def __init__(self, cache_dir: Path | None = None) -> None:
        """Cache under ``cache_dir`` (default ``$FACTDEBATE_HOME/wikipedia``)."""
        self._cache_dir = cache_dir

    def _cache(self) -> DiskCache:
        folder = self._cache_dir or factdebate_home() / CACHE_FOLDER
        return DiskCache(folder, _env_number(TTL_ENV, DEFAULT_TTL_S))

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Top-``k`` passages of the wiki's top pages for ``query``, best first."""
        query = " ".join(query.split())
        if not query or k <= 0:
            return []
        url = wiki_url()
        pages = int(_env_number(PAGES_ENV, DEFAULT_PAGES, low=1))
        cache = self._cache()
        key = (url, "search", str(pages), query)
        ranked = cache.get(key)
        if not isinstance(ranked, list):
            ranked = await self._fetch_and_rank(url, query, pages, cache)
            cache.put(key, ranked)
        return [Evidence(**p) for p in ranked[:k] if isinstance(p, dict)]  # type: ignore[typeddict-item]

    async def _fetch_and_rank(self, url: str, query: str, pages: int,
                              cache: DiskCache) -> list[dict[str, Any]]:
        client = _Wiki(url, _env_number(HTTP_TIMEOUT_ENV, DEFAULT_HTTP_TIMEOUT_S))
        try:  # one client per search: an httpx client belongs to the event loop that opened it
            found = []
            for title in await client.titles(query, pages):
                page = cache.get((url, "page", title))
                if not isinstance(page, dict):
                    page = await client.page(title)
                    if page is None:
                        continue
                    cache.put((url, "page", title), page)
                found.append(page)
        finally:
            await client.aclose()
        passages = [passage(url, page, n, text) for page in found
                    for n, text in enumerate(split_passages(page["text"]), 1)]
        scores = bm25_rank(query, [f"{p['title']} {p['text']}" for p in passages])
        for p, score in zip(passages, scores, strict=True):
            p["score"] = round(score, 6)
        order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))  # ties: page order
        return [passages[i] for i in order]


def passage(url: str, page: dict[str, Any], n: int, text: str) -> dict[str, Any]:
    """Passage ``n`` (from 1) of ``page`` in the passage contract, cited by its revision."""
    title, revision = page["title"], page.get("revision")
    return {"id": f"{title}#{n}", "title": title, "text": text, "source": NAME,
            "url": page_link(url, title, revision), "score": 0.0, "page": title,
            "sentences": [], "pool": "", "revision": revision}


def open_wikipedia_retriever(settings: RetrieverSettings) -> WikipediaRetriever:
    """Registry factory (``RETRIEVERS["wikipedia"]``): the wiki comes from the environment."""
    wiki_url()  # a malformed FACTDEBATE_MEDIAWIKI_URL is one line before any debate starts
    return WikipediaRetriever()


def shortcut_settings(rag_backend: str | None, search_backend: str | None) -> dict[str, str]:
    """The settings ``--wikipedia`` makes: ``rag_backend``/``search_backend`` (an explicit search
    backend is kept) and MERMAID's ``wiki_backend=mediawiki`` (a caller drops the fields its
    framework lacks); another explicit rag backend is refused.

    Raises:
        ConfigError: ``--rag-backend`` names another backend.
    """
    if rag_backend not in (None, NAME):
        raise ConfigError(f"--wikipedia sets rag_backend=wikipedia, but --rag-backend is "
                          f"{rag_backend!r}", "drop one of the two")
    search = search_backend or ("auto" if os.environ.get("TAVILY_API_KEY") else NAME)
    return {"rag_backend": NAME, "search_backend": search, "wiki_backend": "mediawiki"}


def live_sources(ctx: Any) -> dict[str, Any]:
    """The live wikis a run with Context ``ctx`` cites, recorded beside the index identity
    (``evaluation/index_identity.py``) so results say which wiki they cite: ``wikipedia``
    (:func:`describe_source`) when this backend is its rag or search backend, ``mediawiki`` (the
    wiki's URL) when MERMAID's wiki tools ask the MediaWiki API (``wiki_backend=mediawiki``, the
    same ``$FACTDEBATE_MEDIAWIKI_URL``); ``{}`` when neither. A text check's verifier settings
    count (:func:`factdebate.core.retrievers.used_backends`)."""
    from factdebate.core.retrievers import ONLINE_WIKI, RETRIEVERS, used_backends

    used = used_backends(ctx)
    sources: dict[str, Any] = {}
    if any(field != "wiki_backend" and RETRIEVERS.resolve(name) == NAME
           for field, name in used.items()):
        sources[NAME] = describe_source()
    if used.get("wiki_backend") == ONLINE_WIKI:
        sources[ONLINE_WIKI] = {"backend": ONLINE_WIKI, "wiki": mask_url(wiki_url()),
                                "searched_by": "MERMAID's wiki tools"}
    return sources
