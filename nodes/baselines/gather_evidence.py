"""``gather_evidence``: the documents a baseline reasons over, and ``search_rag`` for its tool calls.

Evidence is the item's own documents (RAMDocs, PubMedQA) or one retrieval for the claim from the
``rag`` retriever, as the Context's ``evidence_source`` says. Retrieval goes through the shared
``search_tool``, so timeouts, retries, the leakage guard, the ledger's ``tool_calls``
and fault flags behave the same in every framework.
"""

from __future__ import annotations

from typing import Any, TypeVar

from langgraph.runtime import Runtime

from factdebate.core.errors import InputError
from factdebate.core.state import item_documents
from factdebate.nodes.baselines.ask_answer import note_turn
from factdebate.nodes.baselines.context import BaselineContext
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.retrieval import resolve_backend, search_tool

B = TypeVar("B", bound=BaselineContext)
"""Any baseline's Context (ReAct's, Self-Ask's ...)."""


async def search_rag(
    query: str, state: Any, runtime: Runtime[B], *, round_: int
) -> dict[str, Any]:
    """One call of the ``rag`` retriever: ``{"evidence", "ledger", "flags"?}``."""
    ctx = runtime.context
    backend, _ = resolve_backend("rag", ctx)
    assert backend is not None  # the rag kind always has a backend
    return await search_tool(backend, query, ctx, k=ctx.top_k,
                             exclude_titles=state.get("exclude_titles"),
                             who=f"step {round_} (query {query[:80]!r})")


async def retrieval_step(
    agent: str, query: str, state: Any, runtime: Runtime[B], *, limit: int
) -> dict[str, Any]:
    """One tool step of a loop (ReAct observation, Self-Ask intermediate answer) as an update.

    The passages become ``agent``'s turn of this step; the step that reaches ``limit`` sets
    ``stopped_by="max_steps"`` so the loop's router moves on to the final answer.
    """
    step = state["round"]
    found = await search_rag(query, state, runtime, round_=step)
    turn = note_turn(agent, step, "", query=query, evidence=found.get("evidence") or [])
    update: dict[str, Any] = {"turns": [turn], "ledger": found.get("ledger", {}),
                              "flags": found.get("flags", [])}
    if step >= limit:
        update["stopped_by"] = "max_steps"
    return update


async def gather_evidence(state: BaselineState, runtime: Runtime[BaselineContext]) -> dict[str, Any]:
    """The item's documents, or the top-k passages retrieved for the claim."""
    source = getattr(runtime.context, "evidence_source", "auto")
    documents = state.get("documents") or []
    if source == "documents" and not documents:
        raise InputError(
            "this framework reads the item's documents, but the item has none",
            "pass documents=[{title, text}, ...] or set evidence_source=retrieve",
        )
    if documents and source != "retrieve":
        return {"evidence": item_documents(list(documents))}
    return await search_rag(state["claim"], state, runtime, round_=1)
