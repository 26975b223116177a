"""Any LangChain retriever or vector store as a debater's tool (backend ``langchain``).

The operator names a factory, ``module:callable`` (Context ``langchain_factory``,
``$FACTDEBATE_LANGCHAIN_FACTORY``); it is imported and called once per process with no
arguments and returns a ``langchain_core`` ``BaseRetriever`` or ``VectorStore`` - a user's
existing index: a ``langchain_milvus.Milvus`` collection, Chroma, PGVector, Elasticsearch, an
``InMemoryVectorStore`` or a retriever of their own. The factory runs code of the operator's
choosing, so the field is operator-only: a server's clients cannot set it (``core/context.py``).

A vector store is searched with ``similarity_search_with_score`` (the store's own score: cosine
similarity for Milvus' COSINE metric and the in-memory store, a distance for others), falling back
to ``similarity_search`` where a store has no scores; a retriever is ``invoke``d (a
``VectorStoreRetriever`` is asked for ``k`` passages, any other one returns what it returns and
the first ``k`` are kept). Each ``Document`` becomes an ``Evidence`` passage:

* ``id``: ``Document.id``, else metadata ``id``/``doc_id``/``pk``, else ``source`` (with
  ``start_index`` or ``page`` when present), else a hash of the text - stable across queries, so
  citations and the evidence metrics key on it as for the built-in tools;
* ``title``: metadata ``title``, else the file name of ``source``, else the text's opening words;
* ``url``: metadata ``url``, else an ``http(s)`` ``source``;
* ``score``: the store's score, or metadata ``score``/``relevance_score``, else 0.

A collection written by ``factdebate index`` opens in ``langchain_milvus.Milvus`` unchanged
(``text`` is its text field, ``vector`` its vector field; ``id``, ``title`` and ``url`` come back
as metadata); pass ``primary_field="id"`` for the calls that address rows by key (``get_pks``,
``delete``, ``upsert``) - see docs/deployment.md, "Scaling out".
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import PurePath
from typing import Any

from factdebate.core.errors import BackendUnavailableError, ConfigError
from factdebate.core.state import Evidence
from factdebate.tools.base import RetrieverSettings, run_blocking

SOURCE = "langchain"
_ID_KEYS = ("id", "doc_id", "pk")
_SCORE_KEYS = ("score", "relevance_score")


def load_factory_target(spec: str) -> Any:
    """Import ``module:callable``, call it, and check that it returned a retriever or store.

    Raises:
        ConfigError: No factory set, a malformed spec, a module or name that does not import, or
            a return value that is neither a ``BaseRetriever`` nor a ``VectorStore``.
        BackendUnavailableError: The factory itself raised (its index could not be opened).
    """
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.vectorstores import VectorStore

    remedy = ("set langchain_factory (FACTDEBATE_LANGCHAIN_FACTORY) to module:callable, a "
              "function returning a LangChain BaseRetriever or VectorStore")
    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        what = "is not set" if not spec.strip() else f"{spec!r} is not of the form module:callable"
        raise ConfigError(f"the langchain retriever backend needs a factory: langchain_factory {what}",
                          remedy)
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"langchain_factory {spec!r} does not import ({type(exc).__name__}: "
                          f"{_first_line(exc)})", remedy) from exc
    if not callable(factory):
        raise ConfigError(f"langchain_factory {spec!r} is not callable", remedy)
    try:
        target = factory()
    except Exception as exc:
        raise BackendUnavailableError(
            f"langchain_factory {spec!r} failed ({type(exc).__name__}: {_first_line(exc)})",
            "check the index or service that factory opens") from exc
    if not isinstance(target, BaseRetriever | VectorStore):
        raise ConfigError(f"langchain_factory {spec!r} returned a {type(target).__name__}, not a "
                          "LangChain BaseRetriever or VectorStore", remedy)
    return target


class LangChainRetriever:
    """A LangChain ``BaseRetriever`` or ``VectorStore`` behind the ``Retriever`` interface."""

    name = SOURCE

    def __init__(self, target: Any, spec: str = "") -> None:
        """Wrap ``target`` (a ``BaseRetriever`` or ``VectorStore``); ``spec`` names it in errors."""
        self.target = target
        self.spec = spec or type(target).__name__

    def search_sync(self, query: str, k: int) -> list[Evidence]:
        """Blocking search: the ``k`` best passages for ``query``, best first."""
        from langchain_core.vectorstores import VectorStore

        if k < 1 or not query.strip():
            return []
        try:
            if isinstance(self.target, VectorStore):
                pairs = self._store_search(query, k)
            else:
                pairs = [(doc, None) for doc in self._retriever_search(query, k)]
        except Exception as exc:
            failure = BackendUnavailableError(
                f"langchain retriever {self.spec!r} failed to search ({type(exc).__name__}: "
                f"{_first_line(exc)})", "check the index or service its factory opens")
            failure.retryable = True  # type: ignore[attr-defined]  # retried, then a tool fault
            raise failure from exc
        return [to_evidence(doc, score) for doc, score in pairs[:k]]

    def _store_search(self, query: str, k: int) -> list[tuple[Any, float | None]]:
        try:
            return list(self.target.similarity_search_with_score(query, k=k))
        except NotImplementedError:
            return [(doc, None) for doc in self.target.similarity_search(query, k=k)]

    def _retriever_search(self, query: str, k: int) -> list[Any]:
        from langchain_core.vectorstores import VectorStoreRetriever

        if isinstance(self.target, VectorStoreRetriever):
            return list(self.target.invoke(query, k=k))
        return list(self.target.invoke(query))

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Top-``k`` passages for ``query``, best first (runs off the event loop)."""
        return await run_blocking(self.search_sync, query, k)


def to_evidence(doc: Any, score: float | None = None) -> Evidence:
    """A LangChain ``Document`` as an ``Evidence`` passage (see the module docstring)."""
    meta = dict(doc.metadata or {})
    text = doc.page_content or ""
    source = str(meta.get("source") or "")
    doc_id = getattr(doc, "id", None) or next(
        (meta[key] for key in _ID_KEYS if meta.get(key) not in (None, "")), None)
    if doc_id is None and source:
        part = meta.get("start_index", meta.get("page"))
        doc_id = source if part is None else f"{source}#{part}"
    if doc_id is None:
        doc_id = "lc-" + hashlib.sha1(text.encode()).hexdigest()[:16]
    title = str(meta.get("title") or (PurePath(source).name if source else "")
                or " ".join(text.split()[:8]))
    url = str(meta.get("url") or (source if source.startswith(("http://", "https://")) else ""))
    if score is None:
        score = next((meta[key] for key in _SCORE_KEYS if isinstance(meta.get(key), int | float)),
                     0.0)
    return Evidence(id=str(doc_id), title=title, text=text, source=SOURCE, url=url,
                    score=float(score))


def open_langchain_retriever(settings: RetrieverSettings) -> LangChainRetriever:
    """Registry factory for ``langchain``: the operator's factory, called once per process."""
    return LangChainRetriever(load_factory_target(settings.langchain_factory),
                              settings.langchain_factory)


def _first_line(exc: BaseException, limit: int = 200) -> str:
    return (str(exc).splitlines() or [""])[0][:limit]
