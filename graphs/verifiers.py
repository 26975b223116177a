"""The claim verifiers a graph may nest: a framework's compiled graph by name or alias.

``check_text`` verifies each extracted claim with a registered framework. The names come from the
one framework registry (``factdebate.graphs.registry``), so ``check_text`` accepts
every name and alias ``verify`` accepts (``toolmad``, ``tool-mad``, ``madam-rag`` ...), and a
framework added to the registry is a verifier without further wiring.

A verifier is compiled without a checkpointer: nested in a node, it inherits the parent run's
checkpointer, so each claim's debate is checkpointed in its own namespace and a resumed text
check continues an interrupted claim where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from factdebate.core.errors import ConfigError
from factdebate.graphs.exported import Turns
from factdebate.graphs.registry import FRAMEWORKS, build_framework

NOT_VERIFIERS = frozenset({"check_text"})
"""Registered frameworks that do not verify one claim (the text check itself)."""


def verifier_names() -> list[str]:
    """Framework names that can verify a claim, in registry order."""
    return [name for name in FRAMEWORKS.names() if name not in NOT_VERIFIERS]


def verifier_key(name: str) -> str:
    """The registry name of verifier ``name`` (an alias, any case, ``-`` or ``_``).

    Raises:
        ConfigError: ``name`` is no verifying framework (the known names are listed).
    """
    raw = name.strip()
    for candidate in dict.fromkeys((raw, raw.lower(), raw.lower().replace("-", "_"))):
        if candidate in FRAMEWORKS:
            key = FRAMEWORKS.resolve(candidate)
            if key not in NOT_VERIFIERS:
                return key
    raise ConfigError(f"unknown verifier framework {name!r}",
                      f"known: {', '.join(verifier_names())}")


def verifier_builder(name: str) -> StateGraph:
    """The uncompiled graph of verifier ``name`` (aliases allowed)."""
    return build_framework(verifier_key(name))


@cache
def _compiled(key: str, turns: Turns) -> CompiledStateGraph:
    return build_framework(key, turns=turns).compile(name=key)


def verifier_graph(name: str, turns: Turns = "visible") -> CompiledStateGraph:
    """Verifier ``name`` compiled once per process, checkpointer inherited from the parent."""
    return _compiled(verifier_key(name), turns)


def verifiers_of(turns: Turns) -> Callable[[str], CompiledStateGraph]:
    """``verifier_graph`` of the ``turns`` variant (graphs/exported.py), by name."""
    return partial(verifier_graph, turns=turns)
