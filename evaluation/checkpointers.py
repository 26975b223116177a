"""The checkpointer an evaluation run keeps its per-item threads in: SQLite or PostgreSQL.

``--checkpointer sqlite`` (default): ``OUT/checkpoints.sqlite`` next to the results.
``--checkpointer postgres``: the database named by ``$FACTDEBATE_POSTGRES_URI`` (so a password
never appears in the process list or the run record); a ``postgresql://...`` URI is accepted too.
Thread ids are ``<run id>:<item id>`` with a random run id, so runs sharing one database never
collide. Errors name the database with its password masked.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from factdebate.core.errors import BackendUnavailableError, ConfigError

POSTGRES_ENV = "FACTDEBATE_POSTGRES_URI"
_SCHEMES = ("postgres://", "postgresql://")


def masked(uri: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db``."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", uri)


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
async def open_checkpointer(value: str | None, out: Path) -> AsyncIterator[Any]:
    """The run's saver, set up and closed with the block."""
    if checkpointer_kind(value) == "sqlite":
        from factdebate.run.claims import open_sqlite_saver

        async with open_sqlite_saver(out / "checkpoints.sqlite") as saver:
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
        manager = AsyncPostgresSaver.from_conn_string(uri)
        saver = await manager.__aenter__()
        await saver.setup()
    except psycopg.Error as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BackendUnavailableError(
            f"cannot open the PostgreSQL checkpointer at {masked(uri)} ({first})"[:400],
            "start the server and check the URI, or use --checkpointer sqlite") from exc
    try:
        yield saver
    finally:
        await manager.__aexit__(None, None, None)
