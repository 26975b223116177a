"""Self-Ask with retrieval (Press et al. 2022), MERMAID's natural-claim baseline.

Paper: MERMAID (arXiv:2601.22361) "Self-Ask is a structured prompting strategy that decomposes a complex query
into sub-questions, answers them sequentially, and then produces the final answer". Original
(Self-Ask + Search Engine): the model writes "Follow up:" questions, a search engine's answer is
inserted as "Intermediate answer:", until "So the final answer is:". Graph loop: prepare ->
follow_up -> answer_follow_up (retrieval) -> follow_up ... -> answer.

Deviations: the Intermediate answer is the top-k passages of our ``rag`` retriever (no answer
box); each follow-up is one JSON reply {follow_up} ("" = no more needed) instead of stopping the
generation at "Intermediate answer:"; the final answer ("So the final answer is:") is a separate
call on the task's label schema; no few-shot examples; ``max_follow_ups`` (default 4) bounds the
loop.
"""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.baselines.context import SelfAskContext
from factdebate.nodes.baselines.follow_up import (
    answer_follow_up,
    follow_up,
    route_after_answer_follow_up,
    route_after_follow_up,
    self_ask_chain,
)
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.single_answer import single_answer
from factdebate.nodes.baselines.state import BaselineState


def build_self_ask(turns: Turns = "visible") -> StateGraph:
    """Self-Ask (uncompiled)."""
    g = new_builder(turns, BaselineState, context_schema=SelfAskContext, input_schema=DebateInput,
                   output_schema=DebateOutput)
    g.add_node("prepare", prepare_baseline)
    g.add_node("follow_up", follow_up)
    g.add_node("answer_follow_up", answer_follow_up)
    g.add_node("answer", single_answer("self_ask_answer", stop=None, extra=self_ask_chain))
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "follow_up")
    g.add_conditional_edges("follow_up", route_after_follow_up, ["answer_follow_up", "answer"])
    g.add_conditional_edges("answer_follow_up", route_after_answer_follow_up,
                            ["follow_up", "answer"])
    g.add_edge("answer", CITE_VERDICT)
    return g


graph = build_self_ask().compile(name="Self-Ask")
