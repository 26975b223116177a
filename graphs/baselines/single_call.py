"""Wiring shared by the one-call baselines: prepare -> [gather_evidence] -> answer."""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.baselines.context import BaselineContext
from factdebate.nodes.baselines.gather_evidence import gather_evidence
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.single_answer import single_answer
from factdebate.nodes.baselines.state import BaselineState


def build_single_call(
    template: str, *, evidence: bool, context: type[BaselineContext] = BaselineContext,
    turns: Turns = "visible", input_schema: type = DebateInput,
) -> StateGraph:
    """``prepare`` -> (``gather_evidence`` when ``evidence``) -> ``answer`` with ``template``;
    ``input_schema`` is what Studio's form shows (a ``DebateInput`` with the baseline's needs)."""
    g = new_builder(
        turns, BaselineState, context_schema=context, input_schema=input_schema,
        output_schema=DebateOutput,
    )
    g.add_node("prepare", prepare_baseline)
    g.add_node("answer", single_answer(template))
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    if evidence:
        g.add_node("gather_evidence", gather_evidence)
        g.add_edge("prepare", "gather_evidence")
        g.add_edge("gather_evidence", "answer")
    else:
        g.add_edge("prepare", "answer")
    g.add_edge("answer", CITE_VERDICT)
    return g
