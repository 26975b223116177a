"""Run setup shared by the CLI and the evaluation runner: a Context from flags, the first index.

It lives in the ``run`` layer (below ``evaluation`` and the CLI) so that ``factdebate eval`` and
``factdebate verify`` build their Context with the same rules without the evaluation layer
importing the CLI.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from factdebate.core.context import Context, context_fields, make_context
from factdebate.core.errors import ConfigError

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


def check_index(ctx: Context, explicit_index: bool) -> None:
    """Check the Context's index for a command line run; build the demo index where allowed.

    :func:`factdebate.tools.demo_index.check_index_or_build_demo` (the one rule, shared with the
    server's start-up) with its one announcement line on stderr: the demo corpus goes only into
    the default index folder (no ``--index-dir``, no ``--set index_dir=...``, no
    ``$FACTDEBATE_INDEX_DIR``, no Milvus URI) and only when that folder is absent or empty; a
    damaged index is an error naming the damage. On success this process holds the index's shared
    lock.

    Raises:
        ConfigError: No index at an explicitly named place.
        IndexDamagedError: The index folder holds a damaged index.
        InUseError: ``factdebate index`` is building it right now.
    """
    from factdebate.tools.demo_index import check_index_or_build_demo

    check_index_or_build_demo(ctx, explicit_index=explicit_index,
                              announce=lambda line: _err.print(line, style="yellow", markup=False))

