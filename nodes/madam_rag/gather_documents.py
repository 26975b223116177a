"""``gather_documents``: the documents MADAM-RAG gives its agents, one agent per document.

Items that bring documents (RAMDocs, PubMedQA) use them as they are - no retrieval. Otherwise the
claim is the query and the Context's ``rag_backend`` returns the top ``num_documents`` passages
through the shared ``search_tool`` (timeouts, retries, ``tool_calls`` counts, fault flags). Item
documents are reduced to the ``Evidence`` fields (``factdebate.core.state.item_documents``, shared
with the baselines): dataset annotations such as RAMDocs' ``type`` and ``answer`` never reach a
prompt.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.state import item_documents
from factdebate.nodes.madam_rag.state import MadamRagContext, MadamRagState
from factdebate.nodes.retrieval import resolve_backend, search_tool


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
