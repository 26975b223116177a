"""Retriever calls as LangChain retriever runs, so traces show them with ``run_type="retriever"``.

Our retrievers implement the small ``Retriever`` protocol (tools/base.py), not LangChain's
``BaseRetriever``; a call made from a node would otherwise not appear in LangSmith or Studio at all.
``traced_search`` runs the search through a ``BaseRetriever`` adapter, whose ``ainvoke`` emits the
``on_retriever_start``/``on_retriever_end`` callbacks under the calling node's run (the config is
inherited from the running graph), named after the backend, with the query as input and the
passages as documents.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from factdebate.core.state import Evidence


class _SearchAdapter(BaseRetriever):
    """One search of one ``Retriever`` (``k`` fixed), as a LangChain retriever."""

    backend: Any
    k: int

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        raise NotImplementedError("the project's retrievers are async: use ainvoke")

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        found = await self.backend.search(query, k=self.k)
        # every key but the text travels as metadata: the passage contract's page, sentences and
        # pool (tools/sources) reach the row and its evidence scoring as the retriever gave them
        return [Document(page_content=e["text"], metadata={k: v for k, v in e.items() if k != "text"})
                for e in found]


async def traced_search(retriever: Any, query: str, *, k: int, name: str) -> list[Evidence]:
    """``retriever.search(query, k=k)`` traced as a retriever run called ``name``."""
    adapter = _SearchAdapter(backend=retriever, k=k)
    docs = await adapter.ainvoke(query, {"run_name": name, "metadata": {"k": k}})
    return [Evidence(text=d.page_content, **d.metadata) for d in docs]  # type: ignore[typeddict-item]
