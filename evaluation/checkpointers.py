"""The checkpointer an evaluation run keeps its per-item threads in: SQLite or PostgreSQL.

``--checkpointer sqlite`` (default): ``OUT/checkpoints.sqlite`` next to the results.
``--checkpointer postgres``: the database named by ``$FACTDEBATE_POSTGRES_URI`` (so a password
never appears in the process list or the run record); a ``postgresql://...`` URI is accepted too.
Thread ids are ``<run id>:<item id>`` with a random run id, so runs sharing one database never
collide. Errors name the database with its password masked.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from factdebate.core.errors import (
    BackendUnavailableError,
    ConfigError,
    InputError,
    StorageError,
    UnsupportedDataError,
)
from factdebate.core.settings import mask_url

POSTGRES_ENV = "FACTDEBATE_POSTGRES_URI"
_SCHEMES = ("postgres://", "postgresql://")
SQLITE_FILE = "checkpoints.sqlite"


def checkpointer_kind(value: str | None) -> str:
    """``sqlite`` or ``postgres`` for a ``--checkpointer`` value (None = sqlite)."""
    if value in (None, "", "sqlite"):
        return "sqlite"
    if value == "postgres" or str(value).startswith(_SCHEMES):
        return "postgres"
    raise ConfigError(f"unknown --checkpointer {value!r}",
                      f"use sqlite, postgres (URI in ${POSTGRES_ENV}) or a postgresql:// URI")


def postgres_uri(value: str | None) -> str:
    """The database URI of ``--checkpointer postgres`` / ``postgresql://...``."""
    uri = value if value and value.startswith(_SCHEMES) else os.environ.get(POSTGRES_ENV, "")
    if not uri.startswith(_SCHEMES):
        raise ConfigError(f"--checkpointer postgres needs ${POSTGRES_ENV}",
                          f"export {POSTGRES_ENV}=postgresql://user:password@host:5432/db")
    return uri


@asynccontextmanager
async def _open_sqlite(path: Path, repair: bool) -> AsyncIterator[Any]:
    from factdebate.run.claims import open_sqlite_saver

    problem = sqlite_damage(path)
    if problem and not repair:
        raise InputError(f"{path} is damaged ({problem})",
                         "rerun with --resume --repair: it is set aside and unfinished items "
                         "start over (finished rows in results.jsonl are kept)")
    foreign = "" if problem else not_a_checkpoint_database(path)
    if foreign and not repair:
        raise UnsupportedDataError(
            f"unsupported data in {path} (not a checkpoint database: {foreign})",
            "nothing was written to it: rerun with --resume --repair to set it aside (unfinished "
            "items start over, finished rows in results.jsonl are kept), or choose another --out",
            source=str(path))
    if problem or foreign:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            part = path.with_name(path.name + suffix)
            if part.exists():
                os.replace(part, path.with_name(f"{path.name}.damaged-{stamp}{suffix}"))
    try:
        async with open_sqlite_saver(path) as saver:
            yield saver
    except sqlite3.OperationalError as exc:
        if path.is_dir():
            raise InputError(f"checkpoint database {path} is a folder",
                             "remove it or choose another --out") from exc
        raise StorageError(f"cannot open the checkpoint database {path} ({exc})",
                           "choose a writable --out with free space") from exc


def sqlite_damage(path: Path) -> str:
    """Why the SQLite file at ``path`` is unusable (``""`` if absent or sound).

    ``PRAGMA quick_check`` reads every page once (no index cross-checks).
    """
    if not path.is_file():
        return ""
    try:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return "" if verdict == "ok" else f"integrity check: {verdict}"[:200]


def not_a_checkpoint_database(path: Path) -> str:
    """Why the sound SQLite file at ``path`` is not LangGraph's checkpoint database (``""`` if
    absent or it is): an empty file or a database of something else would get LangGraph's tables
    added by the saver's setup and the run's finished items would have no transcripts. Only the
    schema is read."""
    from factdebate.core.checkpoint_serde import checkpoint_tables_problem

    if not path.is_file():
        return ""
    if path.stat().st_size == 0:
        return "an empty file"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return checkpoint_tables_problem(conn)


@asynccontextmanager
async def open_checkpointer(value: str | None, out: Path, *, repair: bool = False) -> AsyncIterator[Any]:
    """The run's saver, set up and closed with the block.

    A SQLite file that is not a database (or is malformed) is refused in one line, and so is one
    that is not LangGraph's checkpoint database (an empty file, other tables: "unsupported data
    in FILE", exit 3), before anything is written to it; with ``repair`` either is moved aside
    (``checkpoints.sqlite.damaged-<time>``, with its WAL) and a new one is started, so
    unfinished items start over and finished rows stay. An absent file is created.
    """
    if checkpointer_kind(value) == "sqlite":
        async with _open_sqlite(out / SQLITE_FILE, repair) as saver:
            yield saver
        return
    uri = postgres_uri(value)
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError as exc:
        raise ConfigError("--checkpointer postgres needs langgraph-checkpoint-postgres",
                          "pip install langgraph-checkpoint-postgres 'psycopg[binary]'") from exc
    import psycopg

    try:
        from factdebate.core.checkpoint_serde import CheckpointSerializer, reading_as_data

        # read as data, checked as the SQLite saver's reads are: a value naming code or a row
        # that is not a checkpoint is UnsupportedDataError naming the database, never run
        manager = reading_as_data(AsyncPostgresSaver).from_conn_string(
            uri, serde=CheckpointSerializer(f"the PostgreSQL checkpointer at {mask_url(uri)}"))
        saver = await manager.__aenter__()
        await saver.setup()
    except psycopg.Error as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BackendUnavailableError(
            f"cannot open the PostgreSQL checkpointer at {mask_url(uri)} ({first})"[:400],
            "start the server and check the URI, or use --checkpointer sqlite") from exc
    try:
        yield saver
    finally:
        await manager.__aexit__(None, None, None)
