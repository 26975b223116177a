"""Plain retrieval-augmented generation: all retrieved knowledge concatenated, one call.

Paper: MADKE (arXiv:2312.04854) §4.2 "Retrieval-Augmented Generation uses all knowledge retrieved
from the Google search engine and Wikipedia to generate the final answer". Graph: prepare ->
gather_evidence (top_k from the ``rag`` retriever, or the item's documents when it has them) ->
answer.

Deviations: retrieval is our configured ``rag`` backend (vector or keyword index) instead of
Google + Wikipedia. ``concat_rag`` is this graph with MADAM-RAG's prompt and the item's documents.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from factdebate.graphs.baselines.single_call import build_single_call
from factdebate.graphs.exported import Turns


def build_rag(turns: Turns = "visible") -> StateGraph:
    """Plain RAG (uncompiled)."""
    return build_single_call("rag", evidence=True, turns=turns)


graph = build_rag().compile(name="RAG")
