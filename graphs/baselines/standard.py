"""Standard prompting: the model answers directly (Brown et al. 2020, as MADKE's baseline).

Paper: MADKE (arXiv:2312.04854) §4.2 "Standard Prompting directly generates the final answer with a one-shot
demonstration to standardize the output format". Graph: prepare -> answer (one call).

Deviations: no one-shot demonstration - the output format is fixed by the JSON answer schema
instead (the demonstration's only stated purpose); the reply still carries a short reasoning field.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from factdebate.graphs.baselines.single_call import build_single_call
from factdebate.graphs.exported import Turns


def build_standard(turns: Turns = "visible") -> StateGraph:
    """Standard prompting (uncompiled)."""
    return build_single_call("standard", evidence=False, turns=turns)


graph = build_standard().compile(name="Standard prompting")
