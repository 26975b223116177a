"""Multi-agent debate (Du et al. 2023), MADKE's baseline.

Paper: MADKE (arXiv:2312.04854) §4.2 "Multi-Agent Debate utilizes multiple agents to propose and debate their
individual responses and reasoning processes over multiple rounds to arrive at a final answer".
Original: N agents answer independently; each later round every agent sees the other agents'
previous answers and updates its own; the final answer is the majority. Graph: prepare ->
open_round -> N parallel ``debate_turn`` branches (Tool-MAD's ``route_debaters`` + ``respond``,
tool-less) -> vote -> (open_round | END). Knobs (``MultiAgentDebateContext``): ``agents`` N=3,
``max_rounds`` R=2.

Deviations: an agent's own previous answer is not repeated to it (Du et al. keep each agent's
chat history; Tool-MAD's debater state carries only the others' answers); ``vote`` also runs
after intermediate rounds, recording the running majority; label tasks only.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput, DebateRecord, DebaterState
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.graphs.turns import StraightTurn, turn_node
from factdebate.nodes.baselines.context import MultiAgentDebateContext
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.baselines.vote import route_after_vote, vote
from factdebate.nodes.open_round import debater_router, rounds_opener
from factdebate.nodes.respond import respond


def build_debate_turn() -> StateGraph:
    """One agent's turn: respond (no tool)."""
    return StraightTurn(DebaterState, [("respond", respond)],
                        context_schema=MultiAgentDebateContext, output_schema=DebateRecord)


def build_multi_agent_debate(turns: Turns = "visible") -> StateGraph:
    """Du et al. multi-agent debate (uncompiled)."""
    g = new_builder(turns, BaselineState, context_schema=MultiAgentDebateContext,
                   input_schema=DebateInput, output_schema=DebateOutput)
    g.add_node("prepare", prepare_baseline)
    g.add_node("open_round", rounds_opener(MultiAgentDebateContext))
    g.add_node("debate_turn",  # graphs/turns.py
               turn_node(build_debate_turn(), "debate_turn", turns=turns))
    g.add_node("vote", vote)
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "open_round")
    g.add_conditional_edges("open_round", debater_router(MultiAgentDebateContext), ["debate_turn"])
    g.add_edge("debate_turn", "vote")
    g.add_conditional_edges("vote", route_after_vote, {"open_round": "open_round", END: CITE_VERDICT})
    return g


graph = build_multi_agent_debate().compile(name="Multi-agent debate")
