"""``factdebate search``, ``factdebate ls indexes``, ``factdebate index --info``: look inside an index.

``search QUERY`` prints the passages a debater would get for QUERY: it opens the retriever the
graphs open (``nodes/retrieval.search_tool`` with the Context's ``RetrieverSettings``, ``pool``
included) and shows each passage's page, sentence numbers, score, title and text (cut in the
table, whole in ``--json``). ``ls indexes`` and ``index --info`` show what an index was built
from (``tools/index_state.index_summary``: source, format, pages, passages, repaired and skipped
pages, granularity, embedding model, build time).

Every command that searches an index takes it as ``--index NAME|DIR``, resolved by the one rule
of ``core.context.resolve_index`` (:func:`index_overrides`): a name is
``$FACTDEBATE_HOME/indexes/NAME``, anything else a folder; a name no index has is one error line
listing the indexes there are.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from factdebate.cli.output import err, fail, out
from factdebate.core.errors import FactDebateError, InputError

BACKENDS = {"keyword": "keyword", "dense": "milvus", "hybrid": "hybrid"}
"""``search --backend`` -> the retriever backend the debaters' ``rag_backend`` names."""
TEXT_CHARS = 160
"""Characters of a passage's text in ``search``'s table (``--json`` gives it whole)."""
DEFAULT_NAME = "(default)"
"""``ls indexes``' name of the default index folder, ``$FACTDEBATE_HOME/index``."""
ENV_NAME = "($FACTDEBATE_INDEX_DIR)"
"""``ls indexes``' name of the folder ``$FACTDEBATE_INDEX_DIR`` names (when it is another)."""

INDEX_HELP = ("Index to search: a name ($FACTDEBATE_HOME/indexes/NAME, see 'factdebate ls "
              "indexes') or a folder.")
"""``--index`` of ``verify``, ``check`` and ``search``."""


def index_overrides(index: str | None, index_dir: str | None) -> tuple[dict[str, str], bool]:
    """The Context values of ``--index NAME|DIR`` and ``--index-dir DIR`` (``{"index": NAME}``
    or ``{"index_dir": DIR}``), and whether an index was named explicitly (either flag or
    ``$FACTDEBATE_INDEX_DIR``: no demo index is built then).

    Raises:
        InputError: Both flags, an empty one, a folder that does not exist, or ``--index-dir
            NAME`` with no folder NAME where an index is called NAME (use ``--index NAME``).
        ConfigError: ``--index NAME`` that no built index has (the indexes there are listed).
    """
    from factdebate.cli.flags import place
    from factdebate.core.context import INDEX_NAME, named_indexes, resolve_index

    if index is not None and index_dir is not None:
        raise InputError("--index and --index-dir both name the index", "give one of them")
    if index is not None:
        folder, name = resolve_index(index, "--index")
        return ({"index": name} if name else {"index_dir": str(folder)}), True
    if index_dir is not None:
        place("--index-dir", index_dir)  # "" is refused, never the default index
        text = index_dir.strip()
        if INDEX_NAME.match(text) and not Path(text).exists() and text in named_indexes():
            raise InputError(f"--index-dir {text}: no folder {Path(text).absolute()}",
                             f"{text!r} is the name of a built index: use --index {text}")
        return {"index_dir": index_dir}, True
    return {}, bool(os.environ.get("FACTDEBATE_INDEX_DIR"))


def searched_index(ctx: Any) -> dict[str, Any]:
    """What ``verify``/``check`` report of the index a run searched (``--json`` key ``index``):
    :func:`~factdebate.tools.index_state.index_summary` of the Context's index folder."""
    from factdebate.tools.index_state import index_summary

    return index_summary(ctx.index_path, getattr(ctx, "index", ""))


def index_line(summary: dict[str, Any]) -> str:
    """One line naming an index: name or folder, format, granularity, passages, embeddings."""
    where = (f"{summary['name']!r} ({summary['index_dir']})" if summary.get("name") else
             str(summary["index_dir"]))
    return (f"index {where}: {summary.get('source_format') or '-'}, "
            f"{summary.get('passages') if summary.get('passages') is not None else '-'} "
            f"passages ({summary.get('granularity') or '-'}), {_embeddings(summary)}")


def _embeddings(summary: dict[str, Any]) -> str:
    if summary.get("keyword_only"):
        return "keyword-only"
    return str(summary.get("embedding_model") or "-")


def _dash(value: Any) -> str:
    return "-" if value is None else str(value)


def _built(summary: dict[str, Any]) -> str:
    seconds = summary.get("build_seconds")
    took = f" in {seconds:.1f} s" if isinstance(seconds, int | float) else ""
    return f"{_dash(summary.get('created'))}{took}"


def _index_rows() -> list[dict[str, Any]]:
    """Every index in the default folder, in ``$FACTDEBATE_INDEX_DIR``, under
    ``$FACTDEBATE_HOME/indexes`` and under ``$FACTDEBATE_HOME/corpora`` (``eval``'s indexes of
    data folders' corpora, named ``corpora/<folder>``); an empty folder is none, a damaged one
    is listed with its damage."""
    from factdebate.core.context import default_index_dir, factdebate_home, indexes_home
    from factdebate.evaluation.index_identity import CORPORA
    from factdebate.tools.index_state import index_summary

    rows = [index_summary(default_index_dir(), DEFAULT_NAME)]
    env = os.environ.get("FACTDEBATE_INDEX_DIR")
    if env and Path(env).expanduser().absolute() != default_index_dir().absolute() and \
            Path(env).expanduser().absolute().parent != indexes_home().absolute():
        rows.append(index_summary(Path(env).expanduser(), ENV_NAME))
    rows += [index_summary(p, p.name) for p in _folders(indexes_home())]
    corpora = factdebate_home() / CORPORA  # eval's indexes of data folders' corpora
    rows += [index_summary(p, f"{CORPORA}/{p.name}") for p in _folders(corpora)]
    return [r for r in rows if r["status"] != "absent"]


def _folders(parent: Path) -> list[Path]:
    """The index folders in ``parent`` by name (hidden ones - a build under way - left out)."""
    from factdebate.core.context import INDEX_NAME

    try:
        return sorted(p for p in parent.iterdir() if p.is_dir() and INDEX_NAME.match(p.name))
    except OSError:
        return []


def ls_indexes(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Built indexes: name, source format, granularity, pages, passages, repaired and skipped
    pages, embedding model (or keyword-only), build time and source."""
    from factdebate.core.context import factdebate_home
    from factdebate.core.control_chars import json_text

    rows = _index_rows()
    if as_json:
        print(json_text(rows))
        return
    if not rows:
        out.print(f"no index in {factdebate_home()} yet: factdebate index CORPUS.jsonl, or "
                  "factdebate index DUMP --format FORMAT --name NAME", highlight=False,
                  markup=False, soft_wrap=True)
        return
    table = Table("name", "format", "granularity", "pages", "passages", "repaired", "skipped",
                  "embeddings", "built", "source", "status", title="Indexes")
    for r in rows:
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r.get('damage')}"
        cells = (r["name"], _dash(r["source_format"]), _dash(r["granularity"]), _dash(r["pages"]),
                 _dash(r["passages"]), _dash(r["repaired"]), _dash(r["skipped"]), _embeddings(r),
                 _built(r), _dash(r["source"]), status)
        table.add_row(*(Text(c) for c in cells))  # text, never rich markup
    out.print(table)


def print_info(value: str, as_json: bool) -> None:
    """``factdebate index --info NAME|DIR``: what is inside that index.

    Raises:
        InputError: No index in that folder.
        ConfigError: A name no built index has (the indexes there are listed).
    """
    from factdebate.core.context import resolve_index
    from factdebate.core.control_chars import json_text
    from factdebate.tools.index_state import index_summary

    folder, name = resolve_index(value, "index --info")
    summary = index_summary(folder, name)
    if summary["status"] == "absent":
        raise InputError(f"index --info {value}: no index in {folder}",
                         "give the folder of a built index, or its name (factdebate ls indexes)")
    if as_json:
        print(json_text(summary))
        return
    lines = [("name", summary["name"] or "-"), ("folder", summary["index_dir"]),
             ("status", summary["status"] + (f": {summary['damage']}" if summary["damage"]
                                             else "")),
             ("source", _dash(summary["source"])), ("format", _dash(summary["source_format"])),
             ("granularity", _dash(summary["granularity"])), ("pages", _dash(summary["pages"])),
             ("passages", _dash(summary["passages"])), ("repaired", _dash(summary["repaired"])),
             ("skipped", _dash(summary["skipped"])), ("embeddings", _embeddings(summary)),
             ("built", _built(summary))]
    for key, text in lines:
        out.print(f"{key + ':':<13}{text}", highlight=False, markup=False, soft_wrap=True)


def _open_index(ctx: Any, where: str) -> dict[str, Any]:
    """The manifest of ``ctx``'s index, which must be complete (no demo index is built here).

    Raises:
        ConfigError: No index there.
        IndexDamagedError: A damaged index (named with its damage).
    """
    from factdebate.core.errors import ConfigError, IndexDamagedError
    from factdebate.tools.index_state import inspect_index

    state = inspect_index(ctx.index_path)
    if state.status == "absent":
        raise ConfigError(f"no index in {where}", "build one (factdebate index CORPUS.jsonl) or "
                          "name one with --index NAME|DIR (factdebate ls indexes)")
    if state.status == "damaged":
        raise IndexDamagedError(f"the index at {state.path} is damaged: {state.reason}",
                                f"rebuild it: factdebate index CORPUS --index-dir {state.path} "
                                "--replace")
    return state.manifest or {}


def search_command(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What to search for, as a debater's query.")],
    index: Annotated[str | None, typer.Option(
        "--index", help=INDEX_HELP, show_default="$FACTDEBATE_HOME/index")] = None,
    k: Annotated[int, typer.Option("--k", help="Passages to show.")] = 10,
    backend: Annotated[str | None, typer.Option(
        "--backend", help="keyword (BM25) | dense (Milvus vectors) | hybrid (both, fused).",
        show_default="dense; keyword for a keyword-only index")] = None,
    pool: Annotated[str | None, typer.Option(
        "--pool", help="Search only this knowledge-store pool (an AVeriTeC claim id).",
        show_default="every passage")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print a JSON list of the passages (text whole).")] = False,
) -> None:
    """Print the passages a debater would get for QUERY from an index: page, sentence numbers,
    score, title and text."""
    from factdebate.cli.flags import in_range

    try:
        text = " ".join(query.split())
        if not text:
            raise InputError("the query is empty", "give words to search for")
        in_range("--k", k, 1, 100, default=10)
        if backend is not None and backend not in BACKENDS:
            raise InputError(f"unknown --backend {backend!r}", f"use one of: {', '.join(BACKENDS)}")
        if pool is not None and not pool.strip():
            raise InputError("--pool is empty", "give a claim id, or drop --pool")
        found, where, chosen = _search(text, index, k, backend, (pool or "").strip())
    except FactDebateError as exc:
        fail(exc)
        return
    _print_passages(found, text, where, chosen, as_json)


def _search(query: str, index: str | None, k: int, backend: str | None,
            pool: str) -> tuple[list[dict[str, Any]], str, str]:
    """``(passages, the index in words, backend)``: ``search_tool``, the debaters' call."""
    from factdebate.core.errors import BackendUnavailableError
    from factdebate.nodes.retrieval import search_tool
    from factdebate.run.claims import run_async
    from factdebate.run.setup import build_context

    values, _ = index_overrides(index, None)
    ctx = build_context({**values, "pool": pool}, [])
    where = f"index {ctx.index!r} ({ctx.index_path})" if ctx.index else str(ctx.index_path)
    manifest = _open_index(ctx, where)
    chosen = backend or ("keyword" if manifest.get("keyword_only") else "dense")
    if manifest.get("keyword_only") and chosen != "keyword":
        raise InputError(f"--backend {chosen}: {where} is keyword-only (built with --keyword-only) "
                         "and has no vectors", "use --backend keyword, or rebuild the index "
                         "without --keyword-only")
    built_with = {"embedding_model": manifest.get("embedding_model"),  # what the vectors need
                  "milvus_uri": None if ctx.milvus_uri else manifest.get("milvus_uri")}
    built_with = {key: v for key, v in built_with.items() if isinstance(v, str) and v}
    if built_with and chosen != "keyword":
        ctx = build_context({**values, "pool": pool, **built_with}, [])
    update = run_async(search_tool(BACKENDS[chosen], query, ctx, k=k, exclude_titles=None,
                                   who="search"))
    faults = [f for f in update.get("flags", []) if f.startswith("tool fault")]
    if faults:
        raise BackendUnavailableError(faults[0], "check the index (factdebate index --info) and "
                                      "try again")
    for note in update.get("flags", []):
        err.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    where += f", pool {pool!r}" if pool else ""
    return [dict(e) for e in update.get("evidence", [])], where, chosen


def _print_passages(found: list[dict[str, Any]], query: str, where: str, backend: str,
                    as_json: bool) -> None:
    from factdebate.core.control_chars import json_text
    from factdebate.core.readable import excerpt

    rows = [{"rank": i, "id": p.get("id", ""), "page": p.get("page", ""),
             "sentences": p.get("sentences") or [], "score": p.get("score"),
             "title": p.get("title", ""), "text": p.get("text", ""), "pool": p.get("pool", ""),
             "url": p.get("url", ""), "source": p.get("source", "")}
            for i, p in enumerate(found, 1)]
    if not rows:
        line = f"no passage in {where} matches {query!r} ({backend} search)"
        if as_json:
            print("[]")
            err.print(line, highlight=False, markup=False, soft_wrap=True)
        else:
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    if as_json:
        print(json_text(rows))
        return
    table = Table("#", "score", "page", "sentences", "title", "text",
                  title=Text(f"{backend} search of {where}: {len(rows)} passage(s)"))
    for r in rows:
        score = f"{r['score']:.4f}" if isinstance(r["score"], int | float) else "-"
        cells = (str(r["rank"]), score, r["page"] or "-",
                 ",".join(str(s) for s in r["sentences"]) or "-", r["title"],
                 excerpt(r["text"], TEXT_CHARS))
        table.add_row(*(Text(c) for c in cells))  # a passage's "[...]" is text, not markup
    out.print(table)
