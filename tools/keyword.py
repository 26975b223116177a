"""BM25 keyword retrieval over the tantivy index written by ``factdebate index``.

The index lives in ``<index_dir>/keyword`` and holds the same passages as the vector index. Two
backends read it:

* ``keyword`` (source ``"keyword"``): a lexical retriever for ``rag`` debaters (``--rag-backend
  keyword``), or a cheap baseline.
* ``local_search`` (source ``"local_search"``): the **offline stand-in for web search**. Tool-MAD's
  ``search`` debater queries Tavily; with no network (or no ``TAVILY_API_KEY``) it queries this
  index instead, so the two debaters still see different retrieval behaviour (dense vs lexical)
  although both read the local corpus. Results carry ``source="local_search"`` so every output
  can say that web search was simulated.

Besides ``id``, ``title``, ``text`` and ``url`` every passage keeps ``page`` (the page id as the
dataset's gold evidence names it), ``sentences`` (the element ids it holds, stored as JSON bytes,
not indexed) and ``pool`` (an AVeriTeC claim id, indexed raw): a retriever opened with
``RetrieverSettings.pool`` answers only from that pool (``tools/base.PooledRetriever``). An index built
before these fields existed opens as before; its passages read with ``page`` = ``""``.

Claim text is never handed to tantivy's query language raw: :func:`sanitize_query` reduces it to
lower-cased word tokens, each quoted, so quotes, colons, parentheses, ``AND``/``OR``/``NOT``,
``+``/``-``/``*``/``~``/``^`` in a claim cannot raise a parse error or change the query's meaning.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factdebate.core.errors import BackendUnavailableError, ConfigError, IndexDamagedError
from factdebate.core.state import Evidence
from factdebate.tools import index_lock
from factdebate.tools.base import PooledRetriever, RetrieverSettings, pooled, run_blocking

if TYPE_CHECKING:
    import tantivy

KEYWORD_SUBDIR = "keyword"
"""Sub-folder of the index folder that holds the tantivy index."""
TITLE_BOOST = 2.0
"""A query word in the title counts double: lead-section passages often say "it", not the name."""
MAX_QUERY_TERMS = 64
"""Longer queries are cut: BM25 over 64 distinct words already ranks well and stays sub-ms."""
_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # alphanumeric runs, as tantivy's default tokenizer


def sanitize_query(text: str) -> str:
    """Turn arbitrary text into a tantivy query that cannot fail to parse.

    Args:
        text: Claim or query text, possibly with query-language syntax in it.

    Returns:
        Space-separated quoted lower-case words (an OR of terms), ``""`` if ``text`` has no word.
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        seen.setdefault(word, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return " ".join(f'"{word}"' for word in seen)


def keyword_schema() -> tantivy.Schema:
    """Schema of the keyword index: stored raw id, BM25 title and body."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("title", stored=True)
    builder.add_text_field("body", stored=True)
    builder.add_text_field("url", stored=True, index_option="basic", tokenizer_name="raw")
    builder.add_text_field("page", stored=True, index_option="basic", tokenizer_name="raw")
    builder.add_bytes_field("sentences", stored=True, indexed=False)
    builder.add_text_field("pool", stored=True, index_option="basic", tokenizer_name="raw")
    return builder.build()


def keyword_document(p: dict[str, Any]) -> tantivy.Document:
    """The tantivy document of passage ``p`` (``page``/``sentences``/``pool`` optional)."""
    import tantivy

    return tantivy.Document(
        id=p["id"], title=p["title"], body=p["text"], url=p.get("url") or "",
        page=p.get("page") or "", pool=p.get("pool") or "",
        sentences=encode_sentences(p.get("sentences")).encode())


def encode_sentences(sentences: list[Any] | None) -> str:
    """The stored form of a passage's element ids: a compact JSON list (``""`` for none)."""
    if not sentences:
        return ""
    if all(type(s) is int for s in sentences):  # FEVER / HoVer numbers: the common, fast case
        return "[" + ",".join(map(str, sentences)) + "]"
    return json.dumps(sentences, separators=(",", ":"))


def write_keyword_index(path: Path, passages: Iterable[dict[str, str]]) -> int:
    """Create a fresh tantivy index at ``path`` holding ``passages``.

    Args:
        path: Empty or missing folder to write into.
        passages: Dicts with ``id``, ``title``, ``text`` and optional ``url``.

    Returns:
        Number of documents written.
    """
    import tantivy

    path.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(keyword_schema(), path=str(path))
    # One writer thread: builds are I/O-light and this keeps memory predictable on 2 cores.
    writer = index.writer(heap_size=128_000_000, num_threads=1)
    count = 0
    for p in passages:
        writer.add_document(keyword_document(p))
        count += 1
    writer.commit()
    writer.wait_merging_threads()
    return count


class KeywordRetriever:
    """BM25 over ``<index_dir>/keyword``; one reader and searcher reused for every query."""

    def __init__(self, index_dir: str | Path, *, name: str = "keyword") -> None:
        """Open the index read-only.

        Args:
            index_dir: Folder written by ``factdebate index``.
            name: Backend name, also used as the evidence ``source``.

        Raises:
            BackendUnavailableError: No keyword index in ``index_dir``.
        """
        import tantivy

        self.name = name
        self.path = Path(index_dir).expanduser() / KEYWORD_SUBDIR
        if not (self.path / "meta.json").is_file():
            raise BackendUnavailableError(
                f"no keyword index at {self.path}", "run: factdebate index CORPUS.jsonl"
            )
        try:
            self._index = tantivy.Index.open(str(self.path))
            self._searcher: Any = self._index.searcher()
        except ValueError as exc:  # tantivy reports corrupt or foreign folders as ValueError
            raise self._damaged(f"it cannot be opened ({exc})") from exc
        if self._searcher.num_docs == 0:  # `factdebate index` never writes an empty index
            raise self._damaged("it holds no passages")
        self._lock = threading.Lock()
        self._has_pools: bool | None = None

    def _damaged(self, why: str) -> IndexDamagedError:
        return IndexDamagedError(
            f"keyword index at {self.path} is damaged: {why}",
            f"rebuild it: factdebate index CORPUS.jsonl --index-dir {self.path.parent} --replace")

    def search_sync(self, query: str, k: int, pool: str = "") -> list[Evidence]:
        """Blocking search: top-``k`` passages for ``query`` by BM25, best first.

        Args:
            query: Free text (sanitised, see :func:`sanitize_query`).
            k: Passages wanted.
            pool: Only passages of this knowledge-store pool (``""``: every passage).
        """
        import tantivy

        if self._searcher is None:
            raise BackendUnavailableError(f"keyword retriever on {self.path} is closed")
        text = sanitize_query(query)
        if not text or k < 1:
            return []
        parsed = self._index.parse_query(
            text, ["title", "body"], field_boosts={"title": TITLE_BOOST}
        )
        if pool:
            if not self.has_pools:
                raise ConfigError(f"keyword index at {self.path} has no knowledge-store pools",
                                  "build it from a store: factdebate index STORE --format "
                                  "averitec-store")
            in_pool = tantivy.Query.term_query(self._index.schema, "pool", pool)
            parsed = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, parsed), (tantivy.Occur.Must, in_pool)])
        # The searcher is shared by the debaters' threads; tantivy's is thread-safe, but the
        # lock keeps doc fetches of one query together and costs nothing at sub-ms latency.
        with self._lock:
            try:
                hits = self._searcher.search(parsed, limit=k).hits
                docs = [(score, self._searcher.doc(address)) for score, address in hits]
            except ValueError as exc:  # tantivy's "Data corrupted" (a segment file gone)
                raise self._damaged(f"a search failed ({str(exc)[:200]})") from exc
        return [self._evidence(score, doc) for score, doc in docs]

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Top-``k`` passages for ``query``, best first (runs off the event loop)."""
        return await run_blocking(self.search_sync, query, k)

    def close(self) -> None:
        """Release the searcher (tantivy frees files when the objects are collected)."""
        self._searcher = None

    def _evidence(self, score: float, doc: Any) -> Evidence:
        def first(field: str) -> Any:
            try:
                values = doc.get_all(field)
            except ValueError:  # a field an older index does not have
                return ""
            return values[0] if values else ""

        sentences = first("sentences")
        return Evidence(  # type: ignore[typeddict-unknown-key]  # the passage contract's keys
            id=str(first("id")), title=str(first("title")), text=str(first("body")),
            source=self.name, url=str(first("url")), score=float(score), page=str(first("page")),
            sentences=json.loads(bytes(sentences)) if sentences else [], pool=str(first("pool")),
        )

    @property
    def has_pools(self) -> bool:
        """True when the index holds knowledge-store passages (an AVeriTeC store's)."""
        if self._has_pools is None:
            import tantivy

            try:
                query = tantivy.Query.regex_query(self._index.schema, "pool", ".+")
                self._has_pools = self._searcher.search(query, limit=1).count > 0
            except ValueError:  # an index built before the pool field existed
                self._has_pools = False
        return self._has_pools


def open_keyword_retriever(settings: RetrieverSettings) -> KeywordRetriever | PooledRetriever:
    """Registry factory for ``keyword``: BM25 over ``<index_dir>/keyword`` (one pool of it)."""
    if settings.pool:
        return pooled("keyword", settings)
    retriever = KeywordRetriever(settings.index_dir, name="keyword")
    index_lock.hold_shared(settings.index_dir)
    return retriever


def open_local_search(settings: RetrieverSettings) -> KeywordRetriever | PooledRetriever:
    """Registry factory for ``local_search``: the offline stand-in for web search.

    Same index and ranking as ``keyword``; only the name and the evidence ``source`` differ, so
    results show that a web search was simulated with the local corpus.
    """
    if settings.pool:
        return pooled("local_search", settings)
    retriever = KeywordRetriever(settings.index_dir, name="local_search")
    index_lock.hold_shared(settings.index_dir)
    return retriever
