"""The in-memory runtime's run events: a new or ended run wakes ``langgraph dev``'s queue at once,
and the end of a run's creation is announced to whoever waits for it (the run admission).

Why, the queue: langgraph-runtime-inmem's background queue asks ``Runs.next(wait=...)`` for
pending runs in a loop; after an empty answer it passes ``wait=True``, and ``Runs.next`` then
sleeps 0.5 s before it looks at the run list again. A run created while the queue sleeps waits
the rest of that sleep, on average 0.25 s and up to 0.5 s, before its first node: on an idle
server every run pays it. Measured with ``factdebate bench soak`` (scripted model at 1 s per call,
the ``agree`` episode's critical path 4.0 s): one run alone took 4.6 s (``runs.wait``) to 5.0 s
(``runs.stream``) where the same graph in-process takes 4.05 s.

Why, the admission: the server's per-user run admission (``factdebate.server.limits``) holds the
user's lock from the auth handler until the admitted run is in the runtime's run list, so that the
user's next request counts it. The handler runs inside ``Runs.put``, before the run is added;
without a signal the admission asks the server's own API (a loopback request through the whole
middleware stack) until the run shows. ``Runs.put`` returning is that signal: the run is then in
the list, or never will be.

What :func:`install` changes, through the runtime's public ``Runs`` class (the three static
methods are called unchanged):

* ``Runs.put`` wakes the queue once it returns, and calls every listener registered with
  :func:`on_put_done` with the ``run_id`` it was given (returned or raised: either way the
  run's storage is decided);
* a run's end (``Runs.enter`` leaving) wakes the queue too: a run queued behind another on its
  thread (``multitask_strategy="enqueue"``) may start now; when the run's block ended without
  an error the listeners of :func:`on_run_end` are told (the run is no longer pending or
  running);
* ``Runs.next(wait=True)`` waits for a wake-up *or* the same 0.5 s, whichever comes first, then
  scans as ``Runs.next(wait=False)`` does. The scan, its lock and the run it hands out are the
  runtime's own; a run scheduled for later (``after_seconds``) is still found by the 0.5 s poll.

No wake-up is lost: the queue clears its event before it scans, and ``put`` sets it after the run
is in the list, so a run added after the scan leaves the event set and the next wait returns at
once. ``langgraph dev`` serves requests on several event loops (one per OS thread) while the
queue runs on one: a wake-up from another loop is handed over with ``call_soon_threadsafe``.

The gate in ``factdebate.patches.PATCHES`` names the langgraph-runtime-inmem version whose
``Runs.next``, ``Runs.put`` (the auth handler inside it, ``run_id`` as a keyword) and
``Runs.enter`` were read; with any other version nothing is wrapped, runs start at the runtime's
own pace and the admission asks the API. The LangGraph Platform runtime (PostgreSQL and Redis)
wakes its workers itself and needs none of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

POLL_S = 0.5
"""The runtime's own wait between empty scans, kept as the longest wait (delayed runs)."""
_MARK = "_factdebate_run_events"


class QueueWake:
    """One event the queue's loop waits on, set from any thread or loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._pending = False
        """A wake-up that came before the queue's loop registered (set on its first wait)."""

    def _event_here(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._loop is not loop or self._event is None:
                self._loop, self._event = loop, asyncio.Event()
                if self._pending:
                    self._event.set()
                    self._pending = False
            return self._event

    async def wait(self, timeout: float) -> bool:
        """Wait for a wake-up or ``timeout`` seconds; True when woken."""
        event = self._event_here()
        if not event.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout)
        return event.is_set()

    def clear(self) -> None:
        """Forget past wake-ups (the queue does it just before it scans)."""
        self._event_here().clear()

    def wake(self) -> None:
        """Wake the queue from any thread or event loop."""
        with self._lock:
            loop, event = self._loop, self._event
            if loop is None or event is None:
                self._pending = True
                return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            event.set()
            return
        with contextlib.suppress(RuntimeError):  # the queue's loop is closed: nothing waits
            loop.call_soon_threadsafe(event.set)


WAKE = QueueWake()

_put_listeners: list[Callable[[str, bool], None]] = []
_end_listeners: list[Callable[[str], None]] = []


def on_put_done(listener: Callable[[str, bool], None]) -> None:
    """Call ``listener(run_id, returned)`` (from the event loop that created the run) whenever
    the runtime's ``Runs.put`` has returned (``returned`` True: the run is stored, or was refused
    without an error, e.g. its thread is missing) or raised (False: it is not stored). Either way
    its storage is decided. Registered once per process (a listener already registered is not
    added again)."""
    if listener not in _put_listeners:
        _put_listeners.append(listener)


def on_run_end(listener: Callable[[str], None]) -> None:
    """Call ``listener(run_id)`` when a run the worker entered has ended: ``Runs.enter`` left
    without an error from the run's block (success, error or interrupted are set by then). A run
    the worker hands back for a retry (the block raises; it is pending again) is not reported."""
    if listener not in _end_listeners:
        _end_listeners.append(listener)


def put_events_active() -> bool:
    """Whether this process's runtime ``Runs.put`` is wrapped, so that :func:`on_put_done`
    listeners will be called (False outside a server process or with the gate closed)."""
    ops = sys.modules.get("langgraph_runtime_inmem.ops")
    put = getattr(getattr(ops, "Runs", None), "put", None)
    return bool(getattr(put, _MARK, False))


def _tell(listeners: list[Callable[..., None]], run_id: Any, *more: Any) -> None:
    """Call each listener with the run's id (and ``more``); a listener's fault never fails the
    run or its creation."""
    if run_id is None:
        return
    for listener in list(listeners):
        try:
            listener(str(run_id), *more)
        except Exception:  # noqa: BLE001, S110  # the listener's problem, not the run's
            pass


def _put_done(run_id: Any, returned: bool = True) -> None:
    _tell(_put_listeners, run_id, returned)


def _run_ended(run_id: Any) -> None:
    _tell(_end_listeners, run_id)


def waking_next(next_: Callable[..., AsyncIterator[Any]],
                wake: QueueWake = WAKE) -> Callable[..., AsyncIterator[Any]]:
    """``Runs.next`` whose ``wait=True`` ends early on a wake-up."""
    if getattr(next_, _MARK, False):
        return next_

    @functools.wraps(next_)
    async def wrapper(wait: bool, limit: int = 1) -> AsyncIterator[Any]:
        if wait:
            await wake.wait(POLL_S)
        wake.clear()
        async for item in next_(False, limit):
            yield item

    setattr(wrapper, _MARK, True)
    return wrapper


def waking_put(put: Callable[..., Any], wake: QueueWake = WAKE) -> Callable[..., Any]:
    """``Runs.put`` that wakes the queue once the run is in the list and tells the listeners
    (:func:`on_put_done`) that its ``run_id`` is decided."""
    if getattr(put, _MARK, False):
        return put

    @functools.wraps(put)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        returned = False
        try:
            result = await put(*args, **kwargs)
            returned = True
        finally:
            _put_done(kwargs.get("run_id"), returned)
        wake.wake()
        return result

    setattr(wrapper, _MARK, True)
    return wrapper


def waking_enter(enter: Callable[..., Any], wake: QueueWake = WAKE) -> Callable[..., Any]:
    """``Runs.enter`` (an async context manager) that wakes the queue when the run ends and tells
    the listeners (:func:`on_run_end`) when its block ended without an error."""
    if getattr(enter, _MARK, False):
        return enter

    @contextlib.asynccontextmanager
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        run_id = kwargs.get("run_id", args[0] if args else None)
        raised = False
        try:
            async with enter(*args, **kwargs) as done:
                try:
                    yield done
                except BaseException:
                    raised = True  # a retry hands the run back (pending again) through here
                    raise
        finally:
            wake.wake()
        if not raised:
            _run_ended(run_id)

    functools.update_wrapper(wrapper, enter)
    setattr(wrapper, _MARK, True)
    return wrapper


def wrap(runs: type, wake: QueueWake = WAKE) -> None:
    """Make ``runs``' queue wake on new and ended runs (idempotent)."""
    runs.next = staticmethod(waking_next(runs.next, wake))  # type: ignore[attr-defined]
    runs.put = staticmethod(waking_put(runs.put, wake))  # type: ignore[attr-defined]
    runs.enter = staticmethod(waking_enter(runs.enter, wake))  # type: ignore[attr-defined]


def install() -> bool:
    """Wrap the runtime's ``Runs`` in a server process; outside one (no langgraph-api loaded)
    there is no queue and nothing is imported."""
    if "langgraph_api" not in sys.modules and "langgraph_runtime_inmem.ops" not in sys.modules:
        return True
    try:
        from langgraph_runtime_inmem import ops
    except Exception:  # noqa: BLE001  # another runtime: it schedules runs itself
        return True
    wrap(ops.Runs)
    return True
