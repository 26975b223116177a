"""Find the index a run reads, or build the bundled demo index where none exists at all.

One rule for the CLI (``verify``/``eval``: ``run/setup.py``) and the LangGraph server
(``server/lifespan.py``, run once when the server starts, before it answers requests):

* a complete index (``tools/index_state.py``: ``ok``) is used as it is;
* a damaged one is an error naming the damage and the rebuild command; it is never deleted or
  replaced here;
* no index at all (no folder, or an empty one) receives the bundled demo corpus, but only in the
  default folder (``$FACTDEBATE_HOME/index``) with no index folder or Milvus URI configured; an
  absent index anywhere the operator named explicitly is an error naming the folder.

On success the process holds the index's shared lock (``tools/index_lock.py``), so ``factdebate
index`` cannot swap the folder while this process reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from factdebate.core.context import Context, default_index_dir
from factdebate.core.errors import ConfigError, IndexDamagedError
from factdebate.tools import DEMO_CORPUS_DIR
from factdebate.tools.index_lock import hold_shared
from factdebate.tools.index_state import IndexState, inspect_index

DEMO_CORPUS = DEMO_CORPUS_DIR / "passages.jsonl"

Announce = Callable[[str], None]


def demo_allowed(ctx: Context, explicit_index: bool = False) -> bool:
    """True when ``ctx`` reads the default index folder and nothing names another place.

    ``explicit_index``: the caller was given an index folder (``--index-dir`` or
    ``$FACTDEBATE_INDEX_DIR``), even one that equals the default.
    """
    if explicit_index or ctx.index_dir or ctx.milvus_uri:
        return False
    return _same(ctx.index_path, default_index_dir())


def check_index_or_build_demo(ctx: Context, *, explicit_index: bool = False,
                              announce: Announce | None = None) -> IndexState:
    """Check ``ctx``'s index and build the demo index where :func:`demo_allowed` permits.

    ``announce`` receives one line before a demo build starts (it takes ~30 s on a laptop).
    Returns the state of the (now complete) index; this process then holds its shared lock.

    Raises:
        ConfigError: No index at a place the operator or user named.
        IndexDamagedError: The index folder holds a damaged index.
        InUseError: ``factdebate index`` is building it right now.
    """
    path = ctx.index_path
    state = inspect_index(path)
    if state.status == "damaged":
        raise IndexDamagedError(
            f"the index at {path} is damaged: {state.reason}",
            f"rebuild it: factdebate index CORPUS.jsonl --index-dir {path} --replace "
            "(or point the index folder at another index)")
    if state.status == "absent":
        if not demo_allowed(ctx, explicit_index):
            raise ConfigError(f"no index in {path}",
                              f"run: factdebate index CORPUS.jsonl --index-dir {path}")
        if announce is not None:
            announce(f"No index yet: indexing the bundled demo corpus into {path} (once).")
        build_demo_index(ctx)
        state = inspect_index(path)
        if state.status != "ok":  # a build that reports success left a broken folder: say so
            raise IndexDamagedError(f"the demo index built in {path} is {state.status}: "
                                    f"{state.reason}", "report this as a bug")
    hold_shared(path)
    return state


def build_demo_index(ctx: Context) -> dict[str, object]:
    """Index the bundled demo corpus into ``ctx``'s index folder (and Milvus URI, if set)."""
    from factdebate.tools.indexing import build_indexes  # loads the embedding stack

    return build_indexes(DEMO_CORPUS, ctx.index_path, milvus_uri=ctx.milvus_uri or None,
                         embedding_model=ctx.embedding_model, replace=False, reuse=True)


def _same(a: Path, b: Path) -> bool:
    return a.expanduser().absolute() == b.expanduser().absolute()
