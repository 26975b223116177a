"""The one retriever interface every debater tool implements (STYLE.md §6).

A backend is registered by name in ``RETRIEVERS`` (``factdebate.core.retrievers``) with a
factory ``(settings) -> Retriever``; the SDK behind it is imported lazily inside the factory, so
an unused backend costs nothing and a missing one fails only when asked for. ``get_retriever``
caches one instance per (backend, settings) for the life of the process: indexes and HTTP
clients are opened once, not per call.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from factdebate.core.caching import ProcessCache
from factdebate.core.retrievers import RETRIEVERS
from factdebate.core.state import Evidence


@runtime_checkable
class Retriever(Protocol):
    """Anything that answers a query with ranked passages."""

    name: str
    """Backend name as registered (``milvus``, ``keyword``, ``tavily``, ``local_search``)."""

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Top-``k`` passages for ``query``, best first."""
        ...


@dataclass(frozen=True)
class RetrieverSettings:
    """What a factory needs to open a backend; hashable so instances can be cached."""

    index_dir: str
    """Folder written by ``factdebate index`` (keyword index lives in ``<index_dir>/keyword``)."""
    milvus_uri: str
    """Milvus Lite folder or server URI."""
    embedding_model: str = "minilm"
    """Embedding spec (``minilm`` or ``openai:<model>``)."""
    collection: str = "factdebate_passages"
    """Milvus collection name."""
    langchain_factory: str = ""
    """``module:callable`` returning a LangChain retriever or vector store (backend ``langchain``)."""
    pool: str = ""
    """Knowledge-store pool to search (an AVeriTeC claim id): ``milvus``, ``keyword`` and
    ``local_search`` then return only passages of that pool; ``""`` searches every passage."""


RetrieverFactory = Callable[[RetrieverSettings], Retriever]
"""What a ``RETRIEVERS`` entry (``factdebate.core.retrievers``, re-exported here) resolves to."""


def _close(retriever: Retriever) -> None:
    close = getattr(retriever, "close", None)
    if callable(close):
        close()


# get() builds under a re-entrant lock: a composite backend (hybrid) opens others meanwhile
_retrievers: ProcessCache[tuple[str, RetrieverSettings], Retriever] = ProcessCache(
    "retrievers", on_clear=_close)


def get_retriever(name: str, settings: RetrieverSettings) -> Retriever:
    """The process-wide instance of backend ``name`` for ``settings`` (opened on first use)."""
    canonical = RETRIEVERS.resolve(name)
    return _retrievers.get((canonical, settings), lambda: RETRIEVERS.get(canonical)(settings))


def cached_retriever(name: str, settings: RetrieverSettings) -> Retriever | None:
    """The instance ``get_retriever`` already opened, or None - never opens anything (cheap).

    Nodes ask this first on the event loop and go to a worker thread only on a miss, since
    opening may block (index files, models): a thread round trip for every search cost ~1% of a
    Tool-MAD claim's CPU in a py-spy profile of ``eval --workers``.
    """
    return _retrievers.peek((RETRIEVERS.resolve(name), settings))


def clear_retriever_cache() -> None:
    """Forget opened backends (tests that rebuild an index in the same process)."""
    _retrievers.clear()


async def run_blocking(fn: Callable[..., list[Evidence]], *args: object) -> list[Evidence]:
    """Run a blocking backend call off the event loop (keeps parallel debaters parallel)."""
    return await asyncio.to_thread(fn, *args)


class PooledRetriever:
    """One knowledge-store pool of an opened retriever: every search is limited to ``pool``.

    Opened per claim (``RetrieverSettings.pool``) but cheap: it shares the index (and, for Milvus,
    the client) of the unfiltered retriever, which stays open in the process cache.
    """

    def __init__(self, base: Any, pool: str) -> None:
        self.base, self.pool, self.name = base, pool, base.name
        self._async_pool = "pool" in inspect.signature(base.search).parameters

    def search_sync(self, query: str, k: int) -> list[Evidence]:
        """Blocking search of the pool."""
        return self.base.search_sync(query, k, self.pool)

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Top-``k`` passages of the pool for ``query``, best first (off the event loop)."""
        if self._async_pool:  # the base embeds on the loop's side (MilvusRetriever.search)
            return await self.base.search(query, k=k, pool=self.pool)
        return await run_blocking(self.search_sync, query, k)


def pooled(name: str, settings: RetrieverSettings) -> PooledRetriever:
    """The ``settings.pool`` view of backend ``name`` opened without a pool (registry factories)."""
    return PooledRetriever(get_retriever(name, replace(settings, pool="")), settings.pool)
