"""Who speaks next in MADKE (MADKE (arXiv:2312.04854) §3.2.2, Alg. 1 l. 3-12).

Round 1, simultaneous talk: every debater gets a ``debater_turn`` branch at once (``Send``), none
sees another's answer. Rounds > 1, orderly talk: one debater at a time in a fixed order; after
each turn ``route_after_debater_turn`` sends the next debater, who sees every other debater's
latest answer, until all have spoken and the judge takes over.

``orderly_view`` (``MadkeContext``) chooses what "the others' answers" are in orderly talk:
``latest`` (default; §3.2.2, debaters "build upon the views previously expressed", so an earlier
speaker's answer of this round) or ``previous_round`` (Alg. 1 l. 11's s^(r-1): every other
debater's answer of round r-1, even if it already spoke this round).
"""

from __future__ import annotations

from typing import Literal

from langgraph.types import Send

from factdebate.core.state import Turn
from factdebate.nodes.madke.gather_knowledge import shared_pool
from factdebate.nodes.madke.state import MadkeContext, MadkeState, SpeakerState
from factdebate.nodes.routing import run_context


def _latest(turns: list[Turn], agent: str, round_: int, *, this_round: bool = True
            ) -> Turn | None:
    """``agent``'s answer of ``round_`` if it has spoken (and ``this_round``), else of the round
    before."""
    for r in (round_, round_ - 1) if this_round else (round_ - 1,):
        found = [t for t in turns if t["agent"] == agent and t["round"] == r]
        if found:
            return found[-1]
    return None


def speaker_payload(state: MadkeState, ctx: MadkeContext, agent: str) -> SpeakerState:
    """What debater ``agent`` may see in the current round."""
    current = state["round"]
    turns = state.get("turns") or []
    others: list[Turn] = []
    if current > 1:
        for other in ctx.debater_ids():
            latest = (_latest(turns, other, current, this_round=ctx.orderly_view == "latest")
                      if other != agent else None)
            if latest is not None:
                others.append(latest)
    own = [t for t in turns if t["agent"] == agent and t["round"] == current - 1]
    return SpeakerState(
        agent=agent, round=current, claim=state["claim"],
        task=state["task"],  # type: ignore[typeddict-item]
        options=state.get("options"), pool=shared_pool(state, ctx),
        own_previous=own[-1] if own else None, others=others, selected=[],
        turns=[], ledger={}, flags=[],
    )


def route_speakers(state: MadkeState, ctx: MadkeContext | None = None) -> list[Send]:
    """Round 1: every debater in parallel; later rounds: the first debater only."""
    ctx = run_context(state, MadkeContext, ctx)
    speakers = ctx.debater_ids() if state["round"] == 1 else ctx.debater_ids()[:1]
    return [Send("debater_turn", speaker_payload(state, ctx, agent)) for agent in speakers]


def route_after_debater_turn(
    state: MadkeState, ctx: MadkeContext | None = None
) -> list[Send] | Literal["judge_consensus"]:
    """Orderly talk: the next debater who has not spoken this round, else the judge."""
    ctx = run_context(state, MadkeContext, ctx)
    current = state["round"]
    if current == 1:
        return "judge_consensus"
    spoken = {t["agent"] for t in state.get("turns") or [] if t["round"] == current}
    waiting = [agent for agent in ctx.debater_ids() if agent not in spoken]
    if not waiting:
        return "judge_consensus"
    return [Send("debater_turn", speaker_payload(state, ctx, waiting[0]))]
