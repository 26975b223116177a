"""``factdebate eval --workers N``: items run in N worker processes instead of one event loop.

Why: with a fast model server, an evaluation is CPU-bound in our own process - LangGraph's
supersteps, LangChain's callback machinery, ragas, checkpoint serialisation - and Python runs that
on one core (the GIL). ``factdebate bench scaling`` measured 64 Tool-MAD claims at concurrency 32
with the scripted double (100 ms per call): one process used ~1 core-second of CPU per 5 claims and
left the second core idle, so the run took ~4x its critical path (BENCHMARKS.md).

How it works:

* The coordinating process (``run_eval``) keeps everything that must exist once per run: it samples
  the items, writes ``run.json``, appends and fsyncs ``results.jsonl``, draws the progress bar,
  records LangSmith feedback and applies ``--concurrency`` (one semaphore for all workers; each item
  goes to the worker with the fewest items in flight).
* Each worker runs items exactly as the in-process runner does (``ItemRunner``: rate-limit retries,
  ``--metrics``, error rows) in its own event loop, against the run's checkpointer - SQLite in WAL
  mode (several processes may write one database) or PostgreSQL - so ``--resume`` is unchanged:
  a thread's checkpoints do not depend on which process wrote them. With MERMAID's evidence
  memory on, the workers also open the run's memory store, and the coordinator hands out items
  one at a time in the recorded order: one memory stream, independent of ``--workers``
  (``evaluation/memory_store.py`` says why).
* A Milvus Lite folder can be open in one process only (``DataDirLockedError``). The coordinator
  opens it - Milvus Lite 3 serves it over gRPC on loopback inside that process (with
  ``patches/milvus_lite.py``) - and the workers connect to that URI as to a Milvus server. The
  tantivy keyword index is opened read-only by every worker.
* Workers are forked from a ``multiprocessing`` fork server that has imported the heavy modules
  (LangGraph, LangChain, sentence-transformers: ~10 s) but started no thread, so a worker starts in
  well under a second plus its own model and index loads; ``WorkerPool`` can be kept and reused
  across runs (the benchmark does; ``run_eval`` starts and stops its own otherwise).
* A worker exits as soon as its pipe to the coordinator closes (the coordinator ended, was killed or
  interrupted): nothing keeps writing checkpoints behind a stopped run. A worker that dies turns its
  in-flight items into error rows (``WorkerCrashed``) and the run goes on with the others;
  ``--resume --retry-errors`` reruns them from their checkpoints.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import multiprocessing
import os
import resource
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from factdebate.core import errors as fd_errors
from factdebate.core.errors import FactDebateError

PRELOAD = [
    "factdebate.evaluation.workers",
    "factdebate.evaluation.runner",
    "factdebate.graphs.registry",
    "factdebate.run.claims",
    "factdebate.graphs.tool_mad",
    "factdebate.graphs.madke",
    "factdebate.graphs.madam_rag",
    "factdebate.graphs.mermaid",
    "factdebate.tools.base",
    "factdebate.tools.milvus_rag",
    "factdebate.tools.keyword",
    "factdebate.tools.embeddings",
    "factdebate.tools.embeddings_onnx",
    "factdebate.testing.scripted",
    "onnxruntime",
    "tokenizers",
]
"""Imported once by the fork server (none starts a thread), so forked workers skip the imports.
MiniLM embeds on ONNX Runtime (tools/embeddings_onnx.py), never torch."""
START_TIMEOUT_S = 300.0


class WorkerCrashed(RuntimeError):
    """A worker process ended while it was running an item."""


def remote_error(kind: str, message: str, remedy: str) -> Exception:
    """A worker's error re-raised in the coordinator: the same ``FactDebateError`` class if it was one."""
    cls = getattr(fd_errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, FactDebateError):
        return cls(message, remedy)
    return RuntimeError(f"worker: {kind}: {message}")


def _error_message(exc: BaseException) -> tuple[str, str, str]:
    if isinstance(exc, FactDebateError):
        return type(exc).__name__, exc.problem, exc.remedy
    return type(exc).__name__, str(exc)[:2000], ""


# -- the worker process ---------------------------------------------------------------------------
@dataclass
class _Run:
    runner: Any
    saver_cm: Any
    store_cm: Any
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)


class _WorkerTracing:
    """LangSmith tracing of one run's items inside a worker; feedback is the coordinator's."""

    def __init__(self, project: str, example_ids: dict[str, str]) -> None:
        from factdebate.core.trace_filter import trace_client

        self.client = trace_client()  # the traces hold no secret (core/trace_filter.py)
        self.project = project
        self.example_ids = example_ids

    def config_for(self, item_id: str) -> dict[str, Any]:
        from langchain_core.tracers import LangChainTracer

        return {"callbacks": [LangChainTracer(project_name=self.project, client=self.client,
                                              example_id=self.example_ids[item_id])]}

    def record(self, trace_id: str, correct: bool | None, row: Any = None) -> None:
        """Done by the coordinator, which has the row."""

    def close(self) -> None:
        self.client.flush()


def worker_main(conn: Connection) -> None:
    """Entry point of a worker process: serve ``conn`` until it closes or says stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle
    import threading

    from tqdm import tqdm

    # progress bars of model loads would create a multiprocessing lock per worker, which
    # os._exit below leaves to the resource tracker ("leaked semaphore" warnings)
    tqdm.set_lock(threading.RLock())
    from factdebate.run.claims import run_async

    try:
        run_async(_serve(conn))
    finally:
        os._exit(0)  # never run atexit handlers that wait for threads of a half-finished item


async def _serve(conn: Connection) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()

    def readable() -> None:
        try:
            while conn.poll():
                inbox.put_nowait(conn.recv())
        except (EOFError, OSError):
            loop.remove_reader(conn.fileno())
            inbox.put_nowait(("eof",))

    loop.add_reader(conn.fileno(), readable)
    runs: dict[str, _Run] = {}
    conn.send(("ready", os.getpid()))
    while True:
        msg = await inbox.get()
        kind = msg[0]
        if kind == "item":
            _, key, seq, item = msg
            run = runs[key]
            task = asyncio.create_task(_run_item(conn, run, seq, item))
            run.tasks.add(task)
            task.add_done_callback(run.tasks.discard)
        elif kind == "open":
            _, key, payload = msg
            try:
                runs[key] = await _open_run(payload)
                conn.send(("opened", key))
            except BaseException as exc:  # noqa: BLE001 - reported to the coordinator
                conn.send(("open_failed", key, *_error_message(exc), traceback.format_exc()))
        elif kind == "close":
            _, key = msg
            run = runs.pop(key)
            if run.tasks:
                await asyncio.gather(*run.tasks, return_exceptions=True)
            tracing = run.runner.experiment
            if tracing is not None:
                tracing.close()
            await run.store_cm.__aexit__(None, None, None)
            await run.saver_cm.__aexit__(None, None, None)
            conn.send(("closed", key, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
        else:  # "stop", or "eof": the coordinator is gone - stop at once, as a kill would
            return


async def _open_run(payload: dict[str, Any]) -> _Run:
    from factdebate.evaluation.checkpointers import open_checkpointer
    from factdebate.evaluation.executors import LocalExecutor
    from factdebate.evaluation.items import ItemRunner, check_models
    from factdebate.evaluation.memory_store import open_memory_store

    spec, ctx, record = payload["spec"], payload["ctx"], payload["record"]
    if payload.get("milvus_uri"):
        ctx = dataclasses.replace(ctx, milvus_uri=payload["milvus_uri"])
    await asyncio.to_thread(check_models, ctx)
    await asyncio.to_thread(warm_retrievers, spec.framework, ctx)
    saver_cm = open_checkpointer(spec.checkpointer, spec.out)
    saver = await saver_cm.__aenter__()
    # MERMAID's evidence memory: the coordinator sends memory items one at a time, in order
    # (evaluation/memory_store.py), so the workers share one stream without racing on it
    store_cm = open_memory_store(record, spec.checkpointer, spec.out)
    try:
        store = await store_cm.__aenter__()
    except BaseException:
        await saver_cm.__aexit__(None, None, None)
        raise
    tracing = None
    if payload.get("langsmith_project"):
        tracing = _WorkerTracing(payload["langsmith_project"], payload["example_ids"])
    runner = ItemRunner(spec, ctx, record, LocalExecutor(spec.framework, saver, store), tracing)
    # models, indexes and modules stay for the worker's life: keep them out of the cyclic GC's
    # full collections (~0.4 s each over ~700k objects, about one per 20 Tool-MAD claims)
    gc.freeze()
    return _Run(runner=runner, saver_cm=saver_cm, store_cm=store_cm)


async def _run_item(conn: Connection, run: _Run, seq: int, item: Any) -> None:
    try:
        row = await run.runner.run(item)
    except BaseException as exc:  # noqa: BLE001 - ItemRunner already turns item faults into rows
        conn.send(("failed", seq, *_error_message(exc)))
        return
    conn.send(("row", seq, row))


def warm_retrievers(framework: str, ctx: Any) -> None:
    """Open the retrievers the framework's debaters use (once per process, cached)."""
    from factdebate.graphs.registry import FRAMEWORKS
    from factdebate.nodes.retrieval import retriever_settings
    from factdebate.tools.base import get_retriever

    if not FRAMEWORKS.entry(framework).meta.get("needs_index", True):
        return
    backends = {getattr(ctx, "rag_backend", None), getattr(ctx, "search_backend", None)}
    for backend in backends - {None, "auto", "tavily"}:
        get_retriever(backend, retriever_settings(ctx))


# -- the coordinator's side -------------------------------------------------------------------------
@dataclass
class _Worker:
    process: Any
    conn: Connection
    pid: int = 0
    in_flight: set[int] = field(default_factory=set)
    alive: bool = True
    items_done: int = 0
    """Items this worker returned a row for (over the pool's life)."""
    peak_rss_mb: float | None = None
    """The worker's peak resident set size, MiB, as of the last run it closed."""


class WorkerPool:
    """N worker processes serving one evaluation run at a time (see the module docstring)."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise fd_errors.InputError(f"--workers {workers} must be positive", "use 1 or more")
        self.size = workers
        self.workers: list[_Worker] = []
        self.start_s: float | None = None
        """Seconds ``start`` took (fork server + worker processes up)."""
        self._waiters: dict[tuple[str, Any], asyncio.Future[Any]] = {}
        self._items: dict[int, tuple[asyncio.Future[Any], _Worker]] = {}
        self._seq = 0
        self._run_key: str | None = None

    async def __aenter__(self) -> WorkerPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.shutdown()

    async def start(self) -> None:
        """Start the worker processes and wait until each says it is ready."""
        if self.workers:
            return
        began = time.perf_counter()
        mp = multiprocessing.get_context("forkserver" if sys.platform != "win32" else "spawn")
        if sys.platform != "win32":
            mp.set_forkserver_preload(PRELOAD)
        loop = asyncio.get_running_loop()
        ready: list[asyncio.Future[Any]] = []  # a worker may be ready before the next one starts
        for _ in range(self.size):
            parent, child = mp.Pipe(duplex=True)
            process = mp.Process(target=worker_main, args=(child,), daemon=True,
                                 name="factdebate-eval-worker")
            await loop.run_in_executor(None, process.start)
            child.close()
            worker = _Worker(process=process, conn=parent)
            self.workers.append(worker)
            ready.append(loop.create_future())
            self._waiters[("ready", id(worker))] = ready[-1]
            loop.add_reader(parent.fileno(), self._readable, worker)
        try:
            await asyncio.wait_for(asyncio.gather(*ready), START_TIMEOUT_S)
        except BaseException:
            await self.shutdown()
            raise
        self.start_s = round(time.perf_counter() - began, 2)

    def _readable(self, worker: _Worker) -> None:
        try:
            while worker.conn.poll():
                self._handle(worker, worker.conn.recv())
        except (EOFError, OSError):
            self._lost(worker)

    def _handle(self, worker: _Worker, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "ready":
            worker.pid = msg[1]
            self._resolve(("ready", id(worker)), None)
        elif kind in ("opened", "closed"):
            if kind == "closed":
                worker.peak_rss_mb = round(msg[2], 1)
            self._resolve((kind, id(worker)), None)
        elif kind == "open_failed":
            _, _, err_kind, message, remedy, trace = msg
            exc = remote_error(err_kind, message, remedy)
            exc.__notes__ = [f"in worker {worker.pid}:\n{trace}"]
            self._resolve(("opened", id(worker)), exc)
        elif kind in ("row", "failed"):
            seq = msg[1]
            fut, _ = self._items.pop(seq, (None, None))
            worker.in_flight.discard(seq)
            if fut is not None and not fut.done():
                if kind == "row":
                    worker.items_done += 1
                    fut.set_result(msg[2])
                else:
                    fut.set_exception(remote_error(*msg[2:]))

    def _resolve(self, key: tuple[str, Any], error: BaseException | None) -> None:
        fut = self._waiters.pop(key, None)
        if fut is None or fut.done():
            return
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(error)

    def _lost(self, worker: _Worker) -> None:
        """``worker``'s pipe closed: it exited or crashed. Fail what it owed us."""
        if not worker.alive:
            return
        worker.alive = False
        try:
            asyncio.get_running_loop().remove_reader(worker.conn.fileno())
        except (ValueError, OSError):
            pass
        worker.process.join(timeout=1)
        crash = WorkerCrashed(f"worker process {worker.pid or worker.process.pid} ended (exit "
                              f"code {worker.process.exitcode})")
        for seq in list(worker.in_flight):
            fut, _ = self._items.pop(seq, (None, None))
            if fut is not None and not fut.done():
                fut.set_exception(crash)
        worker.in_flight.clear()
        for kind in ("ready", "opened", "closed"):
            self._resolve((kind, id(worker)), crash if kind != "closed" else None)

    def _alive(self) -> list[_Worker]:
        alive = [w for w in self.workers if w.alive]
        if not alive:
            raise WorkerCrashed("every worker process has ended; see the error rows, then "
                                "continue with --resume --retry-errors")
        return alive

    async def _broadcast(self, kind: str, msg: tuple[Any, ...], timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        waits = []
        for worker in self._alive():
            fut = self._waiters[(kind, id(worker))] = loop.create_future()
            worker.conn.send(msg)
            waits.append(fut)
        await asyncio.wait_for(asyncio.gather(*waits), timeout)

    async def open_run(self, payload: dict[str, Any]) -> None:
        """Every worker loads the run's models, retrievers and checkpointer."""
        if self._run_key is not None:
            raise RuntimeError("a WorkerPool serves one evaluation run at a time")
        key = payload["record"]["run_id"]
        await self._broadcast("opened", ("open", key, payload), START_TIMEOUT_S)
        self._run_key = key

    async def close_run(self) -> None:
        """Wait for the workers to finish their items and close the run's checkpointer."""
        key, self._run_key = self._run_key, None
        if key is not None and any(w.alive for w in self.workers):
            await self._broadcast("closed", ("close", key), None)

    async def run_item(self, item: Any) -> dict[str, Any]:
        """The results row of ``item``, run by the least busy worker."""
        if self._run_key is None:
            raise RuntimeError("open_run first")
        worker = min(self._alive(), key=lambda w: len(w.in_flight))
        self._seq += 1
        seq = self._seq
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._items[seq] = (fut, worker)
        worker.in_flight.add(seq)
        worker.conn.send(("item", self._run_key, seq, item))
        return await fut

    def peak_rss_mb(self) -> list[float | None]:
        """Each worker's peak RSS (MiB) as of the last closed run."""
        return [w.peak_rss_mb for w in self.workers]

    async def shutdown(self) -> None:
        """Stop every worker (they exit at once; checkpoints of unfinished items stay resumable)."""
        loop = asyncio.get_running_loop()
        for worker in self.workers:
            if worker.alive:
                try:
                    loop.remove_reader(worker.conn.fileno())
                    worker.conn.send(("stop",))
                except (OSError, ValueError):
                    pass
            worker.alive = False
            worker.conn.close()
        for worker in self.workers:
            await loop.run_in_executor(None, worker.process.join, 10)
            if worker.process.is_alive():
                worker.process.kill()
        self.workers.clear()
