"""The retriever backend registry: names in the core, implementations in ``factdebate.tools``.

``Context.validate`` checks ``rag_backend``/``search_backend`` against these names without
importing the tools layer; each entry is a lazy ``"module:attr"`` factory that
``factdebate.tools.base.get_retriever`` imports on first use (STYLE.md §8). A backend added later
registers here (or, from a plug-in or a test, with ``RETRIEVERS.register`` at import time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from factdebate.core.registry import Registry

RETRIEVERS: Registry[Callable[[Any], Any]] = Registry("retriever backend")
"""Backend name -> factory ``(RetrieverSettings) -> Retriever``; importing it imports no SDK."""

RETRIEVERS.register("milvus", "factdebate.tools.milvus_rag:open_milvus_retriever", aliases=("rag",))
RETRIEVERS.register("keyword", "factdebate.tools.keyword:open_keyword_retriever")
RETRIEVERS.register("local_search", "factdebate.tools.keyword:open_local_search")
RETRIEVERS.register("tavily", "factdebate.tools.tavily_search:open_tavily_retriever", aliases=("web",))
RETRIEVERS.register("hybrid", "factdebate.tools.hybrid:open_hybrid_retriever")
RETRIEVERS.register("openalex", "factdebate.tools.openalex:open_openalex_retriever")
RETRIEVERS.register("static", "factdebate.testing.retrievers:open_static_retriever",
                    test_double=True)  # four fixed passages, for tests and tutorials only
RETRIEVERS.register("langchain", "factdebate.tools.langchain_retriever:open_langchain_retriever")
RETRIEVERS.register("wikipedia", "factdebate.tools.wikipedia_live:open_wikipedia_retriever")
