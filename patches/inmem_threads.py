"""No lost thread on ``langgraph dev``: the in-memory runtime's thread deletes and metadata patches,
one at a time.

Why: langgraph-runtime-inmem's ``Threads.delete`` finds the thread's index in the server's thread
list, awaits the auth handler, cascades the delete to the thread's runs, crons and checkpoints
(rebuilding the checkpointer's whole ``writes`` dictionary), and only then pops that index;
``Threads.patch`` replaces the thread at an index found before its handler the same way.
``langgraph dev`` serves requests on several event loops, each in its own OS thread
(``uvloop_0`` ... in its log), so another delete can pop an earlier thread in between - by
interleaving at the handler's ``await`` or by the interpreter switching threads in the middle of
the cascade - and the stale index then removes or overwrites a *different* thread, often another
user's, with everything in it: its ``runs/wait`` answers 404 "Thread or assistant not found",
its owner's DELETE 404, and a run queued on it logs "Unexpected missing thread in Runs.next".
Measured: 4 users running graphs and deleting their own oldest threads two at a time lost
threads within 20 s (``tests/integration/test_server_threads_stress.py``), with or without a
waiting auth handler.

:func:`install` wraps both static methods so that one runs at a time in the whole process (a
thread lock, acquired without blocking any event loop: a waiting delete polls); the methods
themselves are called unchanged through the runtime's public ``Threads`` class. Reading,
creating and running threads are not serialised: appending to the list never moves an index.

The runtime's delete also leaves the thread's channel values in its checkpointer (it removes
the checkpoints and pending writes only), so the server's memory grew with every deleted thread;
the wrapped delete reads the thread's value keys first and removes those values once the delete
succeeded (:func:`factdebate.patches.inmem_history.forget_values`, while that patch's gate is
open too).

The gate in ``factdebate.patches.PATCHES`` names the langgraph-runtime-inmem version whose
``Threads.delete`` and ``Threads.patch`` were read; with any other version nothing is wrapped
and the server logs it once at start (``factdebate.server.lifespan``). Deployments on the
LangGraph Platform runtime (PostgreSQL) keep threads in a database and need none of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

_LOCK = threading.Lock()
_POLL_S = 0.001
_MARK = "_factdebate_one_at_a_time"


@contextlib.asynccontextmanager
async def one_at_a_time() -> AsyncIterator[None]:
    """Hold the process-wide thread-list lock; waits by polling, so no event loop blocks (a
    holder on the same loop may be suspended inside)."""
    while not _LOCK.acquire(blocking=False):
        await asyncio.sleep(_POLL_S)
    try:
        yield
    finally:
        _LOCK.release()


def serialised(method: Callable[..., Awaitable[Any]],
               saver: Callable[[], Any] | None = None) -> Callable[..., Awaitable[Any]]:
    """``method`` (an async function) run under :func:`one_at_a_time`. With ``saver`` (the
    checkpointer's factory), ``method`` is a thread delete ``(conn, thread_id, ...)``: the
    thread's channel values, which the runtime's delete leaves behind, are removed once it
    succeeded."""
    if getattr(method, _MARK, False):
        return method

    @functools.wraps(method)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        async with one_at_a_time():
            if saver is None:
                return await method(*args, **kwargs)
            thread_id = kwargs.get("thread_id", args[1] if len(args) > 1 else None)
            keys = _value_keys(saver, thread_id)
            result = await method(*args, **kwargs)  # raises when nothing was deleted
            if keys:
                from factdebate.patches import inmem_history

                inmem_history.forget_values(saver(), keys)
            return result

    setattr(wrapper, _MARK, True)
    return wrapper


def _value_keys(saver: Callable[[], Any], thread_id: Any) -> list[Any]:
    """The thread's channel-value keys, while the ``inmem_history`` gate (the checkpointer's
    layout) is open; none otherwise."""
    from factdebate.patches import enabled, inmem_history

    store = saver() if thread_id is not None and enabled("inmem_history") else None
    return [] if store is None else inmem_history.value_keys(store, str(thread_id))


def wrap(threads: type, saver: Callable[[], Any] | None = None) -> None:
    """Serialise ``threads``' delete and patch (idempotent); with ``saver``, a delete also
    removes the thread's channel values."""
    threads.delete = staticmethod(serialised(threads.delete, saver))  # type: ignore[attr-defined]
    threads.patch = staticmethod(serialised(threads.patch))  # type: ignore[attr-defined]


def install() -> bool:
    """Wrap the runtime's ``Threads`` in a server process; outside one (no langgraph-api
    loaded) there is nothing to guard and nothing is imported."""
    if "langgraph_api" not in sys.modules and "langgraph_runtime_inmem.ops" not in sys.modules:
        return True
    try:
        from langgraph_runtime_inmem import ops
    except Exception:  # noqa: BLE001  # another runtime: it keeps threads elsewhere
        return True
    from factdebate.patches import inmem_history

    wrap(ops.Threads, inmem_history.runtime_saver)
    return True
