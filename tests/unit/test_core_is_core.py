"""``factdebate.core`` holds only what every framework shares, and no test double.

The import graph is grimp's over the installed package (the checkout itself, docs/architecture_text.md
"Architecture"). A framework is a folder of ``nodes/`` (``nodes/tool_mad`` ...) or a graph module
(``graphs/madke.py``; the baselines' graphs count as one framework family with their nodes).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import grimp
import pytest

CORE = "factdebate.core"
DOUBLE_WORDS = ("scripted", "scenario", "script")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("factdebate", cache_dir=None)


def framework_of(module: str) -> str | None:
    """The framework a module belongs to, or None for shared and upper-layer modules."""
    parts = module.split(".")
    if parts[1] == "nodes" and len(parts) > 3:  # factdebate.nodes.<framework>.<module>
        return parts[2]
    if parts[1] == "graphs" and len(parts) > 2:
        if parts[2] == "baselines":
            return "baselines"
        if len(parts) == 3 and parts[2] not in ("finish", "turns", "registry", "verifiers"):
            return parts[2]
    return None


def single_framework_core_modules(graph: grimp.ImportGraph) -> dict[str, str]:
    """Core modules imported from outside the core by exactly one framework and nothing else."""
    found = {}
    for module in sorted(m for m in graph.modules if m.startswith(CORE + ".")):
        if graph.find_children(module):
            continue  # a package: its modules are checked one by one
        importers = graph.find_modules_that_directly_import(module)
        if any(m.startswith(CORE) for m in importers):
            continue  # the core itself builds on it: shared
        owners = {framework_of(m) for m in importers}
        if importers and len(owners) == 1 and None not in owners:
            found[module] = owners.pop()  # type: ignore[assignment]
    return found


def test_no_core_module_belongs_to_one_framework(graph: grimp.ImportGraph):
    assert single_framework_core_modules(graph) == {}


def test_the_check_finds_a_framework_module_put_back_in_the_core(graph: grimp.ImportGraph):
    """The check above can fail: a copy of the graph with MADKE's state module back in the core."""
    moved = grimp.build_graph("factdebate", cache_dir=None)  # a fresh graph to edit
    moved.add_module(f"{CORE}.madke")
    for importer in graph.find_modules_that_directly_import("factdebate.nodes.madke.state"):
        moved.add_import(importer=importer, imported=f"{CORE}.madke")
    assert single_framework_core_modules(moved) == {f"{CORE}.madke": "madke"}


def test_no_test_double_in_the_core(graph: grimp.ImportGraph):
    doubles = [m for m in graph.modules if m.startswith(CORE)
               and any(word in m.rsplit(".", 1)[-1] for word in DOUBLE_WORDS)]
    assert doubles == []
    # and nothing below the testing layer imports it
    below = [m for m in graph.find_modules_that_directly_import("factdebate.testing.scripted")
             if m.split(".")[1] in ("core", "nodes", "tools", "prompts", "patches", "graphs")]
    assert below == []


def lazily_registered() -> set[str]:
    """Modules named by a registry's lazy ``"module:attr"`` entry anywhere in the package."""
    root = Path(importlib.util.find_spec("factdebate").origin).parent
    text = "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.py")
                      if ".venv" not in p.parts and "tests" not in p.parts)
    return set(re.findall(r'"(factdebate(?:\.\w+)+):\w+"', text))


def test_no_core_module_is_imported_by_nobody(graph: grimp.ImportGraph):
    """A core module nothing in the package imports (nor registers lazily) exists for tests only."""
    lazy = lazily_registered()
    assert "factdebate.core.models.local" in lazy  # the embedded provider, loaded on first use
    orphans = [m for m in sorted(graph.modules) if m.startswith(CORE + ".")
               and not graph.find_children(m) and m not in lazy
               and not graph.find_modules_that_directly_import(m)]
    assert orphans == []
