"""Self-reflection (MADAM-RAG's baseline after Madaan et al. 2023): answer -> review -> refine.

The first answer comes from ``single_answer("reflect_answer")``; then each reflection round the
model ``review``s its latest answer and writes feedback, and ``refine``s the answer with that
feedback. The latest refined answer is the result.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import BaseModel, Field

from factdebate.core.state import Turn
from factdebate.nodes.baselines.ask_answer import (
    answer_turn,
    ask_answer,
    baseline_values,
    flag_parse,
    note_turn,
    result_fields,
)
from factdebate.nodes.baselines.context import SelfReflectionContext
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.routing import END, refuse_past_cap, rounds_used, run_context, steps_done

ANSWERS = ("answer", "refine")
REVIEW = ("review",)
"""The agent of the turn that opens each reflection round: the rounds held are counted from them."""


def reflection_cap(ctx: SelfReflectionContext) -> int:
    """Reflection rounds a run holds: ``reflection_rounds``, and at least the one the graph's
    ``answer -> review`` edge always opens."""
    return max(1, ctx.reflection_rounds)


class ReviewOut(BaseModel):
    """Feedback on the previous answer."""

    feedback: str = Field(description="Problems found with the previous answer.")


def _latest(state: BaselineState, agents: tuple[str, ...]) -> Turn:
    return next(t for t in reversed(state["turns"]) if t["agent"] in agents)


def _show(turn: Turn) -> str:
    answers = turn.get("answers")
    verdict = ", ".join(answers) if answers else (turn["label"] or "no answer")
    return f"{verdict} - {turn['answer']}"


async def review(state: BaselineState, runtime: Runtime[SelfReflectionContext]) -> dict[str, Any]:
    """Feedback on the latest answer (opens a reflection round, numbered from the recorded
    reviews; refused past the cap, which only a state edit with ``goto`` asks for)."""
    ctx = runtime.context
    done = steps_done(state, REVIEW)
    refuse_past_cap(done, reflection_cap(ctx), what="reflection round(s)",
                    knob="reflection_rounds")
    round_ = done + 1
    values = baseline_values(state, ctx) | {"previous": _show(_latest(state, ANSWERS))}
    calls = CallLog()
    out, raw = await ask(
        ctx, ctx.debater_model,
        prompt_set(ctx).render("reflect_review", **values),
        ReviewOut,
        calls=calls, role="review", agent="review", round_=round_,
    )
    feedback = out.feedback if isinstance(out, ReviewOut) else raw
    return {"round": Overwrite(round_), "turns": [note_turn("review", round_, feedback)],
            **calls.update()}


async def refine(state: BaselineState, runtime: Runtime[SelfReflectionContext]) -> dict[str, Any]:
    """The answer improved with this round's feedback; it becomes the result."""
    ctx = runtime.context
    round_ = state["round"]
    values = baseline_values(state, ctx) | {
        "previous": _show(_latest(state, ANSWERS)),
        "review": _latest(state, ("review",))["answer"],
    }
    calls = CallLog()
    result = await ask_answer(
        ctx, ctx.debater_model,
        prompt_set(ctx).render("reflect_refine", **values),
        state,
        calls=calls, role="refine", agent="refine", round_=round_,
        shown=values["shown"], decides=True,
    )
    flag_parse(calls, "refine", round_, result)
    turn = answer_turn("refine", round_, result, evidence=state.get("evidence") or [])
    return {"turns": [turn], **result_fields(turn), "stopped_by": "refine", **calls.update()}


def route_after_refine(
    state: BaselineState, ctx: SelfReflectionContext | None = None
) -> Literal["critique", "__end__"]:
    """Another reflection round until ``reflection_rounds`` are done (counted from the turns)."""
    rounds = run_context(state, SelfReflectionContext, ctx).reflection_rounds
    return END if rounds_used(state, steps_done(state, REVIEW)) >= rounds else "critique"
