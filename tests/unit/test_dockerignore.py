"""The Docker build context ``langgraph build`` sends (``ADD . /deps/main``) holds the package and
nothing else: listed with Docker's own ``.dockerignore`` rules, here in a small matcher.

Docker's rules (moby ``patternmatcher``): one pattern per line, ``#`` comments and blank lines
skipped, a leading ``/`` dropped, the pattern cleaned; ``*`` and ``?`` match within one path
element, ``**`` across any number of them; a pattern matching a path or one of its parent folders
decides, the last such pattern wins, and ``!`` lets a path back in. The walk, like Docker's, does
not enter an excluded folder that no ``!`` pattern can let anything out of.
"""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


class DockerIgnore:
    """The patterns of a ``.dockerignore`` file and Docker's decision for a path."""

    def __init__(self, text: str) -> None:
        self.patterns: list[tuple[re.Pattern[str], bool, str]] = []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            keep = line.startswith("!")
            pattern = posixpath.normpath(line[1:].strip() if keep else line).lstrip("/")
            self.patterns.append((re.compile(self._regex(pattern)), keep, pattern))

    @staticmethod
    def _regex(pattern: str) -> str:
        """moby's ``Pattern.compile``: ``**`` any folders, ``*``/``?`` within one element."""
        out, i = "^", 0
        while i < len(pattern):
            ch = pattern[i]
            if pattern.startswith("**", i):
                i += 2
                if pattern.startswith("/", i):
                    i += 1
                out += ".*" if i >= len(pattern) else "(.*/)?"
                continue
            if ch == "*":
                out += "[^/]*"
            elif ch == "?":
                out += "[^/]"
            elif ch == "[":
                end = pattern.index("]", i)
                out += pattern[i:end + 1]
                i = end
            elif ch == "\\" and i + 1 < len(pattern):
                i += 1
                out += re.escape(pattern[i])
            else:
                out += re.escape(ch)
            i += 1
        return out + "$"

    def excluded(self, path: str) -> bool:
        """Docker's ``MatchesOrParentMatches``: the last pattern matching ``path`` or a parent."""
        parts = path.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts))]
        result = False
        for regex, keep, _ in self.patterns:
            if regex.match(path) or any(regex.match(p) for p in prefixes):
                result = not keep
        return result

    def may_let_in(self, folder: str) -> bool:
        """Some ``!`` pattern could let a path under the excluded ``folder`` back in."""
        for _, keep, pattern in self.patterns:
            if keep and (pattern.startswith("**") or pattern == folder
                         or pattern.startswith(folder + "/")):
                return True
        return False


def build_context(root: Path) -> set[str]:
    """The files (relative, ``/``-separated) Docker would send from ``root``."""
    rules = DockerIgnore((root / ".dockerignore").read_text())
    files: set[str] = set()
    for here, dirs, names in os.walk(root):
        rel = Path(here).relative_to(root).as_posix()
        rel = "" if rel == "." else rel + "/"
        dirs[:] = [d for d in dirs if not rules.excluded(rel + d) or rules.may_let_in(rel + d)]
        files |= {rel + n for n in names if not rules.excluded(rel + n)}
    return files


def package_dirs() -> list[str]:
    """The folders of the packages pyproject.toml installs (``factdebate`` = the root)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = config["tool"]["setuptools"]["packages"]
    return sorted({p.removeprefix("factdebate").lstrip(".").replace(".", "/") for p in packages})


def tracked(prefix: str = "") -> set[str]:
    out = subprocess.run(["git", "ls-files", "--", prefix or "."], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return set(out.split())


def test_matcher_follows_dockers_rules():
    rules = DockerIgnore("# c\n*\n!keep\n**/__pycache__\n/keep/*.tmp\n!keep/ok.tmp\n")
    assert rules.excluded("x") and rules.excluded("x/y/z") and rules.excluded(".git/HEAD")
    assert not rules.excluded("keep/a.py") and not rules.excluded("keep/sub/b.py")
    assert rules.excluded("keep/__pycache__/a.pyc") and rules.excluded("keep/s/__pycache__/b")
    assert rules.excluded("keep/a.tmp") and not rules.excluded("keep/ok.tmp")
    assert not rules.excluded("keep/sub/a.tmp")  # * stays within one path element
    assert DockerIgnore("**/*.db").excluded("a/b/milvus.db/x")


def test_the_checkouts_build_context_is_the_package(tmp_path: Path):
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    context = build_context(REPO)
    roots = {"pyproject.toml", "README.md", "langgraph.json"} | {
        f for f in tracked() if "/" not in f and f.endswith(".py")}  # the root package's modules
    wanted = set(roots)
    for folder in package_dirs():
        if folder:
            wanted |= tracked(folder)
        assert (f"{folder}/__init__.py" if folder else "__init__.py") in context, folder
    assert wanted - context == set()  # every tracked file of every package, pyproject, readme
    tops = {f.split("/", 1)[0] for f in context}
    assert tops <= roots | {d.split("/")[0] for d in package_dirs() if d}, tops
    for never in (".venv/", ".git/", ".langgraph_api/", ".cache/", "tests/", "runs/",
                  "bench-results/", "factdebate.egg-info/", ".pytest_cache/"):
        assert not any(f.startswith(never) for f in context), never
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in context)


def test_run_leftovers_never_enter_the_context(tmp_path: Path):
    """What a working checkout accumulates, made here so its absence today proves nothing."""
    (tmp_path / ".dockerignore").write_text((REPO / ".dockerignore").read_text())
    leftovers = [".venv/bin/python", ".git/HEAD", ".langgraph_api/.langgraph_ops.pckl",
                 ".cache/factdebate/index/manifest.json", "runs/tool_mad-x/results.jsonl",
                 "bench-results/overhead.json", "tests/unit/test_x.py", "build/lib/x.py",
                 "factdebate.egg-info/PKG-INFO", ".env", "server/.env",
                 "core/__pycache__/context.cpython-311.pyc", "index/milvus.db/data",
                 "graphs/checkpoints.sqlite", "graphs/checkpoints.sqlite-wal", "Makefile",
                 "BENCHMARKS.md", "docs/gen_pages.py", "server/.langgraph_api/store.pckl"]
    kept = ["pyproject.toml", "README.md", "langgraph.json", "__init__.py", "core/context.py",
            "server/static/js/app.js", "prompts/tool_mad/prompts.yaml", "tools/demo_corpus/a.jsonl"]
    for path in leftovers + kept:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    assert build_context(tmp_path) == set(kept)


def test_the_package_installs_from_the_build_context(tmp_path: Path):
    """A wheel built from exactly the context's files holds every module and data file of the
    package (what ``pip install -e .`` in the image reads)."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    context = build_context(REPO)
    copy = tmp_path / "context"
    for rel in context:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes((REPO / rel).read_bytes())
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"), str(copy)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("factdebate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in ("factdebate/graphs/tool_mad.py", "factdebate/server/auth.py",
                   "factdebate/testing/scripted.py", "factdebate/prompts/tool_mad/prompts.yaml",
                   "factdebate/server/static/index.html", "factdebate/tools/demo_corpus/claims.jsonl"):
        assert module in names, module
