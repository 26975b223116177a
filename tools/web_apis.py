"""HTTP clients of the online tools MERMAID's executor can call: MediaWiki, OpenAlex, arXiv, PubMed.

Each client is a small ``httpx`` wrapper whose base URL comes from an environment variable (so
tests point it at a local HTTP server and deployments at a mirror) and whose results are mapped
onto ``Evidence``. A non-2xx reply raises ``httpx.HTTPStatusError``; the MCP server turns that into
a tool error, which the executor records as a fault (it never crashes the run).

==================  ==============================  ============================================
client              env var (base URL override)     default
==================  ==============================  ============================================
``MediaWikiClient`` ``FACTDEBATE_MEDIAWIKI_URL``    https://en.wikipedia.org/w/api.php
``OpenAlexClient``  ``FACTDEBATE_OPENALEX_URL``     https://api.openalex.org
``ArxivClient``     ``FACTDEBATE_ARXIV_URL``        https://export.arxiv.org/api/query
``PubMedClient``    ``FACTDEBATE_PUBMED_URL``       https://eutils.ncbi.nlm.nih.gov/entrez/eutils
==================  ==============================  ============================================

Every live source (these clients, and live Wikipedia's retriever built on ``MediaWikiClient``) goes
through :meth:`_Client._get`, which bounds what the outside can cost:

* **reply size**: the client is ``core/bounded_http``'s: the body is counted *after*
  decompression (decoded there in bounded steps); past ``FACTDEBATE_LIVE_MAX_REPLY_BYTES``
  (:data:`DEFAULT_MAX_REPLY_BYTES`, 8 MiB) reading stops and :class:`ReplyTooLarge` is raised - a
  tool fault of that turn, never a process that grows (a gzip bomb stops at the same count of
  decoded bytes, a reply announced larger before a byte of it is read);
* **redirects**: followed (at most :data:`MAX_REDIRECTS`) only to the scheme, host and port of the
  configured base URL; a redirect anywhere else is refused with :class:`RedirectRefused` before
  any request is sent there, so a claim's text and the contact in the ``User-Agent`` never reach
  another host or port;
* **time**: each request's timeout (``TIMEOUT_S`` or the caller's), the whole search bounded by
  the run's ``tool_timeout_s``.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any

import httpx

from factdebate.core import input_limits
from factdebate.core.bounded_http import ReplyTooLarge, bounded_async_client  # noqa: F401 - re-exported
from factdebate.core.settings import mask_url
from factdebate.core.state import Evidence

USER_AGENT = "factdebate/0.1 (claim verification research; MERMAID tools)"
TIMEOUT_S = 20.0
DEFAULT_MAX_REPLY_BYTES = input_limits.LIMITS_BY_NAME["live_reply_bytes"].default
"""Largest decoded reply body of a live source (a whole Wikipedia article's JSON is well under
1 MiB; the longest pages' extracts stay under 2 MiB), as ``core/input_limits`` states it."""
MAX_REDIRECTS = input_limits.LIMITS_BY_NAME["live_redirects"].default
"""Redirects followed, each only within the configured base URL's scheme, host and port."""


class RedirectRefused(RuntimeError):
    """A live source redirected to another scheme, host or port; it was not followed."""


def max_reply_bytes() -> int:
    """The reply limit now (``core/input_limits``: ``FACTDEBATE_LIVE_MAX_REPLY_BYTES``).

    Raises:
        ConfigError: The setting is not a positive integer.
    """
    return input_limits.limit("live_reply_bytes")


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port
_ATOM = {"a": "http://www.w3.org/2005/Atom"}


def _evidence(id_: str, title: str, text: str, source: str, url: str = "", score: float = 0.0
              ) -> Evidence:
    return Evidence(id=str(id_), title=title or "", text=" ".join((text or "").split()),
                    source=source, url=url or "", score=float(score))


class _Client:
    """Shared part: base URL from the environment, one ``httpx.AsyncClient``, status checks."""

    env_var = ""
    default_url = ""
    source = ""

    def __init__(self, base_url: str | None = None, *, timeout: float = TIMEOUT_S) -> None:
        self.base_url = (base_url or os.environ.get(self.env_var) or self.default_url).rstrip("/")
        self._http = bounded_async_client("live_reply_bytes", timeout=timeout,
                                          headers={"User-Agent": USER_AGENT},
                                          follow_redirects=False)

    async def _get(self, path: str, params: dict[str, Any]) -> httpx.Response:
        """GET ``path`` under the base URL: redirects only within its origin, the body capped
        (see the module docstring); a non-2xx reply raises ``httpx.HTTPStatusError``."""
        url = f"{self.base_url}/{path}" if path else self.base_url
        max_reply_bytes()  # a bad setting is one ConfigError before any request
        request = self._http.build_request("GET", url, params=params)
        home = _origin(request.url)
        try:
            for _ in range(MAX_REDIRECTS + 1):
                response = await self._http.send(request)  # the body bounded by the client
                if not response.is_redirect:
                    break
                target = response.next_request
                if target is None or _origin(target.url) != home:
                    where = f"{target.url.scheme}://{target.url.host}:{target.url.port or ''}" \
                        if target is not None else "nowhere"
                    raise RedirectRefused(
                        f"{mask_url(self.base_url)} redirected to {mask_url(where)}: only redirects "
                        "within the configured URL's host and port are followed")
                request = target
            else:
                raise RedirectRefused(f"{mask_url(self.base_url)} redirected more than "
                                      f"{MAX_REDIRECTS} times")
            response.raise_for_status()
        except httpx.HTTPStatusError as exc:  # its text names the URL: an operator's mirror
            raise httpx.HTTPStatusError(mask_url(str(exc)), request=exc.request,
                                        response=exc.response) from None
        except httpx.RequestError as exc:
            raise type(exc)(mask_url(str(exc)), request=exc.request) from None
        return response

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()


class MediaWikiClient(_Client):
    """The MediaWiki action API (Wikipedia's by default)."""

    env_var = "FACTDEBATE_MEDIAWIKI_URL"
    default_url = "https://en.wikipedia.org/w/api.php"
    source = "mediawiki"

    async def _query(self, **params: Any) -> dict[str, Any]:
        params |= {"format": "json", "formatversion": 2}
        return (await self._get("", params)).json()

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Pages matching ``query`` (title + search snippet)."""
        data = await self._query(action="query", list="search", srsearch=query, srlimit=k)
        return [
            _evidence(hit.get("pageid", hit["title"]), hit["title"],
                      _strip_tags(hit.get("snippet", "")), self.source, _page_url(hit["title"]))
            for hit in data.get("query", {}).get("search", [])
        ]

    async def extract(self, title: str, *, intro: bool) -> Evidence | None:
        """Plain-text extract of a page (lead section only when ``intro``); None if missing."""
        params: dict[str, Any] = {"action": "query", "prop": "extracts", "explaintext": 1,
                                  "titles": title, "redirects": 1}
        if intro:
            params["exintro"] = 1
        pages = (await self._query(**params)).get("query", {}).get("pages", [])
        page = pages[0] if pages else {}
        if not page or page.get("missing") or not page.get("extract"):
            return None
        return _evidence(page.get("pageid", title), page["title"], page["extract"], self.source,
                         _page_url(page["title"]))

    async def sections(self, title: str) -> list[str]:
        """Section headings of a page."""
        data = await self._query(action="parse", page=title, prop="sections", redirects=1)
        return [s.get("line", "") for s in data.get("parse", {}).get("sections", [])]

    async def links(self, title: str, *, k: int) -> list[str]:
        """Titles of pages linked from ``title`` (related topics)."""
        data = await self._query(action="query", prop="links", titles=title, pllimit=k,
                                 plnamespace=0, redirects=1)
        pages = data.get("query", {}).get("pages", [])
        return [link["title"] for page in pages for link in page.get("links", [])][:k]


class OpenAlexClient(_Client):
    """Scholarly search over OpenAlex works (stands in for the paper's Google Scholar tool)."""

    env_var = "FACTDEBATE_OPENALEX_URL"
    default_url = "https://api.openalex.org"
    source = "openalex"

    async def search(self, query: str, *, k: int, filters: str = "") -> list[Evidence]:
        """Works matching ``query``: title, year and abstract (rebuilt from the inverted index).

        ``filters`` is OpenAlex's ``filter`` parameter, e.g. ``has_abstract:true``.
        """
        params: dict[str, Any] = {"search": query, "per-page": k}
        if filters:
            params["filter"] = filters
        data = (await self._get("works", params)).json()
        out = []
        for work in data.get("results", [])[:k]:
            abstract = rebuild_abstract(work.get("abstract_inverted_index"))
            year = work.get("publication_year")
            text = f"({year}) {abstract}" if year and abstract else abstract
            out.append(_evidence(work.get("id", ""), work.get("display_name") or "", text,
                                 self.source, work.get("doi") or work.get("id", ""),
                                 work.get("relevance_score") or 0.0))
        return out


def rebuild_abstract(inverted: dict[str, list[int]] | None) -> str:
    """OpenAlex stores abstracts as ``word -> positions``; put the words back in order."""
    if not inverted:
        return ""
    slots = {pos: word for word, positions in inverted.items() for pos in positions}
    return " ".join(slots[i] for i in sorted(slots))


class ArxivClient(_Client):
    """The arXiv query API (Atom feed)."""

    env_var = "FACTDEBATE_ARXIV_URL"
    default_url = "https://export.arxiv.org/api/query"
    source = "arxiv"

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Papers matching ``query``: title and abstract."""
        response = await self._get("", {"search_query": f"all:{query}", "start": 0,
                                        "max_results": k})
        root = ET.fromstring(response.content)
        out = []
        for entry in root.findall("a:entry", _ATOM)[:k]:
            link = entry.findtext("a:id", "", _ATOM)
            out.append(_evidence(link, entry.findtext("a:title", "", _ATOM),
                                 entry.findtext("a:summary", "", _ATOM), self.source, link))
        return out


class PubMedClient(_Client):
    """PubMed through NCBI E-utilities: ``esearch`` for ids, ``efetch`` for abstracts."""

    env_var = "FACTDEBATE_PUBMED_URL"
    default_url = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    source = "pubmed"

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Articles matching ``query``: title and abstract."""
        found = (await self._get("esearch.fcgi", {"db": "pubmed", "term": query, "retmax": k,
                                                  "retmode": "json"})).json()
        ids = found.get("esearchresult", {}).get("idlist", [])[:k]
        if not ids:
            return []
        response = await self._get("efetch.fcgi", {"db": "pubmed", "id": ",".join(ids),
                                                   "retmode": "xml", "rettype": "abstract"})
        root = ET.fromstring(response.content)
        out = []
        for article in root.iter("PubmedArticle"):
            pmid = article.findtext(".//PMID", "")
            abstract = " ".join("".join(node.itertext()) for node in article.iter("AbstractText"))
            out.append(_evidence(pmid, "".join(article.find(".//ArticleTitle").itertext())
                                 if article.find(".//ArticleTitle") is not None else "",
                                 abstract, self.source,
                                 f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/"))
        return out


def _page_url(title: str) -> str:
    return "https://en.wikipedia.org/wiki/" + title.replace(" ", "_")


def _strip_tags(html: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", html)
