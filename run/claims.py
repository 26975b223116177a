"""What running a graph needs: compiled graphs, the SQLite checkpointer and store, the result object.

The engine call itself is ``factdebate.run.engine.run_graph`` (``verify``, ``check``, ``eval`` and
the server's tests all go through it), so every run is checkpointed under a thread id and can be
resumed after an interruption.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import StateSnapshot

from factdebate.core.caching import ProcessCache
from factdebate.core.context import Context, factdebate_home
from factdebate.core.heap import claim_process_gc
from factdebate.core.ledger import empty_ledger
from factdebate.graphs.registry import build_framework
from factdebate.nodes.render import average_scores

T = TypeVar("T")

DURABILITY: Literal["sync"] = "sync"
"""Each step's checkpoint is written before the next step starts. LangGraph's default ("async",
written in the background) lost ledger counts of resumed items after ``kill -9`` with the
PostgreSQL saver in 4 of 6 crash trials (``evaluation/crash_trials.py``); "sync": 0 of 6.

Turn subgraphs (Tool-MAD's ``debate_turn`` and the like) run inside one parent node without
checkpoints of their own (``graphs/turns.py``: node by node for linear turns, compiled with
``checkpointer=False`` otherwise): the parent checkpoints once per superstep and saves each finished
turn's writes, so a run resumes at the turn boundary (a turn cut short by a crash is redone) instead
of paying a checkpoint for every node inside every turn (measured: 49 -> 13 checkpoint writes per
3-round Tool-MAD claim)."""

_compiled: ProcessCache[tuple[str, int, int], CompiledStateGraph] = ProcessCache(
    "compiled graphs", maxsize=32)


def compiled_graph(
    name: str, checkpointer: BaseCheckpointSaver, store: BaseStore | None
) -> CompiledStateGraph:
    """Framework ``name`` compiled with this checkpointer and store, built once per pair.

    Compiling a graph costs ~10-30 ms of CPU; an evaluation runs it per item. Keyed by identity
    with strong references, so a key cannot be reused by another object while cached.
    """
    return _compiled.get(
        (name, id(checkpointer), id(store)),
        lambda: build_framework(name, turns="lean").compile(  # graphs/exported.py: lean turns
            checkpointer=checkpointer, store=store, name=name),
        pin=(checkpointer, store),
    )


@asynccontextmanager
async def open_sqlite_saver(path: Path | str) -> AsyncIterator[BaseCheckpointSaver]:
    """LangGraph's ``AsyncSqliteSaver`` on ``path``, set up, in WAL mode with ``synchronous=NORMAL``.

    The saver's default (``FULL``) fsyncs the write-ahead log on every commit; ``NORMAL`` in WAL mode
    still survives a killed process (each commit is in the OS page cache before the next step
    starts - the ``kill -9`` crash trials of ``evaluation/crash_trials.py`` run against it) and
    gives up only the last commits on power loss. Measured: aput + aput_writes p50 1.15 -> 0.37 ms.
    Writes take one trip to the database thread each (``patches/sqlite_saver.py``).
    Checkpoints are read as data (``core/checkpoint_serde.py``): a value naming code, a foreign
    type or a row that is not a checkpoint is ``UnsupportedDataError`` "unsupported data in PATH",
    never run.
    """
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from factdebate import patches
    from factdebate.core.checkpoint_serde import CheckpointSerializer, reading_as_data

    saver_class = AsyncSqliteSaver
    if patches.enabled("sqlite_saver"):
        from factdebate.patches.sqlite_saver import OneTripSqliteSaver

        saver_class = OneTripSqliteSaver
    async with aiosqlite.connect(str(path)) as conn:  # as saver_class.from_conn_string, + serde
        saver = reading_as_data(saver_class)(conn, serde=CheckpointSerializer(path))
        await saver.setup()  # journal_mode=WAL
        await saver.conn.execute("PRAGMA synchronous=NORMAL")
        yield saver


@asynccontextmanager
async def open_sqlite_store(path: Path | str) -> AsyncIterator[BaseStore]:
    """LangGraph's ``AsyncSqliteStore`` on ``path``, set up, in WAL mode.

    The store of MERMAID's evidence memory: ``$FACTDEBATE_HOME/memory.sqlite`` for ``verify``,
    ``OUT/memory.sqlite`` for an evaluation run. WAL lets evaluation worker processes open the
    same file (their writes are serialised by SQLite; ``busy_timeout`` waits instead of failing).
    """
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    async with AsyncSqliteStore.from_conn_string(str(path)) as store:
        await store.conn.execute("PRAGMA busy_timeout=30000")
        await store.conn.execute("PRAGMA journal_mode=WAL")
        await store.setup()
        yield store


def event_loop_kind() -> str:
    """``uvloop`` when it is installed and ``$FACTDEBATE_EVENT_LOOP`` is not ``asyncio``."""
    if os.environ.get("FACTDEBATE_EVENT_LOOP", "").strip().lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:  # not on Windows; the default loop then
        return "asyncio"
    return "uvloop"


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on the event loop of :func:`event_loop_kind` (the CLI's entry points).

    A debate keeps the event loop busy with LangGraph supersteps, LangChain runnables and many
    small futures; uvloop runs that loop code faster. Measured on 64 FEVER claims at concurrency
    32 with the scripted double (100 ms per call), wall 7.7 -> 6.5 s median of 6 runs each
    (``factdebate bench scaling`` and BENCHMARKS.md). ``FACTDEBATE_EVENT_LOOP=asyncio`` opts out.
    The garbage collector runs less often in a process that runs claims (``core/heap.py``).
    """
    claim_process_gc()
    if event_loop_kind() == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)
    return asyncio.run(coro)


def default_memory_db() -> Path:
    """SQLite store of CLI runs (MERMAID's evidence memory, persists across runs)."""
    return factdebate_home() / "memory.sqlite"


def default_checkpoint_db() -> Path:
    """SQLite checkpoint file used by CLI runs unless ``--checkpoint-db`` says otherwise."""
    return factdebate_home() / "checkpoints.sqlite"


@cache  # one subprocess per process, not per item
def git_sha() -> str:
    """Commit of the code that produced a result ("" outside a checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def model_metadata(ctx: Any) -> dict[str, str]:
    """Top-level run metadata naming the run's models, ``model_<role>: spec`` (LangSmith filters).

    Flat keys, one per role, so traces can be filtered by model (``metadata.model_debater =
    "openai:gpt-4o-mini"``); the server adds the same keys to its runs (server/).
    """
    return {f"model_{role}": spec for role, spec in ctx.model_specs().items() if spec}


def unfinished(snapshot: StateSnapshot) -> bool:
    """True while the thread's last checkpoint still has a step to run or to apply.

    ``snapshot.next`` lists only the step's tasks *without* saved writes. A process killed after
    every task of a step had saved its writes but before the next checkpoint was written leaves
    ``next`` empty with the step not applied (e.g. a debate round opened, its turns never run):
    ``snapshot.tasks`` still lists those tasks, and resuming applies their writes and goes on. A
    finished graph's last checkpoint has no tasks. (Found by the ``kill -9`` crash trials: a
    resumed item ended one round short with a third of its LLM calls missing from the ledger.)
    """
    return bool(snapshot.next or snapshot.tasks)


def result_object(
    framework: str, values: dict[str, Any], ctx: Context, *, thread_id: str, prompt_version: str
) -> dict[str, Any]:
    """The JSON object ``verify --json`` prints (and results files store)."""
    scores = values.get("scores") or {}
    averages = average_scores(scores)
    ledger = {**empty_ledger(), **(values.get("ledger") or {})}
    return {
        "framework": framework,
        "claim": values.get("claim"),
        "task": values.get("task"),
        "label": values.get("label"),
        "answers": values.get("answers") or [],
        "rationale": values.get("rationale", ""),
        "rounds": values.get("round", 0),
        "stopped_by": values.get("stopped_by", ""),
        "scores": {a: {"average": averages.get(a, {}), "rounds": rows} for a, rows in scores.items()},
        "ledger": ledger,
        "flags": values.get("flags") or [],
        "turns": values.get("turns") or [],
        # what the verdict rests on (cited) vs what was only retrieved
        "evidence": values.get("verdict_evidence") or [],
        "retrieved": values.get("retrieved_evidence") or [],
        "citations": values.get("citations") or [],
        **({"check": values["check"]} if values.get("check") else {}),  # check_text
        **({"review": values["review"]} if values.get("review") else {}),  # review step
        "thread_id": thread_id,
        "models": ctx.model_specs(),
        "prompt_version": prompt_version,
        "git_sha": git_sha(),
    }
