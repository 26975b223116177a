"""The one engine call: any registered graph on one input, checkpointed, resumable, streamed.

``verify`` (a claim), ``check`` (a text), ``eval`` (each item, ``evaluation/executors.py``), the
benchmarks and the tests run graphs through :func:`run_graph`: one set of resume guards, one
way of opening the SQLite checkpoint and store (busy timeout, WAL) for every command. The command
line's runs go through :func:`run_local`, which adds the local SQLite checkpoint and memory
databases (``run.claims.open_sqlite_saver`` / ``open_sqlite_store``: the same settings for every
command) and turns faults into one-line, resumable errors.

A resumed thread is checked once, here (:func:`check_resumable`): it must exist, hold a run of the
same framework and the same input (the claim, or the text); the messages name what differs.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from langgraph.types import Command, StateSnapshot

from factdebate.core import trace_filter
from factdebate.core.context import Context, masked_context
from factdebate.core.errors import (
    BackendUnavailableError,
    FactDebateError,
    InputError,
    RunFaultError,
    StorageError,
    storage_problem,
)
from factdebate.core.heap import settle_after_first_claim
from factdebate.core.state import DebateInput, complete_input
from factdebate.graphs.first_use import ensure_index, index_pending
from factdebate.graphs.registry import FRAMEWORKS
from factdebate.prompts import load_prompts
from factdebate.run.claims import (
    DURABILITY,
    compiled_graph,
    default_checkpoint_db,
    default_memory_db,
    git_sha,
    model_metadata,
    open_sqlite_saver,
    open_sqlite_store,
    result_object,
    run_async,
    unfinished,
)

INTERRUPT = "__interrupt__"
"""The key of an invocation's output when the run stopped at an interrupt (LangGraph's own
constant is private since LangGraph 1.0)."""


class Progress(Protocol):
    """What a caller that shows progress receives while a graph runs (``check``'s claim bars)."""

    def seed(self, values: Mapping[str, Any]) -> None:
        """The state a resumed run starts from."""

    def update(self, node: str, update: dict[str, Any] | None) -> None:
        """One node's update, as LangGraph streams it (``stream_mode="updates"``)."""


async def run_graph(
    framework: str,
    item: DebateInput | Mapping[str, Any],
    ctx: Context,
    *,
    checkpointer: BaseCheckpointSaver,
    thread_id: str | None = None,
    resume: bool | Literal["auto"] = False,
    config_extra: dict[str, Any] | None = None,
    store: BaseStore | None = None,
    progress: Progress | None = None,
    review_decision: Any = None,
) -> dict[str, Any]:
    """Run (or resume) ``framework`` on one input; return the result object of the output contract.

    ``item`` is the graph's input (``{"claim": ...}`` for a verifier, ``{"text": ...}`` for
    ``check_text``). ``resume=True`` continues ``thread_id`` after :func:`check_resumable`;
    ``"auto"`` resumes the thread if it holds a checkpoint and starts it otherwise (the evaluation
    runner's per-item threads). ``review_decision`` (with ``resume=True``) is the reviewer's
    decision a run stopped at its ``review`` step resumes with (``Command(resume=...)``,
    nodes/review.py); a run that stopped there carries the step's payload as
    ``pending_review`` in its result. ``config_extra`` adds run-config keys (``metadata`` and
    ``configurable`` are merged; ``callbacks``, ``run_id``, ``tags``, ``run_name`` are set).
    ``store`` is the LangGraph store the nodes see as ``runtime.store`` (MERMAID's memory).
    ``progress`` receives the streamed node updates (without it the graph is invoked). A run
    that reads the default index folder first applies the command line's first-use rule
    (``factdebate.graphs.first_use``: the demo index where none exists, once per process).

    Raises:
        InputError: Nothing to resume, or the thread holds another framework's run or another
            input (named); a fresh run on a thread that already holds one.
        IndexDamagedError: The default index folder holds a damaged index.
    """
    name = FRAMEWORKS.resolve(framework)
    trace_filter.install()  # the traces of the run hold no secret (core/trace_filter.py)
    needs_index = bool(FRAMEWORKS.entry(name).meta.get("needs_index", True))
    if index_pending(ctx, needs_index):  # first use from Python: the CLI's demo-index rule
        await asyncio.to_thread(ensure_index, ctx, needs_index=needs_index)
    graph = compiled_graph(name, checkpointer, store)
    known_new = thread_id is None  # a thread id made here holds nothing: no read to check it
    thread_id = thread_id or uuid.uuid4().hex
    prompt_version = load_prompts(ctx.prompt_set).version
    config: dict[str, Any] = {
        "configurable": {"thread_id": thread_id},
        "metadata": {"framework": name, "prompt_version": prompt_version,
                     "fd_context": masked_context(ctx), **model_metadata(ctx),
                     **({"git_sha": git_sha()} if git_sha() else {})},  # the server's too
        "run_name": f"{name}:verify",
    }
    extra = dict(config_extra or {})
    config["metadata"] |= extra.pop("metadata", {})
    config["configurable"] |= extra.pop("configurable", {})  # keys besides the thread id
    config |= extra
    fresh_ok = False
    if resume == "auto":
        snapshot = await graph.aget_state(config)
        # a process killed while the input checkpoint and its writes were being saved leaves a
        # thread with nothing to run, no turns and no ending (crash trials, PostgreSQL saver):
        # that item starts over - nothing in its reducers can be counted twice
        values = snapshot.values
        fresh_ok = bool(snapshot.created_at) and not (
            unfinished(snapshot) or values.get("stopped_by") or values.get("turns"))
        resume = bool(snapshot.created_at) and not fresh_ok
        known_new = not snapshot.created_at  # just read: the check below need not read it again
    elif resume:
        check_resumable(await graph.aget_state(config), thread_id, name, item)
    if resume:
        snapshot = await graph.aget_state(config)
        if not snapshot.created_at:
            raise InputError(f"no checkpointed run with thread id {thread_id!r}",
                             "check --thread-id and --checkpoint-db, or drop --resume")
        if progress is not None:
            progress.seed(snapshot.values)
        if pending_review(snapshot.interrupts) is not None and not getattr(ctx, "review", True):
            ctx = replace(ctx, review=True)  # a run stopped for its review resumes as one
        if review_decision is not None and pending_review(snapshot.interrupts) is None:
            raise InputError(f"thread {thread_id!r} is not waiting for a review",
                             "drop the review decision, or name the thread a review stopped")
        if unfinished(snapshot):
            start = None if review_decision is None else Command(resume=review_decision)
            await _advance(graph, start, config, ctx, progress)
        values = (await graph.aget_state(config)).values
    else:
        if not fresh_ok and not known_new and (await graph.aget_state(config)).created_at:
            raise InputError(f"thread id {thread_id!r} already holds a run",
                             "pass --resume to continue it, or choose a new --thread-id")
        values = await _advance(graph, complete_input(dict(item)), config, ctx, progress)
        if not values or INTERRUPT in values:  # streamed, or stopped early: the checkpoint
            values = (await graph.aget_state(config)).values or values
    settle_after_first_claim()  # the warm heap frozen once (core/heap.py)
    result = result_object(name, values, ctx, thread_id=thread_id, prompt_version=prompt_version)
    if getattr(ctx, "review", False) or resume:
        pending = pending_review((await graph.aget_state(config)).interrupts)
        if pending is not None:
            result["pending_review"] = pending
    return result


def pending_review(interrupts: Any) -> dict[str, Any] | None:
    """The payload of the ``review`` step a run stopped at (nodes/review.py), or None."""
    for item in interrupts or ():
        value = getattr(item, "value", None)
        if isinstance(value, dict) and value.get("kind") == "review":
            return value
    return None


async def _advance(graph: Any, payload: Any, config: dict[str, Any], ctx: Context,
                   progress: Progress | None) -> Any:
    """Run the graph from ``payload`` (None: from its checkpoint), streaming to ``progress``.

    Invoked, it returns every state key (``output_keys``: the values a read of the final
    checkpoint gives, without reading and decoding that checkpoint again - one read per fresh
    claim fewer); streamed, None.
    """
    if progress is None:
        return await graph.ainvoke(payload, config, context=ctx, durability=DURABILITY,
                                   output_keys=graph.stream_channels_list)
    async for chunk in graph.astream(payload, config, context=ctx, stream_mode="updates",
                                     durability=DURABILITY):
        for node, update in chunk.items():
            progress.update(node, update if isinstance(update, dict) else None)
    return None


INPUT_MISMATCH = {
    # input key: (the thread holds another ..., how to resume it, the remedy's verb)
    "claim": ("verifies another claim", "resume it with that claim, or drop --resume to verify "
              "this one"),
    "text": ("checks another text", "resume it with that text, or drop --resume to check this one"),
}


def check_resumable(snapshot: StateSnapshot, thread_id: str, framework: str,
                    item: Mapping[str, Any]) -> None:
    """Refuse to resume a thread that is missing, another framework's, or holds another input.

    The input is compared on its key (``claim`` for a verifier, ``text`` for ``check_text``),
    whitespace at the ends ignored.

    Raises:
        InputError: What differs, named, with how to resume the thread instead.
    """
    if not snapshot.created_at:
        raise InputError(f"no checkpointed run with thread id {thread_id!r}",
                         "check --thread-id and --checkpoint-db, or drop --resume")
    key = "text" if "text" in item and "claim" not in item else "claim"
    started_as = (snapshot.metadata or {}).get("framework")
    if started_as and started_as != framework:
        if key == "text":
            raise InputError(f"thread {thread_id!r} is a {started_as} run, not a text check",
                             f"resume it with: factdebate verify --framework {started_as} --resume")
        raise InputError(f"thread {thread_id!r} is a {started_as} run, not {framework}",
                         f"resume it with --framework {started_as}, or drop --resume")
    stored = (snapshot.values or {}).get(key)
    given = item.get(key)
    if isinstance(stored, str) and isinstance(given, str) and stored.strip() != given.strip():
        what, remedy = INPUT_MISMATCH[key]
        shown = (f"{stored[:60]!r}..." if key == "text" else
                 repr(stored if len(stored) <= 80 else stored[:77] + "..."))
        raise InputError(f"thread {thread_id!r} {what} ({shown})", remedy)


# -- the command line's runs: local SQLite databases, faults as one line -------------------------

def checkpoint_place(db: Path) -> Path:
    """``db`` after checking that a SQLite database can live there (its folder is created).

    Raises:
        StorageError: ``db`` is a folder, or its folder cannot be created or written.
    """
    if db.is_dir():
        raise StorageError(f"--checkpoint-db {db} is a folder",
                           "pass a file path, e.g. --checkpoint-db runs/checkpoints.sqlite")
    parent = db.parent
    if parent.exists() and not parent.is_dir():
        raise StorageError(f"{parent} is a file, so {db.name} cannot be created in it",
                           "set FACTDEBATE_HOME (or --checkpoint-db) to a folder path")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {parent} ({storage_problem(exc) or exc.strerror})",
                           "set FACTDEBATE_HOME (or --checkpoint-db) to a writable folder") from exc
    if not os.access(parent, os.W_OK) or (db.exists() and not os.access(db, os.W_OK)):
        raise StorageError(f"{db} is not writable (read-only folder or file system)",
                           "set FACTDEBATE_HOME (or --checkpoint-db) to a writable place")
    return db


def storage_failure(exc: BaseException, db: Path) -> StorageError | None:
    """The one-line error of a run stopped by a full or read-only disk (None for other faults)."""
    problem = storage_problem(exc)
    if not problem:
        return None
    return StorageError(f"cannot write the checkpoint database {db} ({problem})",
                        "free disk space or pass --checkpoint-db on a writable disk, then rerun "
                        "with --resume --thread-id")


def interrupted_run(exc: Exception, thread_id: str, what: str = "the run") -> BackendUnavailableError:
    """A one-line error for a run stopped by a fault; its checkpoint lets it resume.

    A model-server or Milvus fault names the backend (``backend_error``); URLs in the text have
    their credentials masked.
    """
    from factdebate.core.faults import backend_error
    from factdebate.core.settings import mask_url

    known = backend_error(exc)
    if known is not None:
        return BackendUnavailableError(
            f"{known.problem}; {what} stopped, progress is checkpointed under thread {thread_id}",
            f"{known.remedy or 'fix the cause'}, then rerun with --resume --thread-id {thread_id}")
    detail = mask_url(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    stopped = "the model server is unreachable" if "connect" in detail.lower() else f"{what} stopped"
    return BackendUnavailableError(
        f"{stopped} ({detail}); progress is checkpointed under thread {thread_id}",
        f"fix the cause, then rerun with --resume --thread-id {thread_id}",
    )


def run_local(
    framework: str,
    item: Mapping[str, Any],
    ctx: Context,
    *,
    thread_id: str,
    resume: bool,
    checkpoint_db: Path | None = None,
    config_extra: dict[str, Any] | None = None,
    progress: Progress | None = None,
    what: str = "the run",
    review_decision: Any = None,
) -> dict[str, Any]:
    """:func:`run_graph` on the local SQLite checkpoint and memory databases (``verify``, ``check``).

    Raises:
        StorageError: The checkpoint database cannot live or be written where it is asked to.
        BackendUnavailableError: A model server, tool or index failed after its retries; the run
            is checkpointed under ``thread_id`` (the message says how to resume).
        InputError: See :func:`run_graph`.
    """
    db = checkpoint_db or default_checkpoint_db()

    async def run() -> dict[str, Any]:
        checkpoint_place(db)
        checkpoint_place(default_memory_db())
        async with open_sqlite_saver(db) as saver, \
                open_sqlite_store(default_memory_db()) as store:
            return await run_graph(framework, item, ctx, checkpointer=saver, thread_id=thread_id,
                                   resume=resume, config_extra=config_extra, store=store,
                                   progress=progress, review_decision=review_decision)

    try:
        return run_async(run())
    except RunFaultError as exc:  # a model server that failed mid-run: resumable
        raise interrupted_run(exc, thread_id, what) from exc
    except FactDebateError:
        raise
    except Exception as exc:  # a provider or tool fault that outlived its retries
        raise storage_failure(exc, db) or interrupted_run(exc, thread_id, what) from exc
