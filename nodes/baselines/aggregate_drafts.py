"""Speculative RAG in the multi-answer setting: an aggregator reads every draft (MADAM-RAG App. B).

"Since our setting may have multiple correct answers, we pass all answers and their rationales to
the aggregator to generate the final answer." So for a multi-answer question (RAMDocs) with
``multi_answer_drafts="aggregate"`` the drafts are not verified and no single draft is picked:
``aggregate_drafts`` shows the aggregator (the judge model) every draft's answers and rationale,
in draft order, and its list of all correct answers is the result. ``route_after_drafts`` chooses
between this and ``select_draft``; the per-draft verifier skips itself then (``verify_draft``).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from factdebate.core.state import Turn
from factdebate.nodes.baselines.ask_answer import ask_answer, baseline_values, flag_parse
from factdebate.nodes.baselines.context import SpeculativeRagContext
from factdebate.nodes.baselines.state import BaselineState, BranchState
from factdebate.nodes.llm import CallLog
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.routing import run_context


def aggregates(state: BaselineState | BranchState, ctx: SpeculativeRagContext) -> bool:
    """Whether this run hands all drafts to the aggregator (multi-answer + ``aggregate``)."""
    return bool(state.get("multi_answer")) and ctx.multi_answer_drafts == "aggregate"


def route_after_drafts(
    state: BaselineState, ctx: SpeculativeRagContext | None = None
) -> Literal["select_draft", "aggregate_drafts"]:
    """The verifier's pick (labels; ``select``) or the aggregator over all drafts."""
    ctx = run_context(state, SpeculativeRagContext, ctx)
    return "aggregate_drafts" if aggregates(state, ctx) else "select_draft"


def drafts_of(state: BaselineState) -> list[Turn]:
    """The drafts in draft order (draft1, draft2, ..., draft10)."""
    return sorted((t for t in state.get("turns") or [] if t["agent"].startswith("draft")),
                  key=lambda t: int(t["agent"].removeprefix("draft") or 0))


def render_drafts(drafts: list[Turn]) -> str:
    """``<draft n="1">Answers: a; b. Rationale: ...</draft>`` per draft."""
    rows = []
    for n, t in enumerate(drafts, 1):
        answers = "; ".join(t.get("answers") or []) or t.get("label") or "unknown"
        rationale = " ".join((t["answer"] or "").split())
        rows.append(f'<draft n="{n}">Answers: {answers}. Rationale: {rationale}</draft>')
    return "\n".join(rows) or "(no drafts)"


async def aggregate_drafts(
    state: BaselineState, runtime: Runtime[SpeculativeRagContext]
) -> dict[str, Any]:
    """Every correct answer according to the aggregator, from all drafts and their rationales."""
    ctx = runtime.context
    values = baseline_values(state, ctx) | {"drafts": render_drafts(drafts_of(state))}
    calls = CallLog()
    result = await ask_answer(
        ctx, ctx.judge_model_spec,
        prompt_set(ctx).render("speculative_aggregate", **values), state,
        calls=calls, role="aggregator", round_=1, shown=values["shown"], decides=True,
    )
    flag_parse(calls, "aggregator", 1, result)
    return {"label": result.label, "answers": result.answers, "rationale": result.reasoning,
            "stopped_by": "aggregator", "round": 1, **calls.update()}
