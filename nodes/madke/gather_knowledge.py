"""MADKE's shared knowledge pool (MADKE (arXiv:2312.04854) §3.1.1, Eq. 1): SKPool(q) = WR(q) ∪ GSE(q).

Retrieved once per question, with the question itself as the query: one ``gather_knowledge``
branch per configured source (``rag`` = the Context's ``rag_backend``, the paper's Wikipedia
retriever; ``search`` = its ``search_backend``, the paper's Google search), in parallel. Calls go
through the shared ``search_tool`` (timeouts, retries, ``tool_calls`` counts, fault flags); the
offline search stand-in is flagged by ``prepare`` exactly as for Tool-MAD.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Send

from factdebate.core.state import Evidence
from factdebate.nodes.madke.state import SOURCE_KINDS, MadkeContext, MadkeState, SourceTask
from factdebate.nodes.retrieval import resolve_backend, search_tool
from factdebate.nodes.routing import run_context


def route_knowledge_sources(
    state: MadkeState, ctx: MadkeContext | None = None
) -> list[Send] | Literal["open_round"]:
    """One ``gather_knowledge`` branch per knowledge source; none -> straight to the debate."""
    sources = SOURCE_KINDS[run_context(state, MadkeContext, ctx).knowledge_sources]
    if not sources:
        return "open_round"
    return [
        Send("gather_knowledge", SourceTask(source=source, claim=state["claim"],
                                            exclude_titles=state.get("exclude_titles")))
        for source in sources
    ]


async def gather_knowledge(task: SourceTask, runtime: Runtime[MadkeContext]) -> dict[str, Any]:
    """Top ``pool_size(source)`` passages of one source for the question."""
    ctx = runtime.context
    backend, _ = resolve_backend(task["source"], ctx)
    if backend is None:  # unreachable with the validated source kinds; kept total
        return {"knowledge": {task["source"]: []}}
    update = await search_tool(
        backend, task["claim"], ctx, k=ctx.pool_size(task["source"]),
        exclude_titles=task.get("exclude_titles"),
        who=f"the {task['source']} knowledge source",
    )
    evidence = update.pop("evidence")
    return {"knowledge": {task["source"]: evidence}, **update}


def shared_pool(state: MadkeState, ctx: MadkeContext) -> list[Evidence]:
    """The pool in source order (rag, then search), identical passages kept once."""
    pool: list[Evidence] = []
    seen: set[tuple[str, str]] = set()
    knowledge = state.get("knowledge") or {}
    for source in SOURCE_KINDS[ctx.knowledge_sources]:
        for passage in knowledge.get(source, []):
            key = (passage["title"].casefold(), " ".join(passage["text"].split()).casefold())
            if key not in seen:
                seen.add(key)
                pool.append(passage)
    return pool
