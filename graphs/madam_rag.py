"""MADAM-RAG: Multi-agent Debate for Ambiguity and Misinformation in RAG.

Paper: Han Wang, Archiki Prasad, Elias Stengel-Eskin, Mohit Bansal, "Retrieval-Augmented Generation
with Conflicting Evidence", arXiv:2504.13079 (2025) - §4 (document agents, aggregator, multi-round
debate, early stopping), prompts in Appendix E ("MADAM-RAG: Individual Agent", "Aggregator"); T = 3
rounds (§5).

The method, as wired here:
``prepare`` -> ``gather_documents`` (the item's documents, or top ``num_documents`` from the
rag backend for the claim) -> per round ``open_round`` -> ``answer_from_document`` (one parallel
``Send`` branch per document: r_i = L_i(q, d_i[, y^(t-1), e^(t-1)])) -> ``aggregate`` (shuffled
responses -> "All Correct Answers" + explanation; concatenation with the aggregator off) ->
``check_convergence`` (stop when no agent changed its answer, or after T rounds) -> next round
or ``cite_verdict`` (the verdict's cited evidence) -> end. The output carries the answer list in
``answers`` and, when that list is one answer naming a label of the task (claim verification,
MedQA, PubMedQA), that label in ``label``.

Deviations (and why):

* Agents and aggregator are asked for JSON with the paper's two parts ({answer, explanation},
  {answers, explanation}); the paper's free-text formats are still parsed as a fallback.
* For claim tasks the agent and aggregator prompts add the task's label instruction, so answers
  can map onto the label set; open questions use the ``open_qa`` task (RAMDocs).
* The shuffle before the aggregator is seeded (``shuffle_seed``, claim, round) so runs are
  reproducible and a resumed run sees the same order.
* The aggregator uses the judge model spec (empty = the debater model).
* Without the aggregator, "concatenated answers" are the distinct answers of the agents in
  document order, leaving out 'unknown'; later rounds show the agents those concatenated
  responses in place of the aggregate.
* With no documents at all (retrieval empty or failed) no agent runs; the result has no answers,
  ``stopped_by="no_documents"`` and a flag.
* Citations (not in the paper): each agent cites its one document ([1]) or nothing; the
  aggregator is also shown the opening of the document behind each response, numbered as the
  responses are, and cites the documents behind the answers it keeps. The final aggregate's
  citations decide; ``cite_verdict`` (last node) keeps them and the documents cited by the agents
  whose answers (label) became the final answers as the verdict's evidence.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.madam_rag.aggregate import aggregate
from factdebate.nodes.madam_rag.answer_from_document import answer_from_document, route_agents
from factdebate.nodes.madam_rag.check_convergence import check_convergence, route_after_check_convergence
from factdebate.nodes.madam_rag.gather_documents import gather_documents
from factdebate.nodes.madam_rag.state import MadamRagContext, MadamRagState
from factdebate.nodes.open_round import rounds_opener
from factdebate.nodes.prepare import prepare_for

__all__ = ["MadamRagContext", "build_madam_rag", "graph"]


def build_madam_rag(turns: Turns = "visible") -> StateGraph:
    """The MADAM-RAG debate graph (uncompiled)."""
    g = new_builder(
        turns, MadamRagState, context_schema=MadamRagContext, input_schema=DebateInput,
        output_schema=DebateOutput,
    )
    g.add_node("prepare", prepare_for(MadamRagState))
    g.add_node("gather_documents", gather_documents)
    g.add_node("open_round", rounds_opener(MadamRagContext))
    g.add_node("answer_from_document", answer_from_document)
    g.add_node("aggregate", aggregate)
    g.add_node("check_convergence", check_convergence)
    # graphs/finish.py: the verdict's cited evidence, then END; every agent's document was shown
    add_cite_verdict(g, seen=lambda s: s.get("agent_documents") or [])
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "gather_documents")
    g.add_edge("gather_documents", "open_round")
    g.add_conditional_edges("open_round", route_agents, ["answer_from_document", "aggregate"])
    g.add_edge("answer_from_document", "aggregate")
    g.add_edge("aggregate", "check_convergence")
    g.add_conditional_edges(
        "check_convergence", route_after_check_convergence,
        {"open_round": "open_round", END: CITE_VERDICT},
    )
    return g


graph = build_madam_rag().compile(name="MADAM-RAG")
