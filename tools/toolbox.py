"""MERMAID's toolset (paper Table 5) as plain async functions, served by ``tools/mcp_server.py``.

The MCP server exposes exactly these functions; graph tests call them in process through the same
``ToolProvider`` interface (``tools/tool_providers.py``), so both paths run the same tool logic.

Wikipedia tools have two sources, chosen by ``wiki_backend``:

* a local corpus index (``keyword`` or ``milvus``, via ``get_retriever``; offline default).
  Corpus passages are ``{doc_id, title, text}``, so: *article* = every passage whose title equals
  the requested title (case, spacing and ``_`` ignored), in id order; *summary* = the article's
  first ``SUMMARY_SENTENCES``
  sentences; *sections* and *key facts* = the article split into sentences (the corpus has no
  section structure) - key facts ranked by word overlap with an optional topic; *related topics*
  = other titles found by searching with the article's first sentence.
* ``mediawiki``: the MediaWiki API (``FACTDEBATE_MEDIAWIKI_URL``, default en.wikipedia.org).

Web search goes through the ``Retriever`` interface (``tavily``, or the offline ``local_search``
stand-in); scholarly search uses OpenAlex (stands in for Google Scholar), paper search arXiv and
PubMed (``tools/web_apis.py``). Every function returns a list of ``Evidence``.

A title-based tool asked for an article that does not exist raises ``ArticleNotFound`` (the MCP
server turns it into an error result): it never answers with another article, which a
fact-checker would cite as if it were the one asked for.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from factdebate.core.state import Evidence
from factdebate.tools.base import RetrieverSettings, get_retriever
from factdebate.tools.mermaid_shapes import OFFLINE_TOOLS  # noqa: F401 - re-exported
from factdebate.tools.web_apis import ArxivClient, MediaWikiClient, OpenAlexClient, PubMedClient

SUMMARY_SENTENCES = 3
ARTICLE_SCAN = 50
"""Passages scanned for an article's chunks (a title query ranks them first)."""

TOOL_DESCRIPTIONS: dict[str, str] = {
    "search_wikipedia": "Search Wikipedia for articles matching a query.",
    "get_summary": "Get a summary of a Wikipedia article (input: the article title).",
    "get_sections": "Get the sections of a Wikipedia article (input: the article title).",
    "get_article": "Get the full content of a Wikipedia article (input: the article title).",
    "get_related_topics": "Get topics related to a Wikipedia article (input: the article title).",
    "extract_key_facts": "Extract key facts from a Wikipedia article (input: the article title).",
    "search_web": "Retrieve web search results for a given query.",
    "search_scholar": "Retrieve scholarly search results (titles and abstracts) for a query.",
    "search_arxiv": "Search academic papers from arXiv.",
    "search_pubmed": "Search academic papers from PubMed.",
}
"""Tool name -> description shown to the executor (paper Table 5; Google tools renamed)."""

ONLINE_ONLY_TOOLS = ("search_scholar", "search_arxiv", "search_pubmed")
"""Tools that always call a remote API (OpenAlex, arXiv, PubMed): they cannot work offline."""

PARAMETER_DESCRIPTIONS: dict[str, str] = {
    "query": "What to search for: keywords or a short question.",
    "title": "Exact title of the Wikipedia article (as search_wikipedia lists it).",
    "limit": "Most results to return (1-50).",
    "topic": "Optional topic: key facts are ranked by word overlap with it (empty = in order).",
    "count": "Most key facts to return (1-50).",
}
"""Parameter name -> description an MCP client shows (every toolbox parameter has one)."""


class ArticleNotFound(LookupError):
    """A title-based tool was asked for an article the corpus (or Wikipedia) does not have."""

    def __init__(self, title: str) -> None:
        """Name the missing title and how to find a real one."""
        super().__init__(f"no Wikipedia article titled {title!r}; use search_wikipedia to find "
                         "the exact title of an existing article")
        self.title = title


def same_title(a: str, b: str) -> bool:
    """Titles match ignoring case, spacing and ``_`` (``Eiffel_Tower`` = ``eiffel tower``)."""
    def norm(t: str) -> str:
        return " ".join(t.replace("_", " ").casefold().split())

    return norm(a) == norm(b)

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"\w+")


def sentences(text: str) -> list[str]:
    """Split text into sentences (a period, ! or ? followed by a capital or digit)."""
    return [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]


@dataclass(frozen=True)
class ToolboxSettings:
    """Where the tools read from."""

    retriever: RetrieverSettings
    """Index settings of the local corpus."""
    wiki_backend: str = "keyword"
    """``keyword`` / ``milvus`` (local corpus) or ``mediawiki`` (online API)."""
    web_backend: str = "local_search"
    """Retriever behind ``search_web``: ``tavily`` or ``local_search``."""


class Toolbox:
    """The tool functions over one set of settings (clients opened lazily, reused)."""

    def __init__(self, settings: ToolboxSettings) -> None:
        """Remember the settings; nothing is opened yet."""
        self.settings = settings
        self._wiki: MediaWikiClient | None = None
        self._clients: dict[str, object] = {}

    def functions(self) -> dict[str, Callable[..., Awaitable[list[Evidence]]]]:
        """Tool name -> bound async function."""
        return {name: getattr(self, name) for name in TOOL_DESCRIPTIONS}

    # -- local corpus helpers ---------------------------------------------------------------
    @property
    def online_wiki(self) -> bool:
        """True when the Wikipedia tools call the MediaWiki API."""
        return self.settings.wiki_backend == "mediawiki"

    async def _search(self, backend: str, query: str, k: int) -> list[Evidence]:
        retriever = await asyncio.to_thread(get_retriever, backend, self.settings.retriever)
        return await retriever.search(query, k=k)

    async def _article(self, title: str) -> list[Evidence]:
        """Every passage of the article titled ``title``; ``ArticleNotFound`` if there is none."""
        hits = await self._search(self.settings.wiki_backend, title, ARTICLE_SCAN)
        chunks = [h for h in hits if same_title(h["title"], title)]
        if not chunks:
            raise ArticleNotFound(title)
        return sorted(chunks, key=lambda h: h["id"])

    async def _page(self, title: str, *, intro: bool) -> Evidence:
        """The MediaWiki extract of ``title``; ``ArticleNotFound`` if the page does not exist."""
        page = await self._mediawiki().extract(title, intro=intro)
        if page is None:
            raise ArticleNotFound(title)
        return page

    def _mediawiki(self) -> MediaWikiClient:
        if self._wiki is None:
            self._wiki = MediaWikiClient()
        return self._wiki

    # -- Wikipedia tools --------------------------------------------------------------------
    async def search_wikipedia(self, query: str, limit: int = 5) -> list[Evidence]:
        """Articles matching ``query``."""
        if self.online_wiki:
            return await self._mediawiki().search(query, k=limit)
        return await self._search(self.settings.wiki_backend, query, limit)

    async def get_article(self, title: str) -> list[Evidence]:
        """The whole article (one evidence item)."""
        if self.online_wiki:
            return [await self._page(title, intro=False)]
        chunks = await self._article(title)
        text = " ".join(c["text"] for c in chunks)
        return [Evidence(id=chunks[0]["id"].split("#")[0], title=chunks[0]["title"], text=text,
                         source="article", url=chunks[0]["url"], score=chunks[0]["score"])]

    async def get_summary(self, title: str) -> list[Evidence]:
        """The article's lead: its first sentences."""
        if self.online_wiki:
            return [await self._page(title, intro=True)]
        article = await self.get_article(title)
        return [{**a, "text": " ".join(sentences(a["text"])[:SUMMARY_SENTENCES]),
                 "source": "summary"} for a in article]

    async def get_sections(self, title: str) -> list[Evidence]:
        """The article's sections (offline: its sentences, one item each)."""
        if self.online_wiki:
            await self._page(title, intro=True)  # a missing page is an error, not "no sections"
            lines = await self._mediawiki().sections(title)
            return [Evidence(id=f"{title}#{i}", title=title, text=line, source="sections",
                             url="", score=0.0) for i, line in enumerate(lines, 1)]
        return await self._sentences(title, "sections")

    async def extract_key_facts(self, title: str, topic: str = "", count: int = 5
                                ) -> list[Evidence]:
        """The article's sentences most related to ``topic`` (first ones without a topic)."""
        facts = await self._sentences(title, "key_facts")
        if topic:
            words = set(_WORD.findall(topic.lower()))
            facts = sorted(facts, key=lambda f: -len(words & set(_WORD.findall(f["text"].lower()))))
        return facts[:count]

    async def get_related_topics(self, title: str, limit: int = 5) -> list[Evidence]:
        """Other articles related to ``title``."""
        if self.online_wiki:
            await self._page(title, intro=True)
            names = await self._mediawiki().links(title, k=limit)
            return [Evidence(id=n, title=n, text=f"Related to {title}: {n}", source="related",
                             url="", score=0.0) for n in names]
        article = await self.get_article(title)
        lead = sentences(article[0]["text"])[0]
        hits = await self._search(self.settings.wiki_backend, lead, limit + ARTICLE_SCAN // 5)
        seen = {article[0]["title"].casefold()}
        out = []
        for h in hits:
            if h["title"].casefold() not in seen:
                seen.add(h["title"].casefold())
                out.append({**h, "text": sentences(h["text"])[0], "source": "related"})
        return out[:limit]

    async def _sentences(self, title: str, source: str) -> list[Evidence]:
        if self.online_wiki:
            article = [await self._page(title, intro=False)]
        else:
            article = await self.get_article(title)
        return [Evidence(id=f"{a['id']}:s{i}", title=a["title"], text=s, source=source,
                         url=a["url"], score=0.0)
                for a in article for i, s in enumerate(sentences(a["text"]), 1)]

    # -- web and scholarly tools ------------------------------------------------------------
    async def search_web(self, query: str, limit: int = 5) -> list[Evidence]:
        """Web search results (Tavily, or the offline stand-in)."""
        return await self._search(self.settings.web_backend, query, limit)

    async def search_scholar(self, query: str, limit: int = 5) -> list[Evidence]:
        """OpenAlex works: title, year, abstract."""
        return await self._client(OpenAlexClient).search(query, k=limit)

    async def search_arxiv(self, query: str, limit: int = 5) -> list[Evidence]:
        """arXiv papers: title, abstract."""
        return await self._client(ArxivClient).search(query, k=limit)

    async def search_pubmed(self, query: str, limit: int = 5) -> list[Evidence]:
        """PubMed articles: title, abstract."""
        return await self._client(PubMedClient).search(query, k=limit)

    def _client(self, cls: type) -> OpenAlexClient | ArxivClient | PubMedClient:
        if cls.__name__ not in self._clients:
            self._clients[cls.__name__] = cls()
        return self._clients[cls.__name__]  # type: ignore[return-value]
