"""The framework registry: name -> graph factory (lazy), with the paper, prompt set and Context.

A framework added later is one graph file, a prompts folder and one ``register`` line here. A
framework whose knobs go beyond the shared ``Context`` declares a ``Context`` subclass (a
dataclass adding fields with defaults and descriptions) as ``context="module:Class"``; the CLI and
the runner build that class for it.
"""

from __future__ import annotations

import importlib

from langgraph.graph import StateGraph

from factdebate.context import Context

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


def context_class(name: str) -> type[Context]:
    """The Context (sub)class framework ``name`` is configured with."""
    ref = FRAMEWORKS.entry(name).meta.get("context")
    if not ref:
        return Context
    module, _, attr = ref.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Context)):
        raise TypeError(f"framework {name!r} declares context {ref!r}, not a Context subclass")
    return cls
