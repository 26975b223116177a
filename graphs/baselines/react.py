"""Single-agent ReAct with the RAG tool (Yao et al. 2023), the Tool-MAD papers' "Single Agent".

Papers: Tool-MAD (arXiv:2601.04742) and its consistency-score version ("The single-agent baseline is based
on the ReAct framework, using RAG for external knowledge retrieval. ReAct enables iterative
reasoning via tool use and feedback"; Table II: reasoning, retrieval and query formulation).
Graph loop: prepare -> react_step (Thought + Action) -> react_tool (search -> Observation) ->
react_step ... until the agent finishes or ``max_steps`` (default 5, ReAct's FEVER budget)
searches are used -> answer (the Finish step, from the whole trajectory).

Deviations: one tool (search over the ``rag`` index) instead of Wikipedia search/lookup; actions
are JSON {thought, action, query} rather than parsed "Action: Search[...]" text; the final answer
is a separate call on the task's label schema (ReAct's Finish[answer] in the same generation could
not be read onto the label set reliably); no few-shot trajectories.
"""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.baselines.context import ReactContext
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.react_step import (
    react_step,
    react_tool,
    react_trajectory,
    route_after_react_step,
    route_after_react_tool,
)
from factdebate.nodes.baselines.single_answer import single_answer
from factdebate.nodes.baselines.state import BaselineState


def build_react(turns: Turns = "visible") -> StateGraph:
    """ReAct (uncompiled)."""
    g = new_builder(turns, BaselineState, context_schema=ReactContext, input_schema=DebateInput,
                   output_schema=DebateOutput)
    g.add_node("prepare", prepare_baseline)
    g.add_node("react_step", react_step)
    g.add_node("react_tool", react_tool)
    g.add_node("answer", single_answer("react_answer", stop=None, extra=react_trajectory))
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "react_step")
    g.add_conditional_edges("react_step", route_after_react_step, ["react_tool", "answer"])
    g.add_conditional_edges("react_tool", route_after_react_tool, ["react_step", "answer"])
    g.add_edge("answer", CITE_VERDICT)
    return g


graph = build_react().compile(name="ReAct")
