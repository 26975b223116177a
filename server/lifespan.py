"""The LangGraph server's start-up: check the default models, find or build the index before the
first request.

:func:`lifespan` is the lifespan of the custom app named in ``langgraph.json`` ``http.app``
(:mod:`factdebate.server.webapp`): langgraph-api merges it into its own and runs it after the
graphs are loaded and before the server answers requests, so a fresh ``langgraph dev`` (no index
yet) builds the bundled demo index once (~35 s) and its first run succeeds. The rule is the CLI's
(:func:`factdebate.tools.demo_index.check_index_or_build_demo`): the demo index only in the default folder and
only where no index exists at all; an index folder or Milvus URI the operator configured must hold
an index; a damaged index is never replaced. The index is read, not only listed: the vector index
is opened (collection, dimension, passage count against the manifest) and searched once
(``factdebate.tools.indexing.read_vector_index``). The index is the operator's
(``FACTDEBATE_INDEX_DIR``, ``FACTDEBATE_MILVUS_URI``, ``FACTDEBATE_HOME``): clients cannot choose
it. On success one line names the served index, and the process holds the index's shared lock
(``factdebate index --replace`` is refused while the server runs).

While the server runs, store items older than the store TTL are swept
(``FACTDEBATE_STORE_TTL_MINUTES``, :func:`factdebate.server.usage.store_ttl`). Before the first
request, the in-memory runtime's thread deletes and metadata patches are made to run one at a
time (:mod:`factdebate.patches.inmem_threads`: upstream's delete removes a thread by an index
found before it waits, and a concurrent delete then removes another user's thread); with a
runtime version the patch was not read from, one warning line says the threads are unguarded.
The runtime's queue is also woken by each new or ended run (:mod:`factdebate.patches.inmem_run_events`),
so a run starts at once instead of at the queue's next 0.5 s poll.
The warm heap is frozen out of the garbage collector's full collections once the first run has
streamed to its end (``core/heap.py``, called by ``graphs/exported.DebateGraph.astream``); young
collections keep CPython's threshold here, unlike the CLI's claim processes, so the cyclic garbage
a failed run leaves (an exception's frames holding a large reply) is collected within the next
few hundred allocations instead of holding its memory while the server idles.
``FACTDEBATE_GC=default`` leaves CPython's collector as it is.
Before the index, the models a run gets when it names none (``FACTDEBATE_MODEL`` or the declared
default) must be on the operator's allow-list (``factdebate.server.policy.check_default_models``).
A problem stops the start with one line on stderr naming it and the remedy, e.g.
``factdebate: the server cannot start: the index at /srv/index is damaged: manifest.json is
missing. rebuild it: ...``; the process then exits with the error's exit code (2 configuration,
3 index damaged or unreachable, 6 in use) without a traceback: raising from a lifespan makes
Starlette and uvicorn log the whole traceback around the line. Under a supervisor process (the
reloader of ``langgraph dev``, uvicorn's ``--workers``) the worker ends the supervisor too, so
the command exits non-zero instead of staying alive serving nothing. Nothing happens at import
time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator

from starlette.applications import Starlette

from factdebate.core.context import Context
from factdebate.core.errors import FactDebateError


def _say(line: str) -> None:
    print(f"factdebate: {line}", file=sys.stderr, flush=True)


def prepare_index() -> None:
    """Find or build the operator's index, then read it (blocking; the lifespan runs it in a
    thread): the vector index is opened and searched once (``read_vector_index``), so a Milvus
    Lite folder whose files hold random bytes stops the start instead of every run."""
    from factdebate.tools.demo_index import check_index_or_build_demo
    from factdebate.tools.indexing import read_vector_index

    ctx = Context()
    state = check_index_or_build_demo(ctx, announce=_say)
    passages = read_vector_index(ctx.index_path, ctx.resolved_milvus_uri, ctx.embedding_model)
    _say(f"serving the index at {state.path} ({passages} passages, read and searched)")


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Check the default models and prepare the index, or stop the server with one line naming
    the problem."""
    from factdebate.server.policy import check_default_models

    try:
        check_default_models()  # a run without a model gets it: it must be on the allow-list
        await asyncio.to_thread(prepare_index)
    except FactDebateError as exc:
        _say(f"the server cannot start: {exc}")
        _end_supervisor()
        os._exit(exc.exit_code)  # a raise here would bury the line under a lifespan traceback
    guard_thread_list()
    wake_queue_on_new_runs()
    async with _store_ttl():
        yield


def guard_thread_list() -> bool:
    """Serialise the in-memory runtime's thread deletes and patches (``inmem_threads``); False,
    with one warning line, when its version gate is closed."""
    from factdebate import patches

    if patches.enabled("inmem_threads"):
        return True
    _say(f"warning: concurrent thread deletes are not guarded: {patches.gate('inmem_threads')} "
         "(patches/inmem_threads.py); a delete may remove another thread on this runtime")
    return False


def wake_queue_on_new_runs() -> bool:
    """Start a new run at once instead of at the in-memory runtime's next 0.5 s queue poll
    (``inmem_run_events``); False, with one line, when its version gate is closed (runs then
    start at the runtime's own pace)."""
    from factdebate import patches

    if patches.enabled("inmem_run_events"):
        return True
    _say(f"note: new runs wait for the queue's 0.5 s poll: {patches.gate('inmem_run_events')} "
         "(patches/inmem_run_events.py)")
    return False


def _end_supervisor() -> None:
    """End the uvicorn supervisor this worker runs under, if any, so the refused start ends it.

    ``langgraph dev`` (its reloader on, the default) and ``uvicorn --workers N`` run the app in a
    child process started with ``multiprocessing`` (spawn); the supervisor ignores a child that
    exits (the reloader waits for file changes, ``--workers`` starts the child again), so the
    refused start would leave a process serving nothing. The child signals its parent
    (``multiprocessing.parent_process()``) with ``SIGUSR1``, a signal neither supervisor handles:
    the supervisor ends at once with a non-zero status (128 + 10 in a shell), and whoever started
    it learns that the start failed. A server run in-process (``--no-reload``, plain ``uvicorn``)
    has no such parent and exits with the error's code itself.
    """
    import multiprocessing
    import signal

    parent = multiprocessing.parent_process()
    if parent is None or parent.pid is None or "uvicorn" not in sys.modules:
        return
    with contextlib.suppress(OSError):  # already gone: nothing to end
        os.kill(parent.pid, signal.SIGUSR1)


def _store_ttl() -> contextlib.AbstractAsyncContextManager[None]:
    """The store sweep of :mod:`factdebate.server.usage` (the in-memory store has no TTL)."""
    from factdebate.server.limits import load_limits
    from factdebate.server.usage import ledger, store_ttl

    limits = load_limits()  # valid: the auth module read the same environment at start
    return store_ttl(limits.store_ttl_minutes, limits.store_sweep_minutes,
                     ledger(limits.bytes_per_user))

