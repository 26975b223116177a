"""Speculative RAG (Wang et al. 2024): parallel drafts from document subsets, a verifier picks one.

Paper: MADAM-RAG (arXiv:2504.13079) §5.1 and App. B (documents clustered by perspective, one
document per cluster per subset; a specialist drafter writes an answer + rationale per subset in
parallel; a generalist verifier selects the best draft). Graph: prepare -> gather_evidence ->
``draft_branch`` per subset (``Send``; subgraph draft -> verify_draft) -> select_draft.

Knobs (``SpeculativeRagContext``): ``drafts`` m=3, ``top_k`` 6 documents.
Deviations: subsets are a disjoint round-robin split of the ranked documents instead of
embedding clusters (InBedder); drafter and verifier are the debater and judge models (no distilled
specialist); the verifier's likelihood-based score is asked as a [0, 1] judgement per draft (see
nodes/baselines/verify_drafts.py).

Multi-answer questions (RAMDocs): as in MADAM-RAG App. B, the drafts are not verified; every
draft's answers and rationale go to an aggregator (the judge model) that lists all correct
answers (nodes/baselines/aggregate_drafts.py). Switch: ``multi_answer_drafts=select`` keeps the original
verifier's single pick there too.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime

from factdebate.core.state import DebateInput, DebateOutput, DebateRecord
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.graphs.turns import StraightTurn, turn_node
from factdebate.nodes.baselines.aggregate_drafts import (
    aggregate_drafts,
    aggregates,
    route_after_drafts,
)
from factdebate.nodes.baselines.context import SpeculativeRagContext
from factdebate.nodes.baselines.draft import draft, route_drafts
from factdebate.nodes.baselines.gather_evidence import gather_evidence
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.state import BaselineState, BranchState
from factdebate.nodes.baselines.verify_drafts import select_draft, verify_draft


async def verify_or_pass(state: BranchState, runtime: Runtime[SpeculativeRagContext]
                         ) -> dict[str, Any]:
    """The verifier's score of the branch's draft; nothing when the aggregator reads all drafts.

    The skip is decided in the node, not by an edge to the branch's end: two edges into a
    subgraph's end make ``get_graph(xray=True)`` draw that end as a node of its own
    (``draft_branch:__end__``), which the branch does not run.
    """
    if aggregates(state, runtime.context):
        return {}
    return await verify_draft(state, runtime)


def build_draft_branch() -> StateGraph:
    """One draft: draft -> verify_draft (a no-op when the aggregator reads all drafts)."""
    return StraightTurn(BranchState, [("draft", draft), ("verify_draft", verify_or_pass)],
                        context_schema=SpeculativeRagContext, output_schema=DebateRecord)


def build_speculative_rag(turns: Turns = "visible") -> StateGraph:
    """Speculative RAG (uncompiled)."""
    g = new_builder(turns, BaselineState, context_schema=SpeculativeRagContext,
                   input_schema=DebateInput, output_schema=DebateOutput)
    g.add_node("prepare", prepare_baseline)
    g.add_node("gather_evidence", gather_evidence)
    g.add_node("draft_branch",  # graphs/turns.py
               turn_node(build_draft_branch(), "draft_branch", turns=turns))
    g.add_node("select_draft", select_draft)
    g.add_node("aggregate_drafts", aggregate_drafts)
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "gather_evidence")
    g.add_conditional_edges("gather_evidence", route_drafts, ["draft_branch"])
    g.add_conditional_edges("draft_branch", route_after_drafts,
                            ["select_draft", "aggregate_drafts"])
    g.add_edge("select_draft", CITE_VERDICT)
    g.add_edge("aggregate_drafts", CITE_VERDICT)
    return g


graph = build_speculative_rag().compile(name="Speculative RAG")
