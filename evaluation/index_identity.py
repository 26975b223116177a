"""Which index an evaluation searched, recorded with its results; which index it searches at all.

**Identity.** :func:`index_identity` reads the index folder's ``manifest.json`` (written by
``factdebate index``, ``tools/indexing.py``): corpus file path and SHA-256, documents and
passages, the source's format (``source_format``: ``jsonl`` or a dump's, ``fever-wiki`` ...)
and the passages' ``granularity`` (``chunk``/``sentence``), embedding model and dimension,
vector index kind and parameters, keyword index, the
Milvus URI the run searches (masked: ``core.context.mask_url``), build time, and whether the
corpus is the bundled demo corpus. ``run.json`` stores it under ``index``; ``summary.json``,
``report.md``/``report.html``, the printed summary, ``compare``, the evaluation browser and the
LangSmith experiment metadata show it. :func:`index_key` is the part that decides what a search
can find (corpus, passages, model, index kinds and parameters - not the build time, the folder or
who searches it): ``--resume`` refuses a run whose index key changed
(``evaluation/run_folder.py``), and ``compare`` warns when two runs' keys differ.

**A server's index.** An ``eval --server`` run searches the index the server's operator set
(``FACTDEBATE_INDEX_DIR``/``FACTDEBATE_MILVUS_URI``; clients cannot name one). The server tells
an authenticated client its identity at ``GET /factdebate/index`` (:data:`INDEX_ROUTE`,
``server/webapp.py``): :func:`public_identity`, the identity without what only the operator may
know - no index folder, no Milvus URI, the corpus file by its name only, a damage reason without
paths. ``eval`` asks once before ``run.json`` is written and records it (:func:`server_index`:
``searched_by: server`` and the server's masked URL), so its key is compared like a local one: a
resume against a server whose index changed is refused, and a local and a server run over the
same corpus and index settings searched the same index. A server without the route (an older
deployment) is recorded as ``status: server`` with a note: its index is not recorded. The
retrieval ceiling of a server run is computed from the data folder's corpus when its SHA-256 is
the server's corpus' (``evaluation/ceiling.py`` :func:`~factdebate.evaluation.ceiling.server_corpus`);
else ``index.ceiling`` says why there is none.

**Which index** (:func:`resolve_run_index`, before ``run.json`` is written), for a framework that
searches the index (registry ``needs_index``) run in this process:

1. an index named by ``--set index_dir=...``/``milvus_uri=...`` or ``$FACTDEBATE_INDEX_DIR``/
   ``$FACTDEBATE_MILVUS_URI`` is searched as it is;
2. ``--demo-index`` searches the default index folder, which receives the bundled demo corpus
   when it is empty (``tools/demo_index.py``); every report then says so at its top;
3. else the data folder's corpus (the one ``*.jsonl`` in ``corpus/`` of ``--data-dir`` or
   ``$FACTDEBATE_DATA_DIR``) is indexed once into ``$FACTDEBATE_HOME/corpora/<SHA-256 prefix>-
   <embedding model>/`` with a progress bar, and reused by every later run over the same corpus
   (one line says which);
4. else a complete index in the default folder that is not the demo corpus (``factdebate index
   CORPUS.jsonl`` without ``--index-dir``) is searched;
5. else the run stops before anything is written, naming the commands that give it an index.

So a benchmark never searches the demo corpus unless ``--demo-index`` asks for it.

**No local index.** A run whose backends read no local index folder
(:func:`factdebate.core.retrievers.reads_local_index`: ``--set rag_backend=wikipedia --set
search_backend=wikipedia``, Tavily, MERMAID's ``wiki_backend=mediawiki``; ``langchain``, the
user's own retriever, counts as one too: this process cannot look into it) opens none, chooses none
and builds none: ``run.json`` ``index`` is :func:`live_identity`, ``status: live`` with the
backends it searched, the live sources it cites (``live``: the MediaWiki URL of
``rag_backend=wikipedia``) and ``ceiling`` saying why there is no retrieval ceiling (no index
to look the gold evidence up in). ``--index`` or ``--demo-index`` with such a run is an
error: nothing would search the index it names.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from factdebate.core.context import Context, default_index_dir, factdebate_home, mask_url
from factdebate.core.errors import ConfigError, InputError
from factdebate.core.retrievers import ONLINE_WIKI, RETRIEVERS, reads_local_index, used_backends
from factdebate.evaluation.datasets import file_sha256
from factdebate.evaluation.index_progress import IndexProgress
from factdebate.tools.index_state import granularity_of, inspect_index, source_format_of

CORPUS_FOLDER = "corpus"
"""Folder of a data directory holding its retrieval corpus (``DATA/corpus/wiki.jsonl``)."""
CORPORA = "corpora"
"""Folder under ``$FACTDEBATE_HOME`` holding the indexes of data folders' corpora."""
KEY_FIELDS = ("corpus_sha256", "passages", "chunk_chars", "embedding_model", "dimension", "metric",
              "vector_index", "keyword_index", "collection", "live", "backends")
"""Identity fields that decide what a search can find (:func:`index_key`)."""
PUBLIC_FIELDS = ("status", "damage", "corpus", "corpus_sha256", "documents", "passages",
                 "source_format", "granularity", "chunk_chars", "embedding_model", "dimension",
                 "metric", "vector_index", "keyword_index", "collection", "built", "demo")
"""What a server tells its clients about its index (:func:`public_identity`): no folder, no URI."""
VECTOR_FIELDS = ("field", "metric", "index_type", "build_params", "search_params")
KEYWORD_FIELDS = ("kind", "fields", "title_boost", "tantivy")
"""The parts of the manifest's ``vector_index``/``keyword_index`` a client sees and keys compare."""
LIVE = "live"
"""``index.status`` of a run that reads no local index (:func:`live_identity`)."""
NO_CEILING_LIVE = ("not applicable: the run reads no local index (its backends search live "
                   "sources), so there is no index to look the gold evidence up in")
"""``index.ceiling`` of such a run: why it has no retrieval ceiling."""
INDEX_ROUTE = "/factdebate/index"
"""The server's route naming its index (``server/webapp.py``)."""
SEARCHED_BY_SERVER = "server"
"""``searched_by`` of an identity a server reported (an ``eval --server`` run)."""
NO_ROUTE = "the server has no /factdebate/index route (an older deployment)"
_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?[\\/][^\s'\"(),;]*")

Announce = Callable[[str], None]


@functools.cache
def _demo_sha256() -> str:
    """SHA-256 of the bundled demo corpus (a file of the installed package: read once)."""
    from factdebate.tools.demo_index import DEMO_CORPUS

    return file_sha256(DEMO_CORPUS)


def identity_of(index_dir: Path, milvus_uri: str = "") -> dict[str, Any]:
    """The identity of the index in ``index_dir`` (``status`` absent/ok/damaged)."""
    state = inspect_index(index_dir)
    m = state.manifest or {}
    sha = m.get("corpus_sha256")
    return {
        "index_dir": str(state.path), "status": state.status,
        **({"damage": state.reason} if state.reason else {}),
        "corpus": m.get("corpus"), "corpus_sha256": sha, "documents": m.get("documents"),
        "passages": m.get("passages"), "source_format": source_format_of(state.manifest),
        "granularity": granularity_of(state.manifest), "chunk_chars": m.get("chunk_chars"),
        "embedding_model": m.get("embedding_model"), "dimension": m.get("dimension"),
        "metric": m.get("metric"), "vector_index": m.get("vector_index"),
        "keyword_index": m.get("keyword_index"), "collection": m.get("collection"),
        "milvus_uri": mask_url(milvus_uri or m.get("milvus_uri")
                               or str(state.path / "milvus.db")),
        "built": m.get("created"), "demo": bool(sha) and sha == _demo_sha256(),
    }


def index_identity(ctx: Context) -> dict[str, Any]:
    """The identity of the index ``ctx`` searches (see the module docstring); cheap: reads the
    manifest and opens the keyword index, never the Milvus database. A run that also searches a
    live source (``rag_backend=wikipedia``) records it under ``live``: the wiki it cites."""
    from factdebate.tools.wikipedia_live import live_sources

    identity = identity_of(ctx.index_path, ctx.resolved_milvus_uri)
    live = live_sources(ctx)
    return {**identity, "live": live} if live else identity


def live_identity(ctx: Context) -> dict[str, Any]:
    """``run.json``'s ``index`` of a run with Context ``ctx`` that reads no local index (module
    doc): the backends it searches, the live sources it cites and why it has no ceiling."""
    from factdebate.tools.wikipedia_live import live_sources

    backends = {field: name if field == "wiki_backend" and name == ONLINE_WIKI
                else RETRIEVERS.resolve(name) for field, name in used_backends(ctx).items()}
    return {"status": LIVE, "backends": backends, "live": live_sources(ctx),
            "ceiling": NO_CEILING_LIVE}


def _part(value: Any, names: tuple[str, ...]) -> dict[str, Any] | None:
    return {k: value[k] for k in names if k in value} if isinstance(value, dict) else None


def _no_paths(text: str, *known: str) -> str:
    for path in (k for k in known if k):
        text = text.replace(path, "<index folder>")
    return _PATH.sub("<path>", text)


_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .+-]{0,63}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_NAME_DASH = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .+-]{0,199}")
_MODEL = re.compile(r"(?!.*(?:://|@|\.\.|:/))[A-Za-z0-9_][A-Za-z0-9_.:+/-]{0,199}")
_PARAM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .+*(),-]{0,63}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
STATUSES = ("ok", "absent", "damaged")


def _fits(pattern: re.Pattern[str], value: Any) -> str | None:
    return value if isinstance(value, str) and pattern.fullmatch(value) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _number(value: Any) -> int | float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return value if ok else None


def _built(value: Any) -> str | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        return datetime.fromisoformat(value).isoformat()
    except ValueError:
        return None


def _params(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict) or len(value) > 32:
        return None
    out = {k: v if _number(v) is not None else _fits(_PARAM, v)
           for k, v in value.items() if _fits(_NAME, k)}
    return {k: v for k, v in out.items() if v is not None}


def _vector(value: Any) -> dict[str, Any] | None:
    part = _part(value, VECTOR_FIELDS)
    if part is None:
        return None
    shaped = {"field": _fits(_NAME, part.get("field")), "metric": _fits(_NAME, part.get("metric")),
              "index_type": _fits(_NAME, part.get("index_type")),
              "build_params": _params(part.get("build_params")),
              "search_params": _params(part.get("search_params"))}
    return {k: v for k, v in shaped.items() if k in part and v is not None}


def _keyword(value: Any) -> dict[str, Any] | None:
    part = _part(value, KEYWORD_FIELDS)
    if part is None:
        return None
    names = part.get("fields")
    shaped = {"kind": _fits(_WORD, part.get("kind")), "title_boost": _number(
        part.get("title_boost")), "tantivy": _fits(_WORD, part.get("tantivy")),
        "fields": [n for n in names if _fits(_NAME, n)][:16] if isinstance(names, list) else None}
    return {k: v for k, v in shaped.items() if k in part and v is not None}


def _corpus_name(corpus: Any) -> str | None:
    if not isinstance(corpus, str):
        return None
    return _fits(_FILE, Path(corpus.replace("\\", "/")).name)


_SHAPES: dict[str, Callable[[Any], Any]] = {
    "status": lambda v: v if v in STATUSES else None,
    "corpus": _corpus_name,
    "corpus_sha256": lambda v: _fits(_SHA256, v),
    "documents": _count, "passages": _count, "chunk_chars": _count, "dimension": _count,
    "source_format": lambda v: _fits(_NAME_DASH, v), "granularity": lambda v: _fits(_NAME, v),
    "embedding_model": lambda v: _fits(_MODEL, v),
    "metric": lambda v: _fits(_NAME, v),
    "vector_index": _vector,
    "keyword_index": _keyword,
    "collection": lambda v: _fits(_NAME, v),
    "built": _built,
    "demo": lambda v: v if isinstance(v, bool) else None,
}
"""Each public field's shape: a value of another shape is sent as None (a hand-edited manifest's
path, URI or credential never reaches a client)."""


def public_identity(identity: dict[str, Any]) -> dict[str, Any]:
    """What a client may know of an index: :data:`PUBLIC_FIELDS` only, each of its known shape
    (:data:`_SHAPES`; another value is None) - the corpus file by its name, a damage reason
    without paths or credentials (at most 300 characters), the vector and keyword index by kind
    and parameters; no index folder, no Milvus URI (not even masked), nothing else the manifest
    holds."""
    out: dict[str, Any] = {}
    for k in PUBLIC_FIELDS:
        if k == "damage":
            if "damage" in identity:
                text = mask_url(_no_paths(str(identity["damage"]),
                                          str(identity.get("index_dir") or "")))
                out["damage"] = text if len(text) <= 300 else text[:297] + "..."
        elif k in identity or k in ("corpus", "vector_index", "keyword_index"):
            out[k] = _SHAPES[k](identity.get(k))
    return out


def server_index(server: str, answer: Any) -> dict[str, Any]:
    """``run.json``'s ``index`` of an ``eval --server`` run from the server's answer at
    :data:`INDEX_ROUTE` (None: the server has no such route): its :func:`public_identity` with
    ``searched_by: server`` and the server's masked URL."""
    where = mask_url(server)
    if answer is None:
        return {"status": "server", "server": where, "note": NO_ROUTE}
    if not isinstance(answer, dict) or not isinstance(answer.get("status"), str):
        return {"status": "server", "server": where,
                "note": f"the server's answer at {INDEX_ROUTE} names no index"}
    return {**public_identity(answer), "searched_by": SEARCHED_BY_SERVER, "server": where}


def run_index(framework: str, ctx: Context, server: str | None = None,
              served: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``run.json``'s ``index``: None when the framework searches no index; for ``--server`` runs
    ``served``, the server's index as :func:`server_index` records it (without it: not recorded);
    :func:`live_identity` when the run's backends read no local index."""
    from factdebate.graphs.registry import FRAMEWORKS

    if not FRAMEWORKS.entry(framework).meta.get("needs_index", True):
        return None
    if server:
        return served if served is not None else server_index(server, None)
    if not reads_local_index(ctx):
        return live_identity(ctx)
    return index_identity(ctx)


def index_key(identity: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fields of an identity that decide what a search can find (None: no index); a server's
    index it did not name is known by the server alone."""
    if not identity or identity.get("status") == "server":
        return identity and {"server": identity.get("server")}
    key = {k: identity.get(k) for k in KEY_FIELDS}
    key["vector_index"] = _part(key["vector_index"], VECTOR_FIELDS)
    key["keyword_index"] = _part(key["keyword_index"], KEYWORD_FIELDS)
    return key


def index_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """How the index changed between two identities ("" when its key did not)."""
    old_key, new_key = index_key(old), index_key(new)
    if old_key == new_key:
        return ""

    def name(identity: dict[str, Any] | None) -> str:
        if not identity:
            return "no index"
        if identity.get("status") != "ok":
            return _not_ok(identity)
        on = f" on the server {identity.get('server')}" if _by_server(identity) else ""
        return (f"{identity.get('corpus')} (sha256 {str(identity.get('corpus_sha256'))[:12]}, "
                f"{identity.get('passages')} passages, {identity.get('embedding_model')}){on}")
    fields = [k for k in KEY_FIELDS if (old_key or {}).get(k) != (new_key or {}).get(k)]
    return f"{name(old)} -> {name(new)}" + (f" [{', '.join(fields)}]" if fields else "")


def _by_server(identity: dict[str, Any]) -> bool:
    return identity.get("searched_by") == SEARCHED_BY_SERVER


def _not_ok(identity: dict[str, Any]) -> str:
    """An identity whose status is not ``ok``, in words."""
    status = identity.get("status")
    if status == LIVE:
        searched = ", ".join(f"{k}={v}" for k, v in (identity.get("backends") or {}).items())
        return f"no local index: the run searched {searched}"
    if status == "server":
        note = identity.get("note") or "the server's own"
        return f"the index of the server {identity.get('server')}, not recorded: {note}"
    if status == "unrecorded":
        return "not recorded (its run.json names no index)"
    damage = f": {identity['damage']}" if identity.get("damage") else ""
    if _by_server(identity):
        return f"{status} index on the server {identity.get('server')}{damage}"
    return f"{status} index at {identity.get('index_dir')}{damage}"


def describe(identity: dict[str, Any] | None) -> str:
    """One line naming the index (for reports, the printed summary and ``compare``)."""
    if identity is None:
        return "no index (the framework searches none)"
    ceiling = f"; retrieval ceiling {identity['ceiling']}" if identity.get("ceiling") else ""
    ceiling += "".join(f"; searched live: {name} at {source.get('wiki')}"  # said on every form
                       for name, source in (identity.get("live") or {}).items()
                       if isinstance(source, dict))
    if identity.get("status") != "ok":
        return _not_ok(identity) + ceiling
    sha = str(identity.get("corpus_sha256") or "")
    vector = identity.get("vector_index") or {}
    params = ", ".join(f"{k}={v}" for k, v in (vector.get("build_params") or {}).items())
    keyword = (identity.get("keyword_index") or {}).get("kind") or "tantivy BM25 (not recorded)"
    demo = " - the bundled DEMO corpus" if identity.get("demo") else ""
    has_vectors = bool(identity.get("embedding_model") or vector)
    milvus = f"Milvus {identity.get('milvus_uri')}, " if has_vectors else ""
    where = (f"searched by the server {identity.get('server')}" if _by_server(identity) else
             f"{milvus}built {identity.get('built')}, folder {identity.get('index_dir')}")
    built = f"built {identity.get('built')}, " if _by_server(identity) else ""
    shape = "".join(f", {label} {identity[k]}" for k, label in (
        ("source_format", "format"), ("granularity", "granularity")) if identity.get(k))
    vectors = (f"embeddings {identity.get('embedding_model')}, vector index "
               f"{vector.get('index_type', '?')} {vector.get('metric', '')} ({params})"
               if has_vectors else "keyword-only (no embeddings, no vector index)")
    return (f"corpus {identity.get('corpus')}{demo} (sha256 {sha[:16]}, "
            f"{identity.get('passages')} passages{shape}), {vectors}, "
            f"keyword index {keyword}, {built}{where}{ceiling}")


# -- which index a run searches -----------------------------------------------------------------
def data_folder(data_dir: str | Path | None) -> Path | None:
    """``--data-dir``, ``$FACTDEBATE_DATA_DIR`` or the default data folder (the one ``factdebate
    data fetch`` fills) when it is a folder, else None."""
    from factdebate.evaluation.datasets import existing_data_dir

    return existing_data_dir(data_dir)


def data_corpus(folder: Path | None) -> Path | None:
    """The one ``*.jsonl`` corpus in ``folder/corpus/`` (None without one).

    Raises:
        InputError: ``corpus/`` holds several corpora (which one is meant cannot be guessed).
    """
    if folder is None or not (folder / CORPUS_FOLDER).is_dir():
        return None
    found = sorted(p for p in (folder / CORPUS_FOLDER).glob("*.jsonl") if p.is_file())
    if len(found) > 1:
        raise InputError(f"{folder / CORPUS_FOLDER} holds several corpora "
                         f"({', '.join(p.name for p in found)})",
                         "index the one the benchmark needs: factdebate index CORPUS.jsonl "
                         "--index-dir DIR, then pass --set index_dir=DIR")
    return found[0] if found else None


def corpus_index_dir(sha256: str, embedding_model: str) -> Path:
    """``$FACTDEBATE_HOME/corpora/<sha256[:16]>-<model>``: one folder per corpus and model."""
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", embedding_model).strip("_") or "model"
    return factdebate_home() / CORPORA / f"{sha256[:16]}-{model}"


def index_corpus(corpus: Path, ctx: Context, console: Console | None) -> Path:
    """The index of ``corpus`` under ``$FACTDEBATE_HOME/corpora`` (built once, with a progress
    bar; reused after), announced in one line."""
    from factdebate.tools.indexing import build_indexes

    sha = file_sha256(corpus)
    folder = corpus_index_dir(sha, ctx.embedding_model)
    state = inspect_index(folder)
    manifest = state.manifest or {}
    if state.status == "ok" and (manifest.get("corpus_sha256"), manifest.get(
            "embedding_model")) == (sha, ctx.embedding_model):
        _say(console, f"index: the data folder's corpus {corpus} ({manifest.get('passages')} "
                      f"passages), indexed in {folder} at {manifest.get('created')} (reused)")
        return folder
    _say(console, f"index: no index named; indexing the data folder's corpus {corpus} into "
                  f"{folder} (once; later runs reuse it)")
    if console is None:
        build_indexes(corpus, folder, embedding_model=ctx.embedding_model, replace=True)
    else:
        with IndexProgress(console) as bar:
            build_indexes(corpus, folder, embedding_model=ctx.embedding_model, replace=True,
                          progress=bar)
    return folder


def resolve_run_index(framework: str, ctx: Context, *, data_dir: str | None, demo: bool,
                      console: Console | None = None) -> Context:
    """The Context the run searches with (see the module docstring); may index a corpus.

    Raises:
        InputError: ``--demo-index`` together with a named index, or several corpora.
        ConfigError: No index named, no corpus in the data folder and none in the default folder.
    """
    from factdebate.graphs.registry import FRAMEWORKS

    if not FRAMEWORKS.entry(framework).meta.get("needs_index", True) or \
            not reads_local_index(ctx):
        return ctx
    named = bool(ctx.index_dir or ctx.milvus_uri)
    if demo:
        if named:
            raise InputError("--demo-index searches the default index folder, but an index is "
                             f"named ({ctx.index_dir or mask_url(ctx.milvus_uri)})",
                             "drop --demo-index, or the named index")
        return ctx
    if named:
        return ctx
    folder = data_folder(data_dir)
    corpus = data_corpus(folder)
    if corpus is not None:
        return dataclasses.replace(ctx, index_dir=str(index_corpus(corpus, ctx, console)))
    default = inspect_index(default_index_dir())
    if default.status == "ok" and not identity_of(default.path)["demo"]:
        _say(console, f"index: {describe(identity_of(default.path))} (the default index folder)")
        return ctx
    where = (f"{folder / CORPUS_FOLDER} holds no *.jsonl corpus" if folder
             else "no data folder (--data-dir or $FACTDEBATE_DATA_DIR) to take a corpus from")
    raise ConfigError(
        f"{framework} searches an index, but none is named and {where}",
        "index the benchmark's corpus: factdebate index CORPUS.jsonl --index-dir DIR, then pass "
        "--set index_dir=DIR (or put the corpus in DATA_DIR/corpus/); --demo-index searches the "
        "bundled demo corpus instead (its figures then describe that corpus, not the benchmark)")


def _say(console: Console | None, line: str) -> None:
    if console is not None:
        console.print(line, highlight=False, soft_wrap=True, markup=False)
