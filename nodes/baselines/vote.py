"""``vote``: the majority answer of the latest round's turns (self-consistency, Du et al.).

Labels are counted as given; in multi-answer mode a turn's answer set (case-insensitive) is the
unit that is counted. Ties go to the answer given first in agent order (``sample1`` before
``sample2``) and are flagged; turns without a usable answer do not vote.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Literal

from factdebate.core.state import Turn
from factdebate.nodes.baselines.ask_answer import first_round, result_fields
from factdebate.nodes.baselines.context import MultiAgentDebateContext
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.routing import END, rounds_done, rounds_used, run_context


def _agent_order(turn: Turn) -> tuple[str, int]:
    match = re.match(r"(.*?)(\d*)$", turn["agent"])
    assert match  # the pattern matches every string
    return match.group(1), int(match.group(2) or 0)


def _key(turn: Turn, multi: bool) -> Any:
    if multi:
        answers = turn.get("answers") or []
        return tuple(sorted({a.casefold() for a in answers})) if answers else None
    return turn["label"]


def vote(state: BaselineState) -> dict[str, Any]:
    """Majority answer of the latest round (also the running majority between Du et al. rounds)."""
    turns: list[Turn] = state.get("turns") or []
    latest = max((t["round"] for t in turns), default=0)
    multi = bool(state.get("multi_answer"))
    ballots = sorted((t for t in turns if t["round"] == latest), key=_agent_order)
    counts = Counter(k for t in ballots if (k := _key(t, multi)) is not None)
    update: dict[str, Any] = {"round": first_round(state), "stopped_by": "vote"}
    if not counts:
        return update | {"label": None, "answers": [], "rationale": "",
                         "flags": [f"vote: no usable answer in round {latest}"]}
    ranked = counts.most_common()
    winner, top = ranked[0]
    flags = []
    tied = [str(k) for k, n in ranked if n == top]
    if len(tied) > 1:
        flags.append(f"vote: round {latest} tie between {', '.join(tied)}; "
                     f"took the first in agent order ({winner})")
    chosen = next(t for t in ballots if _key(t, multi) == winner)
    return update | result_fields(chosen) | {"flags": flags}


def route_after_vote(
    state: BaselineState, ctx: MultiAgentDebateContext | None = None
) -> Literal["open_round", "__end__"]:
    """Du et al.: another debate round until ``max_rounds`` are done (counted from the turns)."""
    rounds = run_context(state, MultiAgentDebateContext, ctx).max_rounds
    return END if rounds_used(state, rounds_done(state)) >= rounds else "open_round"
