"""``check_consensus``: Tool-MAD's early-stopping rule, applied after every round.

Stability mode (stability-score paper, Alg. 1): stop when all debaters give the same label *and*
every debater's answer of this round clears both thresholds (faithfulness and answer relevancy).
Alg. 1 writes ``S^A > St`` with S^A accumulated over rounds, while §III-C says a round is
inconclusive when either score of that round "falls below" its threshold. ``stop_rule`` picks one:
``round_ge`` (default, §III-C) compares this round's scores with ``>=``; ``accumulated_gt``
(Alg. 1, literally) sums each score over rounds 1..r (a failed score adds 0) and compares the
sums with ``>``. A debater without evidence (``vanilla``) has no faithfulness, so only its
relevancy is checked; with ``round_ge`` a score that failed to compute blocks the stop.
Consistency mode and ``none`` (consistency paper, Alg. 1 l. 17): stop on label agreement alone.
With ``score_feedback`` off (the "w/o scoring feedback" ablation) scores never gate stopping.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from factdebate.core.budget import raise_if_refused
from factdebate.core.state import DebateState, RoundScore, Turn
from factdebate.nodes.progress import emit
from factdebate.nodes.routing import END, round_turns, rounds_done, rounds_used, run_context
from factdebate.nodes.tool_mad.state import ToolMadContext


def _row(scores: dict[str, list[RoundScore]], agent: str, round_: int) -> RoundScore | None:
    return next((r for r in scores.get(agent, []) if r.get("round") == round_), None)


def clears_thresholds(turn: Turn, row: RoundScore | None, ctx: ToolMadContext) -> bool:
    """Whether one answer's stability scores clear both thresholds."""
    if row is None:
        return False
    relevancy = row.get("answer_relevancy")
    if relevancy is None or relevancy < ctx.relevance_threshold:
        return False
    faithfulness = row.get("faithfulness")
    if faithfulness is None:
        return not turn["evidence"]  # nothing to be faithful to; a failed score blocks
    return faithfulness >= ctx.faithfulness_threshold


def clears_accumulated(agent: str, rows: list[RoundScore], round_: int, has_evidence: bool,
                       ctx: ToolMadContext) -> bool:
    """Alg. 1's gate: S^A = sum of (f, ar) over rounds 1..``round_`` must exceed (f, ar)."""
    upto = [r for r in rows if (r.get("round") or 0) <= round_]
    relevancy = sum(r.get("answer_relevancy") or 0.0 for r in upto)
    if relevancy <= ctx.relevance_threshold:
        return False
    if not has_evidence and all(r.get("faithfulness") is None for r in upto):
        return True  # a tool-less debater has no faithfulness in any round
    return sum(r.get("faithfulness") or 0.0 for r in upto) > ctx.faithfulness_threshold


def consensus_reached(
    turns: list[Turn], scores: dict[str, list[RoundScore]], ctx: ToolMadContext
) -> bool:
    """The stopping rule for one round's turns."""
    labels = {t["label"] for t in turns}
    if len(turns) < 2 or len(labels) != 1 or None in labels:
        return False
    if ctx.scoring_mode != "stability" or not ctx.score_feedback:
        return True
    if ctx.stop_rule == "accumulated_gt":
        return all(clears_accumulated(t["agent"], scores.get(t["agent"], []), t["round"],
                                      bool(t["evidence"]), ctx) for t in turns)
    return all(clears_thresholds(t, _row(scores, t["agent"], t["round"]), ctx) for t in turns)


def check_consensus(state: DebateState, runtime: Runtime[ToolMadContext]) -> dict[str, Any]:
    """Set the verdict when this round ends the debate by consensus.

    First, a run whose budget refused one of this round's RAGAS calls (RAGAS records a refused
    call as a scoring fault and goes on) stops here with the budget's error.
    """
    raise_if_refused()
    turns = round_turns(state)
    update: dict[str, Any] = {}
    if consensus_reached(turns, state.get("scores", {}), runtime.context):
        update = {"label": turns[0]["label"], "rationale": turns[0]["answer"],
                  "stopped_by": "consensus"}
    current = state.get("round")  # progress events for a UI (nodes/progress.py)
    emit("scores", round=current, scores={
        t["agent"]: _row(state.get("scores", {}), t["agent"], t["round"]) for t in turns})
    after = route_after_check_consensus({**state, **update}, runtime.context)  # type: ignore[typeddict-item]
    emit("stop_decision", round=current, stop=after != "open_round",
         by={"__end__": "consensus", "judge": "max_rounds"}.get(after))
    return update


def route_after_check_consensus(
    state: DebateState, ctx: ToolMadContext | None = None
) -> Literal["open_round", "judge", "__end__"]:
    """End on consensus, go to the judge after the last round, else debate another round.

    Rounds are counted from the turns the debate recorded (``rounds_used``), so a client's edit
    of ``round`` cannot buy rounds past ``max_rounds``.
    """
    if state.get("stopped_by") == "consensus":
        return END
    if rounds_used(state, rounds_done(state)) >= run_context(state, ToolMadContext, ctx).max_rounds:
        return "judge"
    return "open_round"
