"""``check_convergence``: MADAM-RAG's stopping rule (MADAM-RAG (arXiv:2504.13079) §4 "End of Debate").

The debate stops early when every agent keeps its answer of the previous round
(r_i^(t) = r_i^(t-1) for all i; answers compared ignoring case, punctuation and spacing), and in
any case after T = ``max_rounds`` rounds; the last aggregate is the final answer. ``stopped_by``
is ``no_change``, ``max_rounds`` or ``no_documents``. The final aggregate's aggregator reply's
citations become the deciding citation of the verdict's evidence (``final_citation``).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from factdebate.nodes.madam_rag.aggregate import final_citation, key
from factdebate.nodes.madam_rag.state import DocResponse, MadamRagContext, MadamRagState
from factdebate.nodes.progress import stop_decision
from factdebate.nodes.routing import END, rounds_done, rounds_used, run_context


def _answers(responses: list[DocResponse], round_: int) -> dict[str, str]:
    return {r["agent"]: key(r["answer"]) for r in responses if r["round"] == round_}


def unchanged(responses: list[DocResponse], round_: int) -> bool:
    """Whether every agent of ``round_`` gave the same answer as in the round before."""
    if round_ < 2:
        return False
    now, before = _answers(responses, round_), _answers(responses, round_ - 1)
    return bool(now) and now == before


def check_convergence(state: MadamRagState, runtime: Runtime[MadamRagContext]) -> dict[str, Any]:
    """Set ``stopped_by`` when this round ends the debate."""
    update: dict[str, Any] = {}
    if not state.get("agent_documents"):
        update = {"stopped_by": "no_documents"}
    elif unchanged(state.get("responses") or [], state["round"]):
        update = {"stopped_by": "no_change", **final_citation(state)}
    elif rounds_used(state, rounds_done(state)) >= runtime.context.max_rounds:  # from turns
        update = {"stopped_by": "max_rounds", **final_citation(state)}
    return stop_decision(state.get("round"), update)  # progress event (nodes/progress.py)


def route_after_check_convergence(
    state: MadamRagState, ctx: MadamRagContext | None = None
) -> Literal["open_round", "__end__"]:
    """End once stopped or after ``max_rounds`` recorded rounds, else another round."""
    if state.get("stopped_by"):
        return END
    done = rounds_used(state, rounds_done(state))
    return END if done >= run_context(state, MadamRagContext, ctx).max_rounds else "open_round"
