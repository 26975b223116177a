"""``open_round`` and the fan-out of debaters (one ``Send`` per agent, run in parallel branches).

Each branch gets only what Alg. 1 lets a debater see: the claim, its own previous query and the
other agents' answers of the previous round.

``open_round`` is shared by every round-based debate (Tool-MAD, MADKE, MADAM-RAG, MAD, Du et al.'s
multi-agent debate). It numbers the new round from the rounds the turns record, not from the
``round`` a client may have written, and refuses to open one past ``max_rounds``
(nodes/routing.py, issue #21).
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Overwrite, Send

from factdebate.core.state import DebaterState, DebateState
from factdebate.core.tool_mad import ToolMadContext
from factdebate.nodes.check_consensus import round_turns
from factdebate.nodes.routing import refuse_past_cap, rounds_done, run_context


def open_round(state: DebateState) -> dict[str, Any]:
    """Open the next round: recorded rounds + 1, refused past ``max_rounds``."""
    done = rounds_done(state)
    cap = run_context(state, ToolMadContext).max_rounds  # every round-based Context has it
    refuse_past_cap(done, cap, what="debate round(s)", knob="max_rounds")
    return {"round": Overwrite(done + 1)}


def route_debaters(state: DebateState, ctx: ToolMadContext | None = None) -> list[Send]:
    """One ``debate_turn`` branch per debater for the new round."""
    current = state["round"]
    previous = round_turns(state, current - 1) if current > 1 else []
    sends = []
    for agent in run_context(state, ToolMadContext, ctx).agent_ids():
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
