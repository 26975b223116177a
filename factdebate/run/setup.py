"""Run setup shared by the CLI and the evaluation runner: a Context from flags, the first index.

It lives in the ``run`` layer (below ``evaluation`` and the CLI) so that ``factdebate eval`` and
``factdebate verify`` build their Context with the same rules without the evaluation layer
importing the CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from factdebate.core.context import Context, context_fields, make_context
from factdebate.core.errors import ConfigError
from factdebate.tools import DEMO_CORPUS_DIR

DEMO_CORPUS = DEMO_CORPUS_DIR / "passages.jsonl"
_err = Console(stderr=True)


def build_context(
    overrides: dict[str, Any], sets: list[str], cls: type[Context] = Context
) -> Context:
    """A ``cls`` Context from explicit flags plus ``--set field=value`` pairs."""
    known = context_fields(cls)
    values = {k: v for k, v in overrides.items() if v is not None}
    for pair in sets:
        name, sep, raw = pair.partition("=")
        if not sep or name not in known:
            raise ConfigError(f"--set {pair!r} does not name a Context field",
                              f"fields: {', '.join(known)}")
        values[name] = raw  # the Context parses text to the field's type, naming the field
    return make_context(cls, values)  # a flag the framework lacks: one line, not a TypeError


def ensure_index(ctx: Context, explicit_index: bool) -> None:
    """Check the Context's index; build the demo-corpus index only where no index exists at all.

    The demo corpus goes only into the default index folder (no ``--index-dir``, no
    ``--set index_dir=...``, no ``$FACTDEBATE_INDEX_DIR``, no Milvus URI) and only when that folder
    is absent or empty. A damaged index anywhere is an error naming the damage and the rebuild
    command: it is never deleted or replaced here. On success this process holds the index's
    shared lock (``tools/index_lock.py``), so ``factdebate index`` cannot swap it mid-run.

    Raises:
        ConfigError: No index at an explicitly named place.
        IndexDamagedError: The index folder holds a damaged index.
        InUseError: ``factdebate index`` is building it right now.
    """
    from factdebate.core.context import default_index_dir
    from factdebate.core.errors import IndexDamagedError
    from factdebate.tools.index_lock import hold_shared
    from factdebate.tools.indexing import inspect_index

    path = ctx.index_path
    state = inspect_index(path)
    if state.status == "damaged":
        raise IndexDamagedError(
            f"the index at {path} is damaged: {state.reason}",
            f"rebuild it: factdebate index CORPUS.jsonl --index-dir {path} --replace "
            "(or point --index-dir at another index)")
    if state.status == "absent":
        default = path.expanduser().absolute() == default_index_dir().expanduser().absolute()
        if explicit_index or ctx.index_dir or ctx.milvus_uri or not default:
            raise ConfigError(f"no index in {path}",
                              f"run: factdebate index CORPUS.jsonl --index-dir {path}")
        _err.print(f"[yellow]No index yet: indexing the bundled demo corpus into {path} "
                   "(once).[/yellow]")
        build_index(DEMO_CORPUS, ctx)
    hold_shared(path)


def build_index(corpus: Path, ctx: Context) -> dict[str, Any]:
    """Index ``corpus`` into the Context's index folder (and Milvus server, if set)."""
    from factdebate.tools.indexing import build_indexes

    return build_indexes(corpus, ctx.index_path, milvus_uri=ctx.milvus_uri or None,
                         embedding_model=ctx.embedding_model)
