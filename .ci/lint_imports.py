"""Run ``lint-imports`` over the package as it installs (``factdebate.graphs`` <- ``graphs/`` ...).

import-linter's graph builder (grimp) walks the directory of the root package, but
``pyproject.toml`` maps ``factdebate.graphs`` -> ``graphs/``, ``factdebate.nodes`` -> ``nodes/`` and
so on (setuptools ``package-dir``), so ``factdebate/`` alone holds a third of the modules. This
script copies every ``.py`` file to where the wheel puts it (a temporary tree read from
``[tool.setuptools.package-dir]``) and runs ``lint-imports --config pyproject.toml`` there, so the
contracts see every module under its installed name. Used by ``make lint``/``make test`` and by
``tests/unit/test_layers.py``.

``--mypy`` runs mypy (``[tool.mypy]`` in pyproject.toml) over the same tree instead: mypy cannot
follow setuptools' editable-install finder either.

Usage: ``python .ci/lint_imports.py [--tree-only DEST | --mypy] [lint-imports options]``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def package_dirs(repo: Path = REPO) -> dict[str, Path]:
    """Installed package name -> source folder, from ``[tool.setuptools.package-dir]``."""
    config = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {name: repo / folder for name, folder in mapping.items()}


def build_tree(dest: Path, repo: Path = REPO) -> Path:
    """Copy every module to its installed path under ``dest``; return ``dest``."""
    for name, source in package_dirs(repo).items():
        target = dest.joinpath(*name.split("."))
        for path in source.rglob("*.py"):
            rel = path.relative_to(source)
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            out = target / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
    return dest


def main(argv: list[str]) -> int:
    """Build the tree in a temporary folder and run ``lint-imports`` from it."""
    if argv[:1] == ["--tree-only"]:
        build_tree(Path(argv[1]))
        return 0
    config = str(REPO / "pyproject.toml")
    with tempfile.TemporaryDirectory(prefix="factdebate-import-tree-") as tmp:
        build_tree(Path(tmp))
        env = {**os.environ, "PYTHONPATH": tmp}
        if argv[:1] == ["--mypy"]:
            mypy = Path(sys.executable).with_name("mypy")
            cmd = [str(mypy), "--config-file", config, "--cache-dir", os.devnull, *argv[1:]]
        else:
            lint = Path(sys.executable).with_name("lint-imports")
            cmd = [str(lint), "--config", config, "--no-cache", *argv]
        return subprocess.run(cmd, cwd=tmp, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
