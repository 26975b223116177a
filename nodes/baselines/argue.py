"""MAD debaters (Liang et al. 2023): the affirmative and the negative side, "tit for tat".

Round 1: the affirmative answers the topic; the negative disagrees with it. Later rounds: the
affirmative answers the negative's last argument, the negative answers the affirmative's new one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from langgraph.runtime import Runtime

from factdebate.core.context import Context
from factdebate.nodes.baselines.ask_answer import answer_turn, ask_answer, baseline_values, flag_parse
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.llm import CallLog
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.render import render_opponents

Side = Literal["affirmative", "negative"]


def _opponent_argument(state: BaselineState, side: Side) -> str:
    other = "negative" if side == "affirmative" else "affirmative"
    last = [t for t in state.get("turns") or [] if t["agent"] == other]
    return render_opponents(last[-1:])


def argue(side: Side) -> Callable[[BaselineState, Runtime[Context]], Awaitable[dict[str, Any]]]:
    """The node of one debate side."""

    async def debate_side(state: BaselineState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = runtime.context
        round_ = state["round"]
        template = "mad_negative" if side == "negative" else (
            "mad_affirmative_open" if round_ == 1 else "mad_affirmative")
        values = baseline_values(state, ctx) | {"opponent": _opponent_argument(state, side)}
        calls = CallLog()
        result = await ask_answer(
            ctx, ctx.debater_model,
            prompt_set(ctx).render(template, **values),
            state,
            calls=calls, role="debater", agent=side, round_=round_,
        )
        flag_parse(calls, side, round_, result)
        return {"turns": [answer_turn(side, round_, result)], **calls.update()}

    debate_side.__name__ = debate_side.__qualname__ = side
    debate_side.__doc__ = f"The {side} side's argument this round."
    return debate_side
