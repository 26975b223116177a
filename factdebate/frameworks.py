"""The framework registry: name -> graph factory (lazy), with the paper and prompt set.

A framework added later is one graph file, a prompts folder and one ``register`` line here.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from factdebate.registry import Registry

FRAMEWORKS: Registry = Registry("framework")
FRAMEWORKS.register(
    "tool_mad",
    "graphs.tool_mad:build_tool_mad",
    aliases=("tool-mad", "toolmad"),
    paper="Tool-MAD (stability score; consistency-score variant via scoring_mode)",
    prompt_set="tool_mad",
    title="Tool-MAD",
)


def build_framework(name: str) -> StateGraph:
    """The uncompiled graph of framework ``name``."""
    return FRAMEWORKS.get(name)()
