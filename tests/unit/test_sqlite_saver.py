"""``OneTripSqliteSaver`` stores exactly what ``AsyncSqliteSaver`` stores."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from factdebate import patches
from factdebate.patches.sqlite_saver import OneTripSqliteSaver
from factdebate.run.claims import open_sqlite_saver

CHECKPOINT = {**empty_checkpoint(), "id": "1ef00000-0000-6000-8000-000000000001"}


async def _fill(saver, thread: str) -> None:
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    cp = dict(CHECKPOINT)
    stored = await saver.aput(config, cp, {"source": "input", "step": -1}, {})
    await saver.aput_writes(stored, [("turns", [{"agent": "rag", "answer": "x" * 50}]),
                                     ("ledger", {"llm_calls": 2})], task_id="t1", task_path="a")
    await saver.aput_writes(stored, [("__error__", "boom")], task_id="t2")
    await saver.aput_writes(stored, [], task_id="t3")


def _dump(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return [tuple(r) for table in ("checkpoints", "writes")
                for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3")]  # noqa: S608


async def test_one_trip_saver_writes_the_same_rows_as_the_base_saver(tmp_path: Path):
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "base.sqlite")) as base:
        await _fill(base, "th")
    async with open_sqlite_saver(tmp_path / "ours.sqlite") as ours:
        assert isinstance(ours, OneTripSqliteSaver)
        await _fill(ours, "th")
        state = await ours.aget_tuple({"configurable": {"thread_id": "th", "checkpoint_ns": ""}})
        writes = {w[1]: w[2] for w in state.pending_writes}
        assert writes == {"turns": [{"agent": "rag", "answer": "x" * 50}],
                          "ledger": {"llm_calls": 2}, "__error__": "boom"}
    assert _dump(tmp_path / "ours.sqlite") == _dump(tmp_path / "base.sqlite")
    assert len(_dump(tmp_path / "ours.sqlite")) == 4  # 1 checkpoint + 3 writes


async def test_the_one_trip_saver_is_what_open_sqlite_saver_gives(tmp_path: Path):
    assert patches.enabled("sqlite_saver")  # the pinned aiosqlite + checkpoint-sqlite
    from factdebate.core.checkpoint_serde import reading_as_data

    async with open_sqlite_saver(tmp_path / "x.sqlite") as saver:  # reads checked as data
        assert type(saver) is reading_as_data(OneTripSqliteSaver)


async def test_another_aiosqlite_gets_the_plain_saver(tmp_path: Path, monkeypatch):
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    monkeypatch.setitem(patches.PATCHES, "sqlite_saver", patches.Patch(
        "factdebate.patches.sqlite_saver", {"aiosqlite": ("0.0.0",)}))
    monkeypatch.setattr(patches, "_state", {})
    assert patches.gate("sqlite_saver") == "aiosqlite 0.22.1 is not one of 0.0.0"
    from factdebate.core.checkpoint_serde import reading_as_data

    async with open_sqlite_saver(tmp_path / "x.sqlite") as saver:
        assert type(saver) is reading_as_data(AsyncSqliteSaver)
