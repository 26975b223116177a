"""The retriever backend registry: names in the core, implementations in ``factdebate.tools``.

``Context.validate`` checks ``rag_backend``/``search_backend`` against these names without
importing the tools layer; each entry is a lazy ``"module:attr"`` factory that
``factdebate.tools.base.get_retriever`` imports on first use (STYLE.md §8). A backend added later
registers here (or, from a plug-in or a test, with ``RETRIEVERS.register`` at import time).

**Which runs read the local index folder.** Each entry declares ``reads_local_index``: True for
the backends that search the folder ``factdebate index`` builds (``milvus``, ``keyword``,
``local_search``, ``hybrid``), False for those that ask a service or an index of the user's own
(``tavily``, ``openalex``, ``langchain``, ``wikipedia``, the ``static`` test double). A plug-in
that does not declare it is assumed to read the folder: a run that does is checked (or given the
demo index) before it starts, which costs a run that does not only that check, while the
opposite mistake fails in the middle of a run. :func:`reads_local_index` applies these
declarations to a run's Context; ``verify``, ``check``, ``eval`` and a graph run from Python
(``graphs/first_use.py``) all ask it whether to check, choose or build an index at all.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from factdebate.core.registry import Registry

RETRIEVERS: Registry[Callable[[Any], Any]] = Registry("retriever backend")
"""Backend name -> factory ``(RetrieverSettings) -> Retriever``; importing it imports no SDK."""

RETRIEVERS.register("milvus", "factdebate.tools.milvus_rag:open_milvus_retriever", aliases=("rag",),
                    reads_local_index=True)
RETRIEVERS.register("keyword", "factdebate.tools.keyword:open_keyword_retriever",
                    reads_local_index=True)
RETRIEVERS.register("local_search", "factdebate.tools.keyword:open_local_search",
                    reads_local_index=True)
RETRIEVERS.register("tavily", "factdebate.tools.tavily_search:open_tavily_retriever", aliases=("web",),
                    reads_local_index=False)
RETRIEVERS.register("hybrid", "factdebate.tools.hybrid:open_hybrid_retriever",
                    reads_local_index=True)
RETRIEVERS.register("openalex", "factdebate.tools.openalex:open_openalex_retriever",
                    reads_local_index=False)
RETRIEVERS.register("static", "factdebate.testing.retrievers:open_static_retriever",
                    test_double=True, reads_local_index=False)  # four fixed passages, for tests
RETRIEVERS.register("langchain", "factdebate.tools.langchain_retriever:open_langchain_retriever",
                    reads_local_index=False)  # the user's own retriever or vector store
RETRIEVERS.register("wikipedia", "factdebate.tools.wikipedia_live:open_wikipedia_retriever",
                    reads_local_index=False)

ONLINE_WIKI = "mediawiki"
"""MERMAID's ``wiki_backend`` that asks the MediaWiki API; its other values are backend names."""


def backend_reads_local_index(name: str) -> bool:
    """The registration's ``reads_local_index`` of backend ``name`` (an alias too); True when the
    registration does not say (module doc).

    Raises:
        ConfigError: No backend is registered as ``name`` (its message suggests one).
    """
    return bool(RETRIEVERS.entry(name).meta.get("reads_local_index", True))


def search_backend_of(value: str) -> str:
    """The backend ``search_backend=value`` searches: ``auto`` is ``tavily`` when
    ``TAVILY_API_KEY`` is set, else the offline keyword stand-in ``local_search`` (the one rule:
    ``nodes/retrieval.resolve_backend`` searches with it)."""
    if value != "auto":
        return value
    return "tavily" if os.environ.get("TAVILY_API_KEY") else "local_search"


def used_backends(ctx: Any) -> dict[str, str]:
    """The retriever settings of a run with Context ``ctx`` that name a source:
    ``rag_backend``, ``search_backend`` (``auto`` resolved) and, where the Context has one,
    MERMAID's ``wiki_backend``. A text check's Context (``verifier_settings``) counts its
    verifier's own settings, which override the shared fields for every debate it runs."""
    values = {"rag_backend": getattr(ctx, "rag_backend", "milvus"),
              "search_backend": getattr(ctx, "search_backend", "auto")}
    if hasattr(ctx, "wiki_backend"):
        values["wiki_backend"] = ctx.wiki_backend
    overrides = getattr(ctx, "verifier_settings", None)
    if isinstance(overrides, dict):
        values |= {k: str(v) for k, v in overrides.items()
                   if k in ("rag_backend", "search_backend", "wiki_backend")}
    values["search_backend"] = search_backend_of(str(values["search_backend"]))
    return {k: str(v) for k, v in values.items()}


def reads_local_index(ctx: Any) -> bool:
    """True when a run with Context ``ctx`` may read the local index folder: one of its
    :func:`used_backends` (MERMAID's ``wiki_backend`` unless it is ``mediawiki``) is registered
    as reading it, or is a plug-in that does not say (module doc).

    Raises:
        ConfigError: A setting names no registered backend (``Context.validate`` refuses such a
            Context; a text check's verifier settings are checked only here and in the run).
    """
    return any(backend_reads_local_index(name) for field, name in used_backends(ctx).items()
               if not (field == "wiki_backend" and name == ONLINE_WIKI))
