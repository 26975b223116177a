"""LangGraph's ``AsyncSqliteSaver`` with each write done in one trip to the database thread.

Why: ``AsyncSqliteSaver`` (langgraph-checkpoint-sqlite 3.1) talks to SQLite through aiosqlite, which
runs every call - ``execute``, ``cursor``, ``executemany``, ``close``, ``commit`` - as a separate
job on its connection thread, each a queue put, a thread wake-up and a future resolved back on the
event loop. ``aput`` makes 3 such trips and ``aput_writes`` 4; a 3-round Tool-MAD claim writes
~13 checkpoints and ~25 write sets, so ~140 trips per claim, all on the critical path with
``durability="sync"``. In a py-spy profile of ``eval --workers 2`` at concurrency 32 the saver's
event-loop side was ~9% of a worker's CPU.

What: :class:`OneTripSqliteSaver` overrides only ``aput`` and ``aput_writes``. Serialisation stays
on the event loop, exactly as the base class does it, and the SQL - the same statements, the same
rows - plus the commit run as one function on aiosqlite's thread (``Connection._execute``, the
method every aiosqlite call goes through). Reads, ``setup`` and deletes are the base class's.
Under the saver's lock, as before, so no other statement of this saver runs between the insert
and its commit. The crash-safety trials (``evaluation/crash_trials.py``) and the resume tests
run against it.

The override is used only with the aiosqlite and langgraph-checkpoint-sqlite it was written
against (the gate in ``factdebate.patches.PATCHES``: it calls aiosqlite's private
``Connection._execute``/``_conn`` and copies the saver's SQL and serialisation), and only if that
``Connection`` still has ``_execute`` and ``_conn``; otherwise ``factdebate.run.claims`` uses the
plain ``AsyncSqliteSaver`` (correct, just more trips).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

_PUT = ("INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
        "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)")
_WRITES = ("INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
           "type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def install() -> bool:
    """Whether aiosqlite still has what :class:`OneTripSqliteSaver` calls (nothing is replaced).

    Ask through ``factdebate.patches.enabled("sqlite_saver")``, which checks the version gate.
    """
    try:
        from aiosqlite import Connection
    except ImportError:
        return False
    return callable(getattr(Connection, "_execute", None)) \
        and isinstance(getattr(Connection, "_conn", None), property)


class OneTripSqliteSaver(AsyncSqliteSaver):
    """``AsyncSqliteSaver`` whose ``aput``/``aput_writes`` take one database-thread trip each."""

    def _run_and_commit(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        conn = self.conn._conn  # on aiosqlite's thread (called through Connection._execute)
        if len(rows) == 1:
            conn.execute(sql, rows[0])
        else:
            conn.executemany(sql, rows)
        conn.commit()

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        """As ``AsyncSqliteSaver.aput``, in one trip."""
        if not self.is_setup:
            await self.setup()
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"]["checkpoint_ns"]
        type_, serialized_checkpoint = self.serde.dumps_typed(checkpoint)
        serialized_metadata = json.dumps(
            get_checkpoint_metadata(config, metadata), ensure_ascii=False
        ).encode("utf-8", "ignore")
        row = (str(thread_id), checkpoint_ns, checkpoint["id"],
               config["configurable"].get("checkpoint_id"), type_, serialized_checkpoint,
               serialized_metadata)
        async with self.lock:
            await self.conn._execute(self._run_and_commit, _PUT, [row])
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        """As ``AsyncSqliteSaver.aput_writes``, in one trip."""
        verb = ("INSERT OR REPLACE " if all(w[0] in WRITES_IDX_MAP for w in writes)
                else "INSERT OR IGNORE ")
        if not self.is_setup:
            await self.setup()
        configurable = config["configurable"]
        rows = [(str(configurable["thread_id"]), str(configurable["checkpoint_ns"]),
                 str(configurable["checkpoint_id"]), task_id, task_path,
                 WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value))
                for idx, (channel, value) in enumerate(writes)]
        if not rows:
            return
        async with self.lock:
            await self.conn._execute(self._run_and_commit, verb + _WRITES, rows)
