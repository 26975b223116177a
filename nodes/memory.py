"""``recall_memory`` and ``update_memory``: MERMAID's evidence memory (paper §3.4, Alg. 1 l.7, 28-29).

Recall runs before the first ReAct step with the decomposer's entities as keys; the hits become
M_c in every executor prompt. Update runs after the answer: the evidence every tool step observed
(not the recalled records) is stored under the entities, with the step's query and tool name, in
the LangGraph store the graph was compiled with (``runtime.store``). Without a store, or without
entities (decomposer off), the memory is skipped and the output says so.
"""

from __future__ import annotations

from typing import Any

from factdebate.tools.evidence_memory import EvidenceMemory
from langgraph.runtime import Runtime

from factdebate.core.mermaid import MermaidContext, MermaidState

NO_STORE_FLAG = "memory: the graph has no store, so the evidence memory was not used"
NO_ENTITIES_FLAG = "memory: no entities to key the memory by (decomposer off or unreadable)"


def _memory(state: MermaidState, runtime: Runtime[MermaidContext]) -> tuple[EvidenceMemory | None,
                                                                              str | None]:
    if not runtime.context.memory:
        return None, None
    if runtime.store is None:
        return None, NO_STORE_FLAG
    if not state.get("entities"):
        return None, NO_ENTITIES_FLAG
    return EvidenceMemory(runtime.store), None


async def recall_memory(state: MermaidState, runtime: Runtime[MermaidContext]) -> dict[str, Any]:
    """M_c: records stored under the claim's entities by earlier claims."""
    memory, flag = _memory(state, runtime)
    if memory is None:
        return {"recalled": [], "flags": [flag] if flag else []}
    records = await memory.recall(state["entities"], limit=runtime.context.memory_recall_limit)
    return {"recalled": records, "ledger": {"memory_hits": len(records)}}


async def update_memory(state: MermaidState, runtime: Runtime[MermaidContext]) -> dict[str, Any]:
    """Store the tools' observations under the claim's entities."""
    memory, _ = _memory(state, runtime)  # a missing store was flagged by recall_memory already
    if memory is None:
        return {}
    records = [
        {"query": turn["query"], "source": turn.get("action", ""), "id": e["id"],
         "title": e["title"], "text": e["text"], "url": e["url"]}
        for turn in state.get("turns", []) if turn.get("action")
        for e in turn["evidence"]
    ]
    written = await memory.update(state["entities"], records)
    return {"ledger": {"memory_writes": written}}
