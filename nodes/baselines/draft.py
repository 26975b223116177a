"""Speculative RAG drafting (Wang et al. 2024): one draft per distinct document subset, in parallel.

The retrieved documents are split into ``drafts`` disjoint subsets (document i goes to subset
i mod m, so every subset mixes higher- and lower-ranked documents); each subset is one ``Send``
branch whose drafter answers from that subset only, with a rationale.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send

from factdebate.core.state import Evidence
from factdebate.nodes.baselines.ask_answer import answer_turn, ask_answer, baseline_values, flag_parse
from factdebate.nodes.baselines.context import SpeculativeRagContext
from factdebate.nodes.baselines.state import BaselineState, BranchState
from factdebate.nodes.llm import CallLog
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.routing import run_context


def draft_subsets(evidence: list[Evidence], drafts: int) -> list[list[Evidence]]:
    """``drafts`` disjoint, non-empty subsets (fewer when there are fewer documents; one empty
    subset when there are none)."""
    if not evidence:
        return [[]]
    n = max(1, min(drafts, len(evidence)))
    return [evidence[j::n] for j in range(n)]


def route_drafts(
    state: BaselineState, ctx: SpeculativeRagContext | None = None
) -> list[Send]:
    """One ``draft_branch`` per document subset."""
    drafts = run_context(state, SpeculativeRagContext, ctx).drafts
    subsets = draft_subsets(list(state.get("evidence") or []), drafts)
    return [
        Send("draft_branch", BranchState(
            agent=f"draft{j}", round=1, claim=state["claim"], task=state["task"],  # type: ignore[typeddict-item]
            options=state.get("options"), multi_answer=state.get("multi_answer", False),
            evidence=subset, turns=[], scores={}, ledger={}, flags=[],
        ))
        for j, subset in enumerate(subsets, 1)
    ]


async def draft(state: BranchState, runtime: Runtime[SpeculativeRagContext]) -> dict[str, Any]:
    """A draft answer and rationale from this branch's documents."""
    ctx = runtime.context
    calls = CallLog()
    values = baseline_values(state, ctx)
    result = await ask_answer(
        ctx, ctx.debater_model,
        prompt_set(ctx).render("speculative_draft", **values),
        state,
        calls=calls, role="drafter", agent=state["agent"], round_=1, shown=values["shown"],
    )
    flag_parse(calls, state["agent"], 1, result)
    turn = answer_turn(state["agent"], 1, result, evidence=state["evidence"])
    return {"answer": result.reasoning, "label": result.label, "answers": result.answers,
            "turns": [turn], **calls.update()}
