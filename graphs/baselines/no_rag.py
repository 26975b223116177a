"""No-RAG: the question only, answered from parametric knowledge (MADAM-RAG's baseline).

Paper: MADAM-RAG (arXiv:2504.13079) §5.1 "No RAG: prompt the LLM with the question only, without any
retrieved documents"; prompt in App. E ("If there are multiple correct answers, please list them
all"). Graph: prepare -> answer. Default (``NoRagContext``): ``answer_mode="answers"`` (a list).

Deviations: answers as JSON {answers, explanation} instead of the bare answer text.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from factdebate.core.state import DebateInput
from factdebate.graphs.baselines.single_call import build_single_call
from factdebate.graphs.exported import Turns
from factdebate.nodes.baselines.context import NoRagContext


class QuestionInput(DebateInput):
    """A question answered from the model's own knowledge, as a list of every correct answer."""

    claim: str
    """The question (or claim). The result is ``answers`` (every correct answer) and ``label``
    stays empty; set ``answer_mode=label`` in the configuration for a verdict on a claim."""


def build_no_rag(turns: Turns = "visible") -> StateGraph:
    """No-RAG (uncompiled)."""
    return build_single_call("no_rag", evidence=False, context=NoRagContext, turns=turns,
                             input_schema=QuestionInput)


graph = build_no_rag().compile(name="No-RAG")
