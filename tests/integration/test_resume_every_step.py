"""Resume from every point a crash can leave a thread at, and get the uninterrupted run's result.

A run is checkpointed after every superstep, and each task's writes are saved as it finishes
(``durability="sync"``). A ``kill -9`` can therefore leave a thread at any checkpoint of its
history with all, some or none of that step's writes saved. Each case is made here exactly (a
finished run's SQLite history cut back), not by timing a kill, and resumed through ``run_graph``
as ``factdebate eval`` does; the label, rounds, stop reason, turns and LLM-call ledger must equal
the uninterrupted run's - nothing lost, nothing counted twice.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from factdebate.graphs.registry import context_class
from factdebate.run.claims import open_sqlite_saver
from factdebate.run.engine import run_graph

THREAD = "t-resume"
CLAIM = {"claim": "The Eiffel Tower is in Paris."}
CASES = {
    # framework: context overrides (static retrievers: no index needed)
    "multi_agent_debate": {},
    "tool_mad": {"rag_backend": "static", "search_backend": "static",
                 "scoring_mode": "consistency"},
}


def _context(framework: str, **overrides: Any) -> Any:
    return context_class(framework)(debater_model="scripted:disagree", **overrides)


async def _run(framework: str, ctx: Any, db: Path, resume: Any) -> dict[str, Any]:
    async with open_sqlite_saver(db) as saver:
        return await run_graph(framework, CLAIM, ctx, checkpointer=saver, thread_id=THREAD,
                               resume=resume)


def _essentials(result: dict[str, Any]) -> dict[str, Any]:
    return {"label": result["label"], "rounds": result["rounds"],
            "stopped_by": result["stopped_by"], "llm_calls": result["ledger"]["llm_calls"],
            "turns": len(result["turns"])}


def _history(db: Path) -> list[tuple[str, list[str]]]:
    """(checkpoint id, task ids with saved writes) oldest first."""
    with sqlite3.connect(db) as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id=? AND checkpoint_ns='' "
            "ORDER BY checkpoint_id", (THREAD,))]
        return [(cid, [r[0] for r in conn.execute(
            "SELECT DISTINCT task_id FROM writes WHERE thread_id=? AND checkpoint_ns='' AND "
            "checkpoint_id=? ORDER BY task_id", (THREAD, cid))]) for cid in ids]


def _cut(db: Path, target: Path, checkpoint_id: str, keep_tasks: list[str]) -> None:
    """``db`` as a crash right after ``checkpoint_id`` with only ``keep_tasks``' writes saved."""
    shutil.copy(db, target)
    with sqlite3.connect(target) as conn:
        conn.execute("DELETE FROM checkpoints WHERE thread_id=? AND checkpoint_id>?",
                     (THREAD, checkpoint_id))
        conn.execute("DELETE FROM writes WHERE thread_id=? AND checkpoint_id>?",
                     (THREAD, checkpoint_id))
        marks = ",".join("?" * len(keep_tasks))
        conn.execute(f"DELETE FROM writes WHERE thread_id=? AND checkpoint_id=? "
                     f"AND task_id NOT IN ({marks})", (THREAD, checkpoint_id, *keep_tasks))


# Tool-MAD has the longest history (~15 s of resumes): the slow tier; the multi-agent debate's
# every crash point stays in the default one
@pytest.mark.parametrize("framework", [pytest.param(f, marks=pytest.mark.slow) if f == "tool_mad"
                                       else f for f in sorted(CASES)])
def test_resuming_from_any_crash_point_gives_the_uninterrupted_result(framework, tmp_path):
    ctx = _context(framework, **CASES[framework])
    full_db = tmp_path / "full.sqlite"
    expected = _essentials(asyncio.run(_run(framework, ctx, full_db, resume=False)))
    assert expected["llm_calls"] > 0 and expected["turns"] > 0
    history = _history(full_db)
    assert len(history) >= 5, history
    cases = 0
    for step, (checkpoint_id, tasks) in enumerate(history[:-1]):
        # all of the step's writes, none, and (a step of parallel turns) only the first task's
        for keep in {tuple(tasks), (), tuple(tasks[:1])}:
            cut = tmp_path / f"cut-{step}-{len(keep)}.sqlite"
            _cut(full_db, cut, checkpoint_id, list(keep))
            got = _essentials(asyncio.run(_run(framework, ctx, cut, resume="auto")))
            assert got == expected, (f"resumed after checkpoint {step} of {len(history)} with "
                                     f"{len(keep)} of {len(tasks)} task writes saved")
            cases += 1
    assert cases >= 2 * (len(history) - 1)
