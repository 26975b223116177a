"""The framework registry: name -> graph factory (lazy), with the paper, prompt set and Context.

A framework added to the package is one graph file, a prompts folder and one ``register`` line
here; one that lives outside it registers from a plugin module of its own (``FACTDEBATE_PLUGINS``,
core/registry.py; docs/extending.md walks through one). A framework whose knobs go beyond the
shared ``Context`` declares a ``Context`` subclass (a dataclass adding fields with defaults and
descriptions) as ``context="module:Class"``; the CLI and the runner build that class for it.
"""

from __future__ import annotations

import importlib

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from factdebate.core.context import Context
from factdebate.core.registry import Registry
from factdebate.graphs.variants import Turns

FRAMEWORKS: Registry = Registry("framework")
FRAMEWORKS.register(
    "tool_mad",
    "factdebate.graphs.tool_mad:build_tool_mad",
    aliases=("tool-mad", "toolmad"),
    paper="Tool-MAD (stability score; consistency-score variant via scoring_mode)",
    prompt_set="tool_mad",
    title="Tool-MAD",
    context="factdebate.nodes.tool_mad.state:ToolMadContext",
)
FRAMEWORKS.register(
    "mermaid",
    "factdebate.graphs.mermaid:build_mermaid",
    paper="MERMAID (decomposer + ReAct executor over MCP tools + persistent evidence memory)",
    prompt_set="mermaid",
    title="MERMAID",
    context="factdebate.nodes.mermaid.state:MermaidContext",
)
FRAMEWORKS.register(
    "madke",
    "factdebate.graphs.madke:build_madke",
    paper="MADKE (shared knowledge pool + adaptive knowledge selection; judge, summariser)",
    prompt_set="madke",
    title="MADKE",
    context="factdebate.nodes.madke.state:MadkeContext",
)
FRAMEWORKS.register(
    "madam_rag",
    "factdebate.graphs.madam_rag:build_madam_rag",
    aliases=("madam-rag", "madamrag"),
    paper="MADAM-RAG (one agent per document, aggregator, early stop when answers hold)",
    prompt_set="madam_rag",
    title="MADAM-RAG",
    context="factdebate.nodes.madam_rag.state:MadamRagContext",
)

FRAMEWORKS.register(
    "check_text",
    "factdebate.graphs.check_text:build_check_text",
    aliases=("check-text",),
    paper="Whole-text check: claim extraction, a debate per claim, cited verdict",
    prompt_set="check_text",
    title="check_text",
    context="factdebate.nodes.check_text.state:CheckTextContext",
)

# Baselines: graphs/baselines/, prompts/baselines/, factdebate/baseline_context.py.
_BASELINES = (
    # name, module, title, paper, context class, needs_index
    ("standard", "Standard prompting", "Brown et al. 2020 (MADKE baseline)",
     "BaselineContext", False),
    ("cot", "Zero-shot CoT", "Kojima et al. 2022 (Tool-MAD, MADKE baseline)",
     "BaselineContext", False),
    ("self_consistency", "Self-consistency", "Wang et al. 2022 (MADKE baseline)",
     "SelfConsistencyContext", False),
    ("react", "Single-agent ReAct + RAG", "Yao et al. 2023 (Tool-MAD baseline)",
     "ReactContext", True),
    ("rag", "RAG", "retrieval-augmented generation (MADKE baseline)", "BaselineContext", True),
    ("no_rag", "No-RAG", "parametric knowledge only (MADAM-RAG baseline)", "NoRagContext", False),
    ("concat_rag", "Concatenated-prompt RAG", "all item documents in one prompt (MADAM-RAG "
     "baseline)", "ConcatRagContext", False),
    ("mad", "MAD", "Liang et al. 2023 (Tool-MAD baseline)", "MadContext", False),
    ("multi_agent_debate", "Multi-agent debate", "Du et al. 2023 (MADKE baseline)",
     "MultiAgentDebateContext", False),
    ("self_reflection", "Self-reflection", "Madaan et al. 2023 (MADAM-RAG baseline)",
     "SelfReflectionContext", True),
    ("astute_rag", "Astute RAG", "Wang et al. 2024 (MADAM-RAG baseline)", "AstuteRagContext",
     True),
    ("speculative_rag", "Speculative RAG", "Wang et al. 2024 (MADAM-RAG baseline)",
     "SpeculativeRagContext", True),
    ("self_ask", "Self-Ask", "Press et al. 2022 (MERMAID baseline)", "SelfAskContext", True),
)
for _name, _title, _paper, _context, _needs_index in _BASELINES:
    FRAMEWORKS.register(
        _name,
        f"factdebate.graphs.baselines.{_name}:build_{_name}",
        paper=_paper,
        prompt_set="baselines",
        title=_title,
        context=f"factdebate.nodes.baselines.context:{_context}",
        needs_index=_needs_index,
        baseline=True,
    )

def build_framework(name: str, turns: Turns = "visible") -> StateGraph:
    """The uncompiled graph of framework ``name``, its turns ``visible`` (what langgraph.json
    exports and Python users get) or ``lean`` (the CLI and ``eval``; graphs/exported.py)."""
    return FRAMEWORKS.get(name)(turns=turns)


def exported_graph(name: str) -> CompiledStateGraph:
    """The compiled graph langgraph.json exports for framework ``name`` (its module's ``graph``)."""
    return importlib.import_module(FRAMEWORKS.get(name).__module__).graph


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
