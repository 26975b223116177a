"""The one-way layers (docs/architecture_text.md): import-linter's contracts, an independent check of
the import graph, and no library-private imports outside ``factdebate.patches``.

The graph is grimp's (what import-linter uses: every ``import``, including those inside functions
and under ``TYPE_CHECKING``) over the checkout itself: the repository root is the ``factdebate``
package (``package-dir = {"factdebate" = "."}``), so no copy or link is needed.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("core", "patches", "prompts", "tools", "nodes", "testing", "graphs", "run",
                   "evaluation", "cli", "server")

LAYERS = [  # bottom to top; a module may import its own layer and the ones below
    ["factdebate.patches"],
    ["factdebate.core"],
    ["factdebate.prompts", "factdebate.tools"],
    ["factdebate.nodes"],
    ["factdebate.testing"],
    ["factdebate.graphs"],
    ["factdebate.run"],
    ["factdebate.evaluation"],
    ["factdebate.cli", "factdebate.server"],
]
ROOT_MODULE = "factdebate"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("factdebate", cache_dir=None)


def _layer_of(module: str) -> tuple[int, str] | None:
    for level, names in enumerate(LAYERS):
        for name in names:
            if module == name or module.startswith(name + "."):
                return level, name
    return None


def test_lint_imports_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
                          capture_output=True, text=True, check=False, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_the_contract_has_no_ignored_imports() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "ignore_imports" not in text and "[tool.importlinter]" in text


def test_every_module_belongs_to_a_layer(graph: grimp.ImportGraph) -> None:
    stray = sorted(m for m in graph.modules if m != ROOT_MODULE and _layer_of(m) is None)
    assert not stray
    assert len(graph.modules) > 150  # the mapped folders (graphs/, nodes/ ...) are in the graph


def test_no_module_imports_upward_or_sideways(graph: grimp.ImportGraph) -> None:
    bad = []
    for importer in sorted(graph.modules):
        mine = _layer_of(importer)
        for imported in graph.find_modules_directly_imported_by(importer):
            theirs = _layer_of(imported)
            if mine is None or theirs is None:
                continue
            if theirs[0] > mine[0] or (theirs[0] == mine[0] and theirs[1] != mine[1]):
                lines = graph.get_import_details(importer=importer, imported=imported)
                bad.append(f"{importer} -> {imported} (l.{[d['line_number'] for d in lines]})")
    assert not bad, "\n".join(bad)


def test_the_package_root_imports_nothing_of_the_project(graph: grimp.ImportGraph) -> None:
    assert not graph.find_modules_directly_imported_by(ROOT_MODULE)


def test_no_module_cycles(graph: grimp.ImportGraph) -> None:
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                cycles.append(f"{module} <-> {imported}")
    assert not cycles, "\n".join(cycles)


def _source_files() -> list[tuple[str, Path]]:
    out = []
    for folder in PACKAGE_FOLDERS:
        for path in (REPO / folder).rglob("*.py"):
            rel = path.relative_to(REPO)
            if "__pycache__" in rel.parts:
                continue
            out.append((".".join(["factdebate", *rel.with_suffix("").parts]), path))
    return out


def _private_imports(path: Path) -> list[str]:
    """``from lib._x import ...``/``import lib._x``/``from lib import _x`` of a third-party lib."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in ("factdebate", "__future__"):
                continue
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append(f"l.{node.lineno} from {node.module}")
            found += [f"l.{node.lineno} from {node.module} import {a.name}" for a in node.names
                      if a.name.startswith("_") and a.name != "__version__"]
        elif isinstance(node, ast.Import):
            found += [f"l.{node.lineno} import {a.name}" for a in node.names
                      if a.name.split(".")[0] != "factdebate"
                      and any(p.startswith("_") for p in a.name.split("."))]
    return sorted(found, key=lambda hit: int(hit.split()[0][2:]))


def test_no_private_library_imports_outside_the_patches_package() -> None:
    bad = []
    for module, path in _source_files():
        if module.startswith("factdebate.patches"):
            continue
        bad += [f"{module}: {hit}" for hit in _private_imports(path)]
    assert not bad, "\n".join(bad)


def test_the_private_import_check_would_catch_one(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from langgraph._internal._config import patch_config\n"
                     "from langgraph.runtime import _no_op_stream_writer\nimport numpy._core\n")
    assert _private_imports(probe) == [
        "l.2 from langgraph._internal._config",
        "l.3 from langgraph.runtime import _no_op_stream_writer",
        "l.4 import numpy._core",
    ]


def test_only_the_patches_package_installs_a_patch() -> None:
    """Patch modules are imported for their classes, but installed only via ``patches.enabled``."""
    bad = []
    for module, path in _source_files():
        if module.startswith("factdebate.patches"):
            continue
        text = path.read_text(encoding="utf-8")
        for patch in ("milvus_lite", "sqlite_saver", "ragas_relevancy", "llama_decode"):
            if f"{patch}.install(" in text or f"{patch}_fastpath.install(" in text:
                bad.append(f"{module} calls {patch}.install()")
    assert not bad, "\n".join(bad)


def test_the_repository_root_is_the_package():
    """One source tree: ``import factdebate`` is the checkout's root, every package
    folder sits at the top level, and no ``factdebate/`` folder or link duplicates them."""
    spec = importlib.util.find_spec("factdebate")
    assert spec is not None and Path(spec.origin).resolve() == (REPO / "__init__.py").resolve()
    assert not (REPO / "factdebate").exists()
    for folder in PACKAGE_FOLDERS:
        path = REPO / folder
        assert path.is_dir() and not path.is_symlink() and (path / "__init__.py").is_file(), path


def test_every_package_folder_is_in_the_graph_and_tests_are_not(graph: grimp.ImportGraph):
    """grimp walks the root: every package folder, nothing else (tests/ and .ci/ are no packages)."""
    top = {m.split(".")[1] for m in graph.modules if m.count(".") >= 1}
    assert top == set(PACKAGE_FOLDERS)
