"""The evidence memory of an evaluation run: which store, which stream, in which order.

MERMAID's memory (``nodes/mermaid/memory.py``) recalls evidence that earlier claims stored, so with memory
on an item's result depends on which items ran before it. An evaluation therefore:

* opens a LangGraph store for the run: ``OUT/memory.sqlite`` (``AsyncSqliteStore``, beside the
  run's checkpoints) by default, the PostgreSQL database of ``--checkpointer postgres``
  (``AsyncPostgresStore``) otherwise; under ``--server`` the server's own store is used;
* gives the run a memory of its own: the namespace is the CLI's owner (``factdebate:local``), the
  index fingerprint and the scope ``<run id>`` (``MEMORY_SCOPE_KEY``), so runs sharing a database
  never read each other's memory and every run starts from an empty one;
* streams the claims through it one at a time, in the order of ``run.json``'s ``item_ids`` (the
  seeded sample's order). Why not in parallel: two claims sharing an entity that run at the same
  time both miss the memory, and which of them stores first depends on timing, so results would
  not be reproducible. Per-worker streams would be reproducible but are not the paper's setting
  (one memory that grows as "the system processes a sequence of claims", MERMAID §3.4) and their
  result would depend on ``--workers``. So with memory on, ``--concurrency`` and ``--workers``
  do not parallelise items (workers still run them, one at a time); memory off runs as usual.
* records all of it in ``run.json`` under ``memory`` and each row's ``memory_stream_position``
  (0-based position in the order items actually ran; it differs from ``item_ids`` only when
  ``--retry-errors``/``--repair`` reran items after later ones). ``--resume`` keeps the order
  (finished items' evidence is already in the store; a larger ``--limit`` appends its new items
  after the recorded ones).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from factdebate.core.errors import BackendUnavailableError, ConfigError, StorageError
from factdebate.core.settings import mask_url
from factdebate.evaluation.checkpointers import checkpointer_kind, postgres_uri
from factdebate.nodes.mermaid.memory import MEMORY_SCOPE_KEY

MEMORY_FILE = "memory.sqlite"


def has_memory_setting(ctx: Any) -> bool:
    """The framework's Context has MERMAID's ``memory`` switch."""
    return hasattr(ctx, "memory") and hasattr(ctx, "memory_only")


def memory_record(ctx: Any, *, checkpointer: str | None, server: str | None,
                  run_id: str) -> dict[str, Any] | None:
    """``run.json``'s ``memory`` entry (None for frameworks without a memory)."""
    if not has_memory_setting(ctx):
        return None
    enabled = bool(ctx.memory)
    if server:
        store = "server"
    else:
        store = "postgres" if checkpointer_kind(checkpointer) == "postgres" else MEMORY_FILE
    return {"enabled": enabled, "memory_only": bool(ctx.memory_only),
            "store": store if enabled else None,
            # the server's store keeps its own namespaces (owner = the authenticated user)
            "scope": run_id if enabled and not server else None,
            "order": "item_ids" if enabled else None, "sequential": enabled}


def sequential(record: dict[str, Any]) -> bool:
    """Items of this run go through the memory one at a time, in the recorded order."""
    return bool((record.get("memory") or {}).get("sequential"))


def memory_configurable(record: dict[str, Any]) -> dict[str, str]:
    """``configurable`` keys an item's run needs: the run's memory scope (empty without memory)."""
    memory = record.get("memory") or {}
    return {MEMORY_SCOPE_KEY: memory["scope"]} if memory.get("scope") else {}


@asynccontextmanager
async def open_memory_store(record: dict[str, Any], checkpointer: str | None,
                            out: Path) -> AsyncIterator[Any]:
    """The run's store (None when the run uses no memory or the server's), open for the block."""
    memory = record.get("memory") or {}
    if not memory.get("enabled") or memory.get("store") == "server":
        yield None
        return
    if memory["store"] == "postgres":
        async with _open_postgres(postgres_uri(checkpointer)) as store:
            yield store
        return
    import sqlite3

    from factdebate.run.claims import open_sqlite_store

    path = out / MEMORY_FILE
    try:
        async with open_sqlite_store(path) as store:
            yield store
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"cannot use the memory store {path} ({exc})",
                           "choose a writable --out with free space, or move the damaged file "
                           "aside (the run's memory then starts empty)") from exc


@asynccontextmanager
async def _open_postgres(uri: str) -> AsyncIterator[Any]:
    try:
        from langgraph.store.postgres.aio import AsyncPostgresStore
    except ImportError as exc:
        raise ConfigError("--checkpointer postgres needs langgraph-checkpoint-postgres",
                          "pip install langgraph-checkpoint-postgres 'psycopg[binary]'") from exc
    import psycopg

    manager = AsyncPostgresStore.from_conn_string(uri)
    try:
        store = await manager.__aenter__()
    except psycopg.Error as exc:
        raise _unavailable(uri, exc) from exc
    try:
        await store.setup()
    except psycopg.Error as exc:
        await manager.__aexit__(None, None, None)
        raise _unavailable(uri, exc) from exc
    try:
        yield store
    finally:
        await manager.__aexit__(None, None, None)


def _unavailable(uri: str, exc: Exception) -> BackendUnavailableError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return BackendUnavailableError(
        f"cannot open the PostgreSQL memory store at {mask_url(uri)} ({first})"[:400],
        "start the server and check the URI, or use --checkpointer sqlite")
