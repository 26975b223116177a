"""``gather_documents``: the documents MADAM-RAG gives its agents, one agent per document.

Items that bring documents (RAMDocs, PubMedQA) use them as they are - no retrieval. Otherwise the
claim is the query and the Context's ``rag_backend`` returns the top ``num_documents`` passages
through the shared ``search_tool`` (timeouts, retries, ``tool_calls`` counts, fault flags). Item
documents are reduced to the ``Evidence`` fields: dataset annotations such as RAMDocs' ``type``
(correct/misinfo/noise) and ``answer`` are gold information and never reach a prompt.
"""

from __future__ import annotations

from typing import Any

from factdebate.nodes.retrieve import resolve_backend, search_tool
from langgraph.runtime import Runtime

from factdebate.core.errors import InputError
from factdebate.core.madam_rag import MadamRagContext, MadamRagState
from factdebate.core.state import Evidence


def item_documents(raw: Any) -> list[Evidence]:
    """The item's documents as ``Evidence`` (text required; only Evidence fields kept)."""
    if not isinstance(raw, list):
        raise InputError(f"documents must be a list, got {type(raw).__name__}",
                         "pass documents as [{'text': ...}, ...]")
    docs: list[Evidence] = []
    for i, doc in enumerate(raw, 1):
        if isinstance(doc, str):
            doc = {"text": doc}
        text = doc.get("text") if isinstance(doc, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"document {i} has no text", "give every document a non-empty 'text'")
        docs.append(Evidence(
            id=str(doc.get("id") or f"doc{i}"), title=str(doc.get("title") or ""), text=text,
            source=str(doc.get("source") or "item"), url=str(doc.get("url") or ""),
            score=float(doc.get("score") or 0.0),
        ))
    return docs


async def gather_documents(
    state: MadamRagState, runtime: Runtime[MadamRagContext]
) -> dict[str, Any]:
    """The item's documents, or the top ``num_documents`` retrieved for the claim."""
    ctx = runtime.context
    if state.get("documents"):
        return {"agent_documents": item_documents(state["documents"]), "retrieval_query": ""}
    backend, _ = resolve_backend("rag", ctx)
    assert backend is not None  # the rag kind always has a backend
    update = await search_tool(
        backend, state["claim"], ctx, k=ctx.num_documents,
        exclude_titles=state.get("exclude_titles"), who="document retrieval",
    )
    docs = update.pop("evidence")
    return {"agent_documents": docs, "retrieval_query": state["claim"], **update}
