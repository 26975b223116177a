"""``open_round`` and the fan-out of debaters (one ``Send`` per agent, run in parallel branches).

Each branch gets only what Alg. 1 lets a debater see: the claim, its own previous query and the
other agents' answers of the previous round.

``open_round`` is shared by every round-based debate (Tool-MAD, MADKE, MADAM-RAG, MAD, Du et al.'s
multi-agent debate). It numbers the new round from the rounds the turns record, not from the
``round`` a client may have written, and refuses to open one past ``max_rounds``
(nodes/routing.py).

The nodes read only what ``factdebate.core.context.RoundsContext`` / ``DebatersContext`` declare
; each graph binds its own Context class (:func:`rounds_opener`,
:func:`debater_router`), whose defaults apply when no run's Context is current (``update_state``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.types import Overwrite, Send

from factdebate.core.context import DebatersContext, RoundsContext
from factdebate.core.state import DebaterState, DebateState
from factdebate.nodes.progress import emit
from factdebate.nodes.routing import refuse_past_cap, round_turns, rounds_done, run_context


def rounds_opener(context: type[RoundsContext]) -> Callable[[DebateState], dict[str, Any]]:
    """The ``open_round`` node of a graph whose Context class is ``context``."""

    def open_round(state: DebateState) -> dict[str, Any]:
        """Open the next round: recorded rounds + 1, refused past ``max_rounds``."""
        done = rounds_done(state)
        cap = run_context(state, context).max_rounds
        refuse_past_cap(done, cap, what="debate round(s)", knob="max_rounds")
        emit("round_opened", round=done + 1)  # nodes/progress.py
        return {"round": Overwrite(done + 1)}

    return open_round


def debater_router(
    context: type[DebatersContext],
) -> Callable[..., list[Send]]:
    """The fan-out after ``open_round`` of a graph whose Context class is ``context``."""

    def route_debaters(state: DebateState, ctx: DebatersContext | None = None) -> list[Send]:
        return fan_out_debaters(state, run_context(state, context, ctx))

    return route_debaters


def fan_out_debaters(state: DebateState, ctx: DebatersContext) -> list[Send]:
    """One ``debate_turn`` branch per debater of ``ctx`` for the new round."""
    current = state["round"]
    previous = round_turns(state, current - 1) if current > 1 else []
    sends = []
    for agent in ctx.agent_ids():
        own = next((t for t in previous if t["agent"] == agent), None)
        payload = DebaterState(
            agent=agent,
            round=current,
            claim=state["claim"],
            task=state["task"],  # type: ignore[typeddict-item]
            options=state.get("options"),
            exclude_titles=state.get("exclude_titles"),
            previous_query=own["query"] if own else "",
            opponents=[t for t in previous if t["agent"] != agent],
            query="",
            evidence=[],
            answer="",
            label=None,
            parse="",
            turns=[],
            scores={},
            ledger={},
            flags=[],
        )
        sends.append(Send("debate_turn", payload))
    return sends
