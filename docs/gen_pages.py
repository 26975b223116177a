"""Pages of the documentation site generated from the code (run by mkdocs-gen-files at build time).

* ``frameworks/<name>.md`` - one page per registered framework: its paper, the graph module's
  docstring (algorithm, deviations, switches), the picture of the graph LangGraph Studio draws
  (``get_graph(xray=True)`` of the exported graph, laid out by Graphviz ``dot``), its Context
  fields and the command that runs it.
* ``reference/context.md`` - every Context field with default, description and who may set it.
* ``troubleshooting.md`` - every one-line error the code raises, found in the source (each
  ``raise SomeError("problem", "remedy")`` of the project's error classes), grouped by error class
  with its exit code.
* ``architecture.md`` - the import layers of ``pyproject.toml``'s import-linter contract and a
  picture of which layer imports which, computed from the code by grimp.
* ``data.md`` - the data catalogue's tables (``evaluation/data_catalog.yaml``) appended to the
  hand-written page.
* ``benchmarks.md`` - from the bench JSON files in ``docs/benchmarks/`` (written by
  ``factdebate bench NAMES --out docs/benchmarks``): figure, budget, command, git SHA, date, machine.

Nothing here is typed in by hand: a page that says something the code does not is regenerated.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "factdebate"


# --- graphs ---------------------------------------------------------------------------------------

def graph_dot(graph: Any, title: str) -> str:
    """Graphviz DOT of LangGraph's drawable graph (``get_graph(xray=True)``): solid edges are
    fixed, dashed ones conditional; nodes inside a subgraph are grouped in a cluster."""
    drawable = graph.get_graph(xray=True)
    lines = ["digraph G {", 'graph [rankdir=TB, fontname="Helvetica", fontsize=11, '
             f'label="{title}", labelloc=t];',
             'node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#4a6fa5", '
             'fontname="Helvetica", fontsize=10];', 'edge [color="#555555", arrowsize=0.7];']
    clusters: dict[str, list[str]] = {}
    for node_id in drawable.nodes:
        if node_id in ("__start__", "__end__"):
            shape = "circle" if node_id == "__start__" else "doublecircle"
            lines.append(f'"{node_id}" [label="", shape={shape}, width=0.18, fillcolor="#333333"];')
            continue
        outer, _, inner = node_id.rpartition(":")
        lines.append(f'"{node_id}" [label="{inner}"];')
        if outer:
            clusters.setdefault(outer, []).append(node_id)
    for i, (name, members) in enumerate(sorted(clusters.items())):
        lines.append(f'subgraph cluster_{i} {{ label="{name}"; style="rounded,dashed"; '
                     'color="#888888"; fontsize=10; ' + " ".join(f'"{m}";' for m in members) + " }")
    for edge in drawable.edges:
        style = ' [style=dashed]' if edge.conditional else ""
        lines.append(f'"{edge.source}" -> "{edge.target}"{style};')
    lines.append("}")
    return "\n".join(lines)


def svg_of(dot: str) -> str:
    """The picture of a DOT graph, as SVG (Graphviz ``dot``: ``make docs`` installs it)."""
    exe = shutil.which("dot")
    if exe is None:
        raise SystemExit("docs: Graphviz 'dot' is not installed (make docs installs Debian's "
                         "graphviz; elsewhere install graphviz)")
    done = subprocess.run([exe, "-Tsvg"], input=dot, capture_output=True, text=True, check=True)
    svg = done.stdout
    return svg[svg.index("<svg"):]  # without the XML prolog and doctype


_LIST_ITEM = re.compile(r"^( *)([*+-]|\d+[.)]) +")


def doc_text(docstring: str | None) -> str:
    """A module docstring as Markdown: reST ````code```` to Markdown code spans, and its lists as
    Markdown lists.

    Docstrings open a list right after a paragraph line ("Deviations (and why):" then "* ...")
    and nest items by two spaces; Python-Markdown needs a blank line before a list and four
    spaces per nesting level, else the items render as one run-on paragraph with literal ``*``.
    """
    text = re.sub(r"``([^`]+)``", r"`\1`", inspect.cleandoc(docstring or ""))
    out: list[str] = []
    in_list = False
    for line in text.splitlines():
        item = _LIST_ITEM.match(line)
        if item:
            if not in_list and out and out[-1].strip():
                out.append("")  # a list needs a blank line before it
            indent = len(item.group(1))
            if in_list and indent:
                line = " " * (indent * 2) + line[indent:]  # nesting: 4 spaces per level
            in_list = True
        elif line.strip() and not line.startswith(" ") and out and not out[-1].strip():
            in_list = False  # a paragraph after a blank line ends the list
        out.append(line)
    return "\n".join(out)


def framework_pages() -> list[tuple[str, str]]:
    """``(name, title)`` of every framework, its page written."""
    from factdebate.core.context import Context, context_fields
    from factdebate.graphs.registry import FRAMEWORKS, context_class

    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    exported = {name: ref.removeprefix("./").split(":")[0] for name, ref in config["graphs"].items()}
    shared = set(context_fields(Context))
    done = []
    for name in FRAMEWORKS.names():
        entry = FRAMEWORKS.entry(name)
        meta = entry.meta
        title = meta.get("title") or name
        module_name = f"{PACKAGE}." + exported[name].removesuffix(".py").replace("/", ".")
        module = importlib.import_module(module_name)
        cls = context_class(name)
        own = {k: v for k, v in context_fields(cls).items() if k not in shared}
        picture = svg_of(graph_dot(module.graph, title))
        mkdocs_gen_files.open(f"frameworks/{name}.svg", "w").write(picture)
        rows = "\n".join(f"| `{k}` | `{json.dumps(v['default'])}` | {_cell(v['description'])} |"
                         for k, v in own.items())
        page = [f"# {title}", "", f"**Paper:** {meta.get('paper', '')}", "",
                f"Graph `{name}` (`langgraph.json` exports `{exported[name]}:graph`; "
                f"Context `{cls.__module__}.{cls.__name__}`; prompts `prompts/{meta.get('prompt_set')}/`).",
                "", f"![The {title} graph as LangGraph Studio draws it ({name})]({name}.svg)", "",
                "Solid edges are fixed, dashed ones conditional; a dashed box is a subgraph whose "
                "nodes Studio shows and a breakpoint can stop at.", "",
                "## Algorithm, deviations and switches", "", doc_text(module.__doc__), "",
                "## Settings of this framework", ""]
        if rows:
            page += ["| field | default | description |", "| --- | --- | --- |", rows, ""]
        else:
            page += ["Only the shared settings.", ""]
        page += ["The shared settings are in [the Context reference](../reference/context.md).", "",
                 "## Run it", "", "```bash",
                 f'factdebate verify "The Eiffel Tower is located in Paris." --framework {name}',
                 f"factdebate eval --framework {name} --dataset fever --limit 20 --seed 1",
                 "```", ""]
        mkdocs_gen_files.open(f"frameworks/{name}.md", "w").write("\n".join(page))
        done.append((name, title))
    return done


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def context_page() -> None:
    """Every Context field of the shared Context, with who may set it on a server."""
    from factdebate.core.context import Context, context_fields

    lines = ["# Context reference", "",
             "The settings every framework shares (`factdebate ls context`; `--set field=value` "
             "on the CLI, `context` of a server run). *Operator* fields are set by the server's "
             "environment only; a client's run that sets them is refused.", "",
             "| field | default | env | operator | description |", "| --- | --- | --- | --- | --- |"]
    for name, info in context_fields(Context).items():
        lines.append(f"| `{name}` | `{json.dumps(info['default'])}` | {info['env'] or ''} | "
                     f"{'yes' if info['operator'] else ''} | {_cell(info['description'])} |")
    mkdocs_gen_files.open("reference/context.md", "w").write("\n".join(lines) + "\n")


# --- errors ---------------------------------------------------------------------------------------

def _literal(node: ast.expr | None) -> str:
    """A string argument as the user reads it; f-string fields shown as ``{name}``."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # a value filled in at run time, as code (no markup)
        return "".join(_literal(v) if not isinstance(v, ast.FormattedValue)
                       else "`{" + ast.unparse(v.value) + "}`" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal(node.left) + _literal(node.right)
    return "`{" + ast.unparse(node) + "}`"


def troubleshooting_page() -> None:
    """Every ``raise <ProjectError>(problem, remedy)`` in the code, by error class."""
    from factdebate.core import errors

    classes = {name: cls for name, cls in vars(errors).items()
               if inspect.isclass(cls) and issubclass(cls, errors.FactDebateError)}
    found: dict[str, list[tuple[str, str, str]]] = {name: [] for name in classes}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("tests", "docs", ".venv", "testing") or rel.parts[0].startswith("."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else "")
            if name in classes and node.exc.args:
                args = node.exc.args
                found[name].append((_literal(args[0]), _literal(args[1] if len(args) > 1 else None),
                                    f"{rel}:{node.lineno}"))
    lines = ["# Troubleshooting", "",
             "Every error the project raises for something a user or operator can fix is one line: "
             "the problem, then the remedy. The CLI prints it as `error: PROBLEM. REMEDY` and exits "
             "with the code of its class; a server run shows it as the run's error. This page lists "
             "each one the code raises (found in the source; `{...}` stands for a value filled in "
             "at run time).", ""]
    for name, cls in sorted(classes.items(), key=lambda kv: kv[0]):
        rows = sorted(set(found[name]))
        if not rows:
            continue
        lines += [f"## {name} (exit {cls.exit_code})", "", doc_text(cls.__doc__), "",
                  "| problem | remedy | where |", "| --- | --- | --- |"]
        lines += [f"| {_cell(p)} | {_cell(r)} | `{w}` |" for p, r, w in rows]
        lines.append("")
    mkdocs_gen_files.open("troubleshooting.md", "w").write("\n".join(lines))


# --- architecture ---------------------------------------------------------------------------------

def architecture_page() -> None:
    """The layers contract and the imports between layers, drawn."""
    import grimp

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c.get("type") == "layers")["layers"]
    graph = grimp.build_graph(PACKAGE)
    groups = [[m.strip() for m in layer.split("|")] for layer in layers]
    packages = [p for group in groups for p in group]
    edges = set()
    for importer in packages:
        for imported in packages:
            if importer != imported and graph.chain_exists(
                    importer=f"{PACKAGE}.{importer}", imported=f"{PACKAGE}.{imported}",
                    as_packages=True):
                edges.add((importer, imported))
    direct = {(a, b) for a, b in edges  # drop edges implied through another layer
              if not any((a, c) in edges and (c, b) in edges for c in packages if c not in (a, b))}
    dot = ["digraph G {", 'graph [rankdir=TB, fontname="Helvetica", fontsize=11];',
           'node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#4a6fa5", '
           'fontname="Helvetica", fontsize=10];', 'edge [color="#555555", arrowsize=0.7];']
    for group in groups:
        dot.append("{ rank=same; " + " ".join(f'"{p}";' for p in group) + " }")
    dot += [f'"{a}" -> "{b}";' for a, b in sorted(direct)]
    dot.append("}")
    mkdocs_gen_files.open("architecture.svg", "w").write(svg_of("\n".join(dot)))
    hand = (ROOT / "docs" / "architecture_text.md").read_text(encoding="utf-8")
    table = ["| layer (top to bottom) | packages |", "| --- | --- |"]
    table += [f"| {i + 1} | {', '.join(f'`{p}`' for p in group)} |" for i, group in enumerate(groups)]
    page = ["# Architecture", "", "![Which layer imports which (computed from the code)]"
            "(architecture.svg)", "",
            "Each arrow is an import chain from one layer's package to another's (arrows implied "
            "through a third layer are left out). `make lint-imports` checks the contract below "
            "on every test run: each layer imports only the layers beneath it.", "",
            *table, "", hand]
    mkdocs_gen_files.open("architecture.md", "w").write("\n".join(page))


# --- benchmarks -----------------------------------------------------------------------------------

def benchmarks_page() -> None:
    """One section per bench JSON in docs/benchmarks/: budget, command, commit, date, machine."""
    lines = ["# Benchmarks", "",
             "Each section is generated from the JSON a `factdebate bench` run wrote into "
             "`docs/benchmarks/` (`factdebate bench NAME --out docs/benchmarks`). A figure states "
             "its value, the command, the commit, the date and the machine it was measured on; "
             "ratios are measured within one run.", ""]
    from factdebate.evaluation import bench

    lines += ["## What each benchmark measures", "", doc_text(bench.__doc__), ""]
    results = sorted((ROOT / "docs" / "benchmarks").glob("*.json"))
    if not results:
        lines.append("No bench results are committed yet.")
    for path in results:
        result = json.loads(path.read_text(encoding="utf-8"))
        lines += [f"## {result.get('benchmark', path.stem)}", "",
                  f"- command: `{result.get('command', '')}`",
                  f"- commit: `{result.get('git_sha', '')}`, date: {result.get('date', '-')}, "
                  f"machine: {result.get('machine', '-')}",
                  f"- budget: {result.get('budget', '-')}: met **{result.get('budget_met')}**", ""]
        if result.get("budgets") and result.get("benchmark") != "index":  # index lists its own
            from factdebate.evaluation.bench_budgets import budget_item

            lines += [*(f"- {budget_item(b)}" for b in result["budgets"]), ""]
        if result.get("benchmark") == "index":  # size x target table, budgets, embedding, load
            from factdebate.evaluation.bench_index import index_markdown

            lines += [*index_markdown(result), ""]
            continue
        lines += ["| figure | value |", "| --- | --- |"]
        skip = {"benchmark", "command", "git_sha", "date", "machine", "budget", "budget_met",
                "budgets", "budget_overrides", "budget_overrides_refused", "claims", "per_claim",
                "profile", "frameworks", "seconds"}
        for key, value in result.items():
            if key in skip:
                continue
            shown = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
            lines.append(f"| {key} | `{_cell(shown)[:400]}` |")
        lines.append("")
    mkdocs_gen_files.open("benchmarks.md", "w").write("\n".join(lines))


def data_page() -> None:
    """``data.md``: the hand-written page with the catalogue's tables appended
    (``evaluation/data_catalog.markdown_table``, from ``evaluation/data_catalog.yaml``)."""
    from factdebate.evaluation.data_catalog import markdown_table

    with mkdocs_gen_files.open("data.md", "a") as page:
        page.write("\n" + markdown_table())


def web_page_picture() -> None:
    """The web page's screenshot (taken by tests/integration/test_webapp_browser.py)."""
    shot = ROOT / "server" / "static" / "screenshot.png"
    mkdocs_gen_files.open("img/web-page.png", "wb").write(shot.read_bytes())


def main() -> None:
    """Write every generated page (mkdocs-gen-files runs this module at build time)."""
    web_page_picture()
    names = framework_pages()
    index = ["# Frameworks", "", "Every framework is a LangGraph state graph; each page shows the "
             "graph as LangGraph Studio draws it, the paper's algorithm as implemented, where it "
             "deviates and why, and its settings.", "", "| graph | framework |", "| --- | --- |"]
    index += [f"| [`{name}`]({name}.md) | {title} |" for name, title in names]
    mkdocs_gen_files.open("frameworks/index.md", "w").write("\n".join(index) + "\n")
    context_page()
    troubleshooting_page()
    architecture_page()
    benchmarks_page()
    data_page()


def write_picture(framework: str, target: Path) -> None:
    """The SVG picture of one exported graph into ``target`` (the README's picture):
    ``python docs/gen_pages.py tool_mad docs/img/tool_mad.svg``."""
    from factdebate.graphs.registry import FRAMEWORKS

    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    path = config["graphs"][framework].removeprefix("./").split(":")[0]
    module = importlib.import_module(f"{PACKAGE}." + path.removesuffix(".py").replace("/", "."))
    title = FRAMEWORKS.entry(framework).meta.get("title") or framework
    target.write_text(svg_of(graph_dot(module.graph, title)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    import sys

    write_picture(sys.argv[1], Path(sys.argv[2]))
else:  # mkdocs-gen-files runs this file with runpy under another name
    main()
