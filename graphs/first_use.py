"""First use from Python: the demo index on first use, as the command line builds it.

``factdebate verify`` on a fresh machine indexes the bundled demo corpus before its first run
(``run/setup.py``: :func:`factdebate.tools.demo_index.check_index_or_build_demo`). A graph run
from Python - ``graph.invoke(...)`` on an exported graph (:class:`~factdebate.graphs.exported.DebateGraph`)
or :func:`factdebate.run.engine.run_graph` - applies the same rule before its first run in a
process, through :func:`ensure_index`:

* it applies only when the run reads the local index folder (a framework registered with
  ``needs_index``, the default, whose Context names a backend that reads it:
  :func:`factdebate.core.retrievers.reads_local_index`, e.g. ``milvus``, ``keyword``,
  ``local_search``, ``hybrid``, ``search_backend=auto`` without ``TAVILY_API_KEY``, MERMAID's
  ``wiki_backend`` ``keyword``/``milvus``, a plug-in backend that does not declare otherwise;
  not ``wikipedia`` or ``tavily``; for a text check, its verifier's framework and Context:
  :func:`debates_read_local_index`) and only where the demo
  index is allowed: the default folder, no ``index_dir``/``$FACTDEBATE_INDEX_DIR`` and no Milvus
  URI (an index the user named is theirs; a run on an absent one fails naming ``factdebate
  index``);
* a complete index is used as it is; no index at all receives the demo corpus (one line on
  stderr says so; ~35 s); a damaged one is one error line naming the damage and the rebuild
  command (:class:`~factdebate.core.errors.IndexDamagedError`), raised before anything runs.

Each index folder is checked once per process; later runs cost a set lookup.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from typing import Any

from factdebate.core.context import Context, make_context
from factdebate.core.errors import FactDebateError
from factdebate.core.retrievers import reads_local_index

_checked: set[str] = set()
_lock = threading.Lock()


def run_context(schema: Any, context: Any) -> Context | None:
    """The Context a run gets from ``context=`` (a Context, a mapping or None) under ``schema``,
    or None when it is not a factdebate Context (the run reports a bad value itself)."""
    if isinstance(context, Context):
        return context
    if not (isinstance(schema, type) and issubclass(schema, Context)):
        return None
    try:
        return make_context(schema, dict(context) if isinstance(context, Mapping) else {})
    except Exception:  # noqa: BLE001  # a bad field: LangGraph's own coercion names it
        return None


def index_pending(ctx: Context | None, needs_index: bool = True) -> bool:
    """True when a run with Context ``ctx`` must check (or build) the index first: the rule of
    the module doc applies and its folder has not been checked in this process. Cheap."""
    if ctx is None or not needs_index or os.environ.get("FACTDEBATE_INDEX_DIR"):
        return False
    if ctx.index_dir or ctx.milvus_uri:  # a place the user named: theirs (demo_allowed's rule)
        return False
    if str(ctx.index_path.expanduser().absolute()) in _checked:
        return False
    from factdebate.tools.demo_index import demo_allowed

    return demo_allowed(ctx) and debates_read_local_index(ctx)


def debates_read_local_index(ctx: Context) -> bool:
    """:func:`~factdebate.core.retrievers.reads_local_index` of the Context the run's retrieval
    uses: for a text check (``check_text``) its verifier's Context - the verifier framework's
    class with the check's shared fields and ``verifier_settings``, so MERMAID's own
    ``wiki_backend`` default counts - and False when that framework searches no index at all,
    or when the verifier or a setting of it does not exist (the run refuses it, naming it in its
    own words, before anything is searched)."""
    from factdebate.nodes.check_text.state import CheckTextContext, verifier_context

    if not isinstance(ctx, CheckTextContext):
        return reads_local_index(ctx)
    from factdebate.graphs.registry import FRAMEWORKS, context_class

    try:
        if not FRAMEWORKS.entry(ctx.framework).meta.get("needs_index", True):
            return False
        verifier = verifier_context(ctx, context_class(ctx.framework))
    except FactDebateError:
        return False
    return reads_local_index(verifier)


def ensure_index(ctx: Context | None, *, needs_index: bool = True) -> None:
    """Apply the first-use rule (module doc) for a run with Context ``ctx``; blocking.

    Raises:
        IndexDamagedError: The default index folder holds a damaged index.
        InUseError: ``factdebate index`` is building it right now.
    """
    if not index_pending(ctx, needs_index):
        return
    from factdebate.tools.demo_index import check_index_or_build_demo

    assert ctx is not None
    key = str(ctx.index_path.expanduser().absolute())
    with _lock:  # two first runs at once build it once
        if key in _checked:
            return
        check_index_or_build_demo(ctx, announce=_announce)
        _checked.add(key)


def _announce(line: str) -> None:
    print(f"factdebate: {line}", file=sys.stderr, flush=True)


def framework_needs_index(title: str) -> bool:
    """The registry's ``needs_index`` of the framework whose title is ``title`` (True if none)."""
    from factdebate.graphs.registry import FRAMEWORKS

    for name in FRAMEWORKS.names():
        meta = FRAMEWORKS.entry(name).meta
        if meta.get("title") == title:
            return bool(meta.get("needs_index", True))
    return True
