"""``recall_memory`` and ``update_memory``: MERMAID's evidence memory (paper §3.4, Alg. 1 l.7, 28-29).

Recall runs before the first ReAct step with the decomposer's entities as keys; the hits become
M_c in every executor prompt. Update runs after the answer: the evidence every tool step observed
(not the recalled records) is stored under the entities, with the step's query and tool name, in
the LangGraph store the graph was compiled with (``runtime.store``). Without a store, or without
entities (decomposer off), the memory is skipped and the output says so.

Whose memory: under the LangGraph server, the authenticated user's (langgraph-api puts
``langgraph_auth_user_id`` into the run's ``config["configurable"]``; clients cannot set it), so
one user cannot poison what another user's runs recall; one memory for everyone only when the
operator sets ``FACTDEBATE_SHARED_MEMORY=1``; the CLI's own otherwise. Which memory: the one of
the index build the run's tools read (:func:`index_fingerprint`), so passages remembered from one
index are not recalled by runs against another. Which stream: a run may narrow its memory to a
scope (``config["configurable"]["fd_memory_scope"]``, one more namespace segment after the index
fingerprint): each evaluation run streams its claims through a memory of its own (its run id), so
one run's results never depend on what another run stored in a shared database (PostgreSQL). A
scope only narrows the namespace: it cannot reach another owner's memory.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from factdebate.nodes.mermaid.state import MermaidContext, MermaidState
from factdebate.tools.evidence_memory import (
    LOCAL_OWNER,
    SHARED_OWNER,
    EvidenceMemory,
    index_fingerprint,
    memory_namespace,
)

NO_STORE_FLAG = "memory: the graph has no store, so the evidence memory was not used"
NO_ENTITIES_FLAG = "memory: no entities to key the memory by (decomposer off or unreadable)"


SHARED_MEMORY_ENV = "FACTDEBATE_SHARED_MEMORY"
MEMORY_SCOPE_KEY = "fd_memory_scope"
"""``configurable`` key naming the run's memory scope (the evaluation runner's run id)."""


def memory_owner(config: RunnableConfig | None, env: dict[str, str] | None = None) -> str:
    """Owner segment of the run's memory namespace (see the module docstring)."""
    env = dict(os.environ) if env is None else env
    if env.get(SHARED_MEMORY_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return SHARED_OWNER
    user = ((config or {}).get("configurable") or {}).get("langgraph_auth_user_id")
    return str(user) if user else LOCAL_OWNER


def run_memory_namespace(context: MermaidContext, config: RunnableConfig | None) -> tuple[str, ...]:
    """The namespace prefix this run recalls from and writes to."""
    fingerprint = index_fingerprint(context.index_path, source=context.wiki_backend)
    namespace = memory_namespace(memory_owner(config), fingerprint)
    scope = ((config or {}).get("configurable") or {}).get(MEMORY_SCOPE_KEY)
    # "scope:" cannot be an entity key (keys hold no punctuation), so scoped and unscoped
    # memories of one owner never match each other's prefix searches
    # (LangGraph namespace labels may not contain ".", which run ids may)
    return (*namespace, "scope:" + str(scope).replace(".", "_")) if scope else namespace


def _memory(state: MermaidState, runtime: Runtime[MermaidContext],
            config: RunnableConfig) -> tuple[EvidenceMemory | None, str | None]:
    if not runtime.context.memory:
        return None, None
    if runtime.store is None:
        return None, NO_STORE_FLAG
    if not state.get("entities"):
        return None, NO_ENTITIES_FLAG
    return EvidenceMemory(runtime.store, run_memory_namespace(runtime.context, config)), None


async def recall_memory(state: MermaidState, runtime: Runtime[MermaidContext],
                        config: RunnableConfig) -> dict[str, Any]:
    """M_c: records stored under the claim's entities by earlier claims."""
    memory, flag = _memory(state, runtime, config)
    if memory is None:
        return {"recalled": [], "flags": [flag] if flag else []}
    records = await memory.recall(state["entities"], limit=runtime.context.memory_recall_limit)
    return {"recalled": records, "ledger": {"memory_hits": len(records)}}


async def update_memory(state: MermaidState, runtime: Runtime[MermaidContext],
                        config: RunnableConfig) -> dict[str, Any]:
    """Store the tools' observations under the claim's entities."""
    memory, _ = _memory(state, runtime, config)  # a missing store was flagged by recall_memory already
    if memory is None:
        return {}
    records: list[dict[str, Any]] = [
        {"query": turn["query"], "source": turn.get("action", ""), "id": e["id"],
         "title": e["title"], "text": e["text"], "url": e["url"]}
        for turn in state.get("turns", []) if turn.get("action")
        for e in turn["evidence"]
    ]
    written = await memory.update(state["entities"], records)
    return {"ledger": {"memory_writes": written}}
