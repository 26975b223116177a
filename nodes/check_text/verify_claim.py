"""``verify_claim``: one claim of a text verified by the verifier framework's compiled graph.

The graph is looked up in the graphs layer (the framework registry) and passed in; it runs with a
Context built from the text check's shared fields plus ``verifier_settings``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from factdebate.core.state import complete_input
from factdebate.nodes.check_text.state import (
    CheckTextContext,
    ClaimResult,
    ClaimTask,
    verifier_context,
)


def verify_claim_node(lookup: Callable[[str], Any]) -> Callable[..., Any]:
    """``verify_claim`` running the framework that ``lookup(name)`` compiles."""

    async def verify_claim(state: ClaimTask, runtime: Runtime[CheckTextContext],
                           config: RunnableConfig) -> dict[str, Any]:
        """One claim through the verifier framework (a nested, checkpointed graph)."""
        ctx = runtime.context
        graph = lookup(ctx.framework)
        vctx = verifier_context(ctx, graph.context_schema)
        run_config: RunnableConfig = {
            **config, "run_name": f"{ctx.framework}:claim",
            "metadata": {**(config.get("metadata") or {}), "fd_claim": state["key"]}}
        out = await graph.ainvoke(complete_input({"claim": state["claim"], "task": state["task"]}),
                                  run_config, context=vctx)
        turns = list(out.get("turns") or [])
        result = ClaimResult(
            label=out.get("label"), rationale=out.get("rationale") or "",
            rounds=int(out.get("round") or 0), stopped_by=out.get("stopped_by") or "",
            turns=turns, scores=dict(out.get("scores") or {}),
            evidence=list(out.get("verdict_evidence") or [])[:ctx.citations_per_claim],
            retrieved=list(out.get("retrieved_evidence") or []),
            citation_records=list(out.get("citations") or []),
            flags=list(out.get("flags") or []), ledger=dict(out.get("ledger") or {}))
        return {"results": {state["key"]: result}, "ledger": result["ledger"]}

    return verify_claim
