"""The claim verifiers a graph may nest: a framework's compiled graph by name, in the graphs layer.

``check_text`` verifies each extracted claim with a registered framework. The framework registry
lives above this layer (``factdebate.run.frameworks``) and graphs may not import upwards, so this
module finds a framework's graph by the layout every framework follows: a module
``factdebate.graphs.<name>`` or ``factdebate.graphs.baselines.<name>`` that defines
``build_<name>()`` and exports ``graph``. ``tests/unit/test_check_text_units.py`` checks that
this finds exactly the registry's builders, so the two cannot drift apart.

A verifier is compiled without a checkpointer: nested in a node, it inherits the parent run's
checkpointer, so each claim's debate is checkpointed in its own namespace and a resumed text
check continues an interrupted claim where it stopped.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from factdebate.core.errors import ConfigError

PACKAGES = ("factdebate.graphs", "factdebate.graphs.baselines")
NOT_VERIFIERS = frozenset({"check_text", "verifiers", "turns", "finish", "single_call", "baselines"})
"""Modules of those packages that are not claim-verifying frameworks."""


def verifier_names() -> list[str]:
    """Framework names that can verify a claim, in package order."""
    names = []
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        names += [m.name for m in pkgutil.iter_modules(path)
                  if not m.ispkg and m.name not in NOT_VERIFIERS]
    return names


def verifier_builder(name: str) -> StateGraph:
    """The uncompiled graph of framework ``name`` (``-`` and case are normalised).

    Raises:
        ConfigError: ``name`` is no verifying framework (the known names are listed).
    """
    key = name.strip().lower().replace("-", "_")
    if key in verifier_names():
        for package in PACKAGES:
            try:
                module = importlib.import_module(f"{package}.{key}")
            except ModuleNotFoundError:
                continue
            build = getattr(module, f"build_{key}", None)
            if callable(build) and hasattr(module, "graph"):
                return build()  # type: ignore[no-any-return]
    raise ConfigError(f"unknown verifier framework {name!r}",
                      f"known: {', '.join(verifier_names())}")


@cache
def verifier_graph(name: str) -> CompiledStateGraph:
    """Framework ``name`` compiled once per process, checkpointer inherited from the parent."""
    key = name.strip().lower().replace("-", "_")
    return verifier_builder(key).compile(name=key)
