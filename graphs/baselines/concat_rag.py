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

from factdebate.core.state import DebateInput, Evidence
from factdebate.graphs.baselines.single_call import build_single_call
from factdebate.graphs.exported import Turns
from factdebate.nodes.baselines.context import ConcatRagContext


class DocumentsInput(DebateInput):
    """A question (or claim) and the documents to answer it from: Concatenated-prompt RAG reads
    the item's own documents, all of them in one prompt (set ``evidence_source=retrieve`` in the
    configuration to retrieve passages for the claim instead)."""

    documents: list[Evidence]  # type: ignore[misc]  # required here
    """Required: the item's documents, ``[{"title": ..., "text": ...}, ...]`` (``id`` optional);
    a run without them stops with one line saying so."""


def build_concat_rag(turns: Turns = "visible") -> StateGraph:
    """Concatenated-prompt RAG (uncompiled)."""
    return build_single_call("concat_rag", evidence=True, context=ConcatRagContext, turns=turns,
                             input_schema=DocumentsInput)


graph = build_concat_rag().compile(name="Concatenated-prompt RAG")
