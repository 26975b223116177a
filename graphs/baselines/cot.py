"""Zero-shot chain-of-thought: "Let's think step by step" (Kojima et al. 2022).

Papers: Tool-MAD (arXiv:2601.04742) and its consistency-score version ("Zero-shot CoT is to induce
reasoning with the prompt 'Let's think step by step'"); MADKE (arXiv:2312.04854) §4.2. Graph:
prepare -> answer.

Deviations: Kojima et al. use two calls (reasoning extraction, then answer extraction with
"Therefore, the answer is"); here one call returns JSON whose ``reasoning`` field (written first)
holds the step-by-step chain and whose ``label`` field is the extracted answer. MADKE adds a
one-shot CoT demonstration; the Tool-MAD papers (whose setting we follow) use zero-shot.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from factdebate.graphs.baselines.single_call import build_single_call
from factdebate.graphs.exported import Turns


def build_cot(turns: Turns = "visible") -> StateGraph:
    """Zero-shot CoT (uncompiled)."""
    return build_single_call("cot", evidence=False, turns=turns)


graph = build_cot().compile(name="Zero-shot CoT")
