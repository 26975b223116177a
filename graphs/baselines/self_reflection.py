"""Single agent with self-reflection (MADAM-RAG's baseline, after Madaan et al. 2023).

Paper: MADAM-RAG (arXiv:2504.13079) §5.1 "1) prompt LLM to generate an initial answer; 2) prompt LLM
to review its previous answer and produce feedback; 3) prompt LLM to answer the question again with
the feedback. We conduct two rounds of self-reflection"; prompts in App. E. Graph: prepare ->
gather_evidence -> answer -> (critique -> refine) x ``reflection_rounds`` (default 2); the
feedback step is the node ``critique`` (``review`` is the shared reviewer step, graphs/finish.py).

Deviations: answers as JSON (label or {answers, explanation}); feedback as JSON {feedback}. With
no item documents the evidence is one retrieval for the claim (the Tool-MAD setting).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.baselines.context import SelfReflectionContext
from factdebate.nodes.baselines.gather_evidence import gather_evidence
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.reflect import refine, review, route_after_refine
from factdebate.nodes.baselines.single_answer import single_answer
from factdebate.nodes.baselines.state import BaselineState


def build_self_reflection(turns: Turns = "visible") -> StateGraph:
    """Self-reflection (uncompiled)."""
    g = new_builder(turns, BaselineState, context_schema=SelfReflectionContext,
                   input_schema=DebateInput, output_schema=DebateOutput)
    g.add_node("prepare", prepare_baseline)
    g.add_node("gather_evidence", gather_evidence)
    # the first answer does not decide: its refinement does (its citations are the verdict's)
    g.add_node("answer", single_answer("reflect_answer", stop=None, counts_round=False,
                                       decides=False))
    g.add_node("critique", review)
    g.add_node("refine", refine)
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "gather_evidence")
    g.add_edge("gather_evidence", "answer")
    g.add_edge("answer", "critique")
    g.add_edge("critique", "refine")
    g.add_conditional_edges("refine", route_after_refine, {"critique": "critique", END: CITE_VERDICT})
    return g


graph = build_self_reflection().compile(name="Self-reflection")
