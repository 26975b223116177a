"""Docs, docstrings and the site speak to a reader who was not here: no internal issue numbers, no
links to files outside the site, docstring lists that render as lists."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import markdown
import pytest

ROOT = Path(__file__).resolve().parents[2]
ISSUE_REF = re.compile(r"issues? #" r"\d+|\(#" r"\d+\)", re.IGNORECASE)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".html", ".js", ".css", ".json"}


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines()
            if Path(line).suffix in TEXT_SUFFIXES and Path(line).name != "CHANGELOG.md"
            and not line.startswith(("docs/benchmarks/",))]


def _doc_text():
    """``doc_text`` of docs/gen_pages.py (which builds the whole site when imported, so only the
    function and the names it uses are taken from its source)."""
    import ast
    import inspect

    tree = ast.parse((ROOT / "docs" / "gen_pages.py").read_text(encoding="utf-8"))
    wanted = [n for n in tree.body
              if (isinstance(n, ast.FunctionDef) and n.name == "doc_text")
              or (isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "_LIST_ITEM"
                                                    for t in n.targets))]
    assert len(wanted) == 2
    namespace = {"re": re, "inspect": inspect}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "gen_pages.py", "exec"), namespace)
    return namespace["doc_text"]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_no_internal_issue_numbers_in_the_package_docs_or_readme():
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()[:90]}"
             for p in _tracked_text_files()
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if ISSUE_REF.search(line)]
    assert not found, "internal issue numbers (history goes to git and CHANGELOG.md):\n" + "\n".join(found)


def test_no_links_to_the_papers_files_or_outside_the_site():
    found = [f"{p.relative_to(ROOT)}:{n}" for p in _tracked_text_files()
             if p.suffix in {".py", ".md", ".yaml"} and not p.is_relative_to(ROOT / "tests")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "shared/papers" in line or re.search(r"\]\((?:\.\./)+shared/", line)]
    assert not found, ("references to the papers' files (cite them by title and arXiv id):\n"
                       + "\n".join(found))


def _rendered_paragraphs(md_text: str) -> list[str]:
    html = markdown.markdown(md_text, extensions=["admonition", "tables"])
    return [re.sub(r"<[^>]+>", "", p).strip() for p in re.findall(r"<p>(.*?)</p>", html, re.DOTALL)]


def test_framework_docstring_lists_render_as_lists():
    doc_text = _doc_text()
    graphs = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))["graphs"]
    checked = 0
    for ref in graphs.values():
        path = ref.removeprefix("./").split(":")[0].removesuffix(".py")
        module_name = "factdebate." + path.replace("/", ".")
        module = importlib.import_module(module_name)
        for para in _rendered_paragraphs(doc_text(module.__doc__)):
            assert not re.match(r"[*+-] \S", para), f"{module_name}: literal bullet: {para[:80]!r}"
            assert not re.search(r"\n[*+] \S", para), f"{module_name}: run-on list: {para[:80]!r}"
        checked += 1
    assert checked == len(graphs) == 18


def test_doc_text_opens_and_nests_lists():
    doc = "Title.\n\nDeviations (and why):\n* one\n  continued\n* two:\n\n  - nested\n\nAfter."
    html = markdown.markdown(_doc_text()(doc))
    assert html.count("<li>") == 3 and "<ul>" in html
    assert re.search(r"<li>\s*(<p>)?two:.*<ul>\s*<li>nested</li>", html, re.DOTALL), html
    assert "<p>After.</p>" in html


@pytest.mark.parametrize("body,bad", [
    ("<p>* Prompts: reconstructed</p>", True),
    ("<p>Deviations:\n* one\n* two</p>", True),
    ('<p>see <a href="../../shared/papers/madke.txt">paper</a></p>', True),
    ("<p>Fixed in issue #" "22.</p>", True),
    ("<ul><li>Prompts</li></ul><p>A - B</p>", False),
])
def test_check_site_flags_what_a_reader_cannot_use(tmp_path, body, bad):
    sys.path.insert(0, str(ROOT / ".ci"))
    try:
        check_site = _load(ROOT / ".ci" / "check_site.py", "factdebate_check_site")
    finally:
        sys.path.remove(str(ROOT / ".ci"))
    (tmp_path / "page").mkdir()
    (tmp_path / "page" / "index.html").write_text(f"<html><body>{body}</body></html>")
    assert bool(check_site.problems(tmp_path)) is bad
