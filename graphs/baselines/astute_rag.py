"""Astute RAG (Wang et al. 2024), MADAM-RAG's baseline.

Paper: MADAM-RAG (arXiv:2504.13079) §5.1 and App. C (adaptive internal knowledge generation; iterative
source-aware knowledge consolidation into consistent/conflicting groups; answer finalization that
proposes an answer per group with a confidence and selects the most reliable); prompts in App. E.
Graph: prepare -> gather_evidence -> generate_passages -> consolidate x ``consolidation_rounds``
-> answer (consolidate-and-finalize prompt).

Knobs (``AstuteRagContext``): ``internal_passages`` (the paper's max m-hat, default 1),
``consolidation_rounds`` (default 1; the paper's t counts the final consolidate-and-answer step
too, so the default equals its t=2; 0 gives t=1).
Deviations: consolidated groups are JSON {source, documents, text}; answers as JSON.
"""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.baselines.consolidate import consolidate, generate_passages, route_after_consolidation
from factdebate.nodes.baselines.context import AstuteRagContext
from factdebate.nodes.baselines.gather_evidence import gather_evidence
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.single_answer import single_answer
from factdebate.nodes.baselines.state import BaselineState


def build_astute_rag(turns: Turns = "visible") -> StateGraph:
    """Astute RAG (uncompiled)."""
    g = new_builder(turns, BaselineState, context_schema=AstuteRagContext, input_schema=DebateInput,
                   output_schema=DebateOutput)
    g.add_node("prepare", prepare_baseline)
    g.add_node("gather_evidence", gather_evidence)
    g.add_node("generate_passages", generate_passages)
    g.add_node("consolidate", consolidate)
    g.add_node("answer", single_answer("astute_finalize", stop="finalize"))
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "gather_evidence")
    g.add_edge("gather_evidence", "generate_passages")
    g.add_conditional_edges("generate_passages", route_after_consolidation,
                            ["consolidate", "answer"])
    g.add_conditional_edges("consolidate", route_after_consolidation, ["consolidate", "answer"])
    g.add_edge("answer", CITE_VERDICT)
    return g


graph = build_astute_rag().compile(name="Astute RAG")
