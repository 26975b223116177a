"""Concatenated-prompt RAG: all of the item's documents in one prompt (MADAM-RAG's baseline).

Paper: MADAM-RAG (arXiv:2504.13079) §5.1 "Concatenated-prompt: a standard RAG pipeline where all retrieved
documents are concatenated and passed as input to the model along with the query"; prompt in
App. E (the one-shot Michael Jordan example, "All Correct Answers: [...]"). Graph: prepare ->
gather_evidence (the item's documents) -> answer; the same wiring as ``rag``.

Defaults (``ConcatRagContext``): ``answer_mode="answers"`` (RAMDocs: a list of all correct
answers) and ``evidence_source="documents"`` (an item without documents is rejected).
Deviations: answers as JSON {answers, explanation}; the "All Correct Answers: [...]" format is
still parsed from free text.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from factdebate.graphs.baselines.single_call import build_single_call
from factdebate.graphs.exported import Turns
from factdebate.nodes.baselines.context import ConcatRagContext


def build_concat_rag(turns: Turns = "visible") -> StateGraph:
    """Concatenated-prompt RAG (uncompiled)."""
    return build_single_call("concat_rag", evidence=True, context=ConcatRagContext, turns=turns)


graph = build_concat_rag().compile(name="Concatenated-prompt RAG")
