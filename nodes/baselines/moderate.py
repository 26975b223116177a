"""MAD's moderator (Liang et al. 2023): after every round, end the debate if one side is right.

The moderator sees both sides' arguments of the round and states whether it has a preference
(the "adaptive break"). With a preference the supported side's answer is the result
(``stopped_by="moderator"``); otherwise the debate goes on, and after ``max_rounds`` the judge
decides from the whole debate.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from factdebate.nodes.baselines.ask_answer import baseline_values, result_fields
from factdebate.nodes.baselines.context import MadContext
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.render import render_opponents
from factdebate.nodes.routing import END, round_turns, rounds_done, rounds_used, run_context


class ModeratorOut(BaseModel):
    """The moderator's evaluation of one round."""

    preference: bool = Field(description="True when one side is clearly correct.")
    supported_side: Literal["affirmative", "negative", "none"] = Field(default="none")
    reasoning: str = Field(default="", description="Why.")


async def moderate(state: BaselineState, runtime: Runtime[MadContext]) -> dict[str, Any]:
    """Evaluate the round; end the debate when the moderator prefers a side."""
    ctx = runtime.context
    turns = {t["agent"]: t for t in round_turns(state)}
    values = baseline_values(state, ctx) | {
        "round": state["round"],
        "affirmative": render_opponents([turns["affirmative"]]),
        "negative": render_opponents([turns["negative"]]),
    }
    calls = CallLog()
    out, _ = await ask(
        ctx, ctx.judge_model_spec,
        prompt_set(ctx).render("mad_moderator", **values),
        ModeratorOut,
        calls=calls, role="moderator", round_=state["round"],
    )
    if not isinstance(out, ModeratorOut):
        calls.flags.append(f"mad: moderator reply of round {state['round']} unreadable; "
                           "the debate goes on")
        return calls.update()
    side = turns.get(out.supported_side)
    if not (out.preference and side and side["label"]):
        return calls.update()
    return {**result_fields(side), "rationale": f"{out.reasoning} ({out.supported_side} side)",
            "stopped_by": "moderator", **calls.update()}


def route_after_moderate(
    state: BaselineState, ctx: MadContext | None = None
) -> Literal["open_round", "judge", "__end__"]:
    """End on the moderator's preference, go to the judge after the last round, else debate on."""
    if state.get("stopped_by") == "moderator":
        return END
    if rounds_used(state, rounds_done(state)) >= run_context(state, MadContext, ctx).max_rounds:
        return "judge"  # rounds counted from the turns: an edit of 'round' buys none
    return "open_round"
