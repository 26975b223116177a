"""Self-consistency (Wang et al. 2022): k sampled chain-of-thought paths, majority vote.

Paper: MADKE (arXiv:2312.04854) §4.2 "Self Consistency samples a diverse set of reasoning paths and
then selects the most consistent answer by marginalizing all possible reasoning paths". Graph:
prepare -> k parallel ``sample`` branches (``Send``; the zero-shot CoT template at
``sample_temperature``) -> vote. Knobs (``SelfConsistencyContext``): ``samples`` k=5,
``sample_temperature`` 0.7.

Deviations: "marginalizing" is the unweighted majority over the parsed answers (the original's
main variant); ties go to the lowest-numbered sample and are flagged. Wang et al. sample 40 paths;
k=5 keeps the cost comparable to the other baselines.
"""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.baselines.context import SelfConsistencyContext
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.sample import route_samples, sample
from factdebate.nodes.baselines.state import BaselineState, BranchState
from factdebate.nodes.baselines.vote import vote


def build_self_consistency(turns: Turns = "visible") -> StateGraph:
    """Self-consistency (uncompiled)."""
    g = new_builder(turns, BaselineState, context_schema=SelfConsistencyContext,
                   input_schema=DebateInput, output_schema=DebateOutput)
    g.add_node("prepare", prepare_baseline)
    g.add_node("sample", sample, input_schema=BranchState)
    g.add_node("vote", vote)
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_conditional_edges("prepare", route_samples, ["sample"])
    g.add_edge("sample", "vote")
    g.add_edge("vote", CITE_VERDICT)
    return g


graph = build_self_consistency().compile(name="Self-consistency")
