"""patches/inmem_run_events: a new run ends the queue's wait instead of its next poll.

The poll is set to 60 s in these tests, so a queue that is not woken would not take the run
within the tests' 10 s deadline: each test fails by timing out, never by a measured duration.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from factdebate.patches import inmem_run_events as qw

LONG_POLL_S = 60.0
DEADLINE_S = 10.0


class FakeRuns:
    """The shape of langgraph-runtime-inmem's ``Runs`` the patch wraps: ``put`` adds a pending
    run, ``next(wait)`` sleeps the poll when asked to wait and then hands out pending runs,
    ``enter`` is an async context manager around a run."""

    runs: list[dict[str, Any]] = []
    scans: list[bool] = []

    @staticmethod
    async def put(run_id: str) -> list[dict[str, Any]]:
        FakeRuns.runs.append({"run_id": run_id, "status": "pending"})
        return FakeRuns.runs

    @staticmethod
    async def next(wait: bool, limit: int = 1):  # noqa: A003  # the runtime's name
        FakeRuns.scans.append(wait)
        if wait:
            await asyncio.sleep(qw.POLL_S)
        for run in [r for r in FakeRuns.runs if r["status"] == "pending"][:limit]:
            run["status"] = "running"
            yield run

    @staticmethod
    def enter(run_id: str):
        import contextlib

        @contextlib.asynccontextmanager
        async def cm():
            yield run_id

        return cm()


@pytest.fixture
def runs(monkeypatch):
    monkeypatch.setattr(qw, "POLL_S", LONG_POLL_S)
    for name in ("put", "next", "enter"):
        monkeypatch.setattr(FakeRuns, name, FakeRuns.__dict__[name])
    FakeRuns.runs, FakeRuns.scans = [], []
    QUEUE_WAITS.clear()
    wake = qw.QueueWake()
    qw.wrap(FakeRuns, wake)
    qw.wrap(FakeRuns, wake)  # idempotent: one wrapper, not two
    return wake


QUEUE_WAITS: list[bool] = []


async def _queue_takes_one() -> dict[str, Any]:
    """The runtime's queue loop: ``wait`` after an empty scan, until a run comes."""
    wait = False
    while True:
        QUEUE_WAITS.append(wait)
        async for run in FakeRuns.next(wait=wait, limit=1):
            return run
        wait = True


async def _until_the_queue_waits() -> None:
    while not QUEUE_WAITS or QUEUE_WAITS[-1] is False:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)


async def test_a_run_put_on_the_same_loop_ends_the_queues_wait(runs):
    async with asyncio.timeout(DEADLINE_S):
        queue = asyncio.create_task(_queue_takes_one())
        await _until_the_queue_waits()  # it found nothing and now waits
        await FakeRuns.put("r1")
        run = await queue
    assert run == {"run_id": "r1", "status": "running"}
    assert QUEUE_WAITS == [False, True]
    assert set(FakeRuns.scans) == {False}  # the runtime's scans run without its own sleep


async def test_a_run_put_from_another_threads_loop_ends_the_queues_wait(runs):
    async with asyncio.timeout(DEADLINE_S):
        queue = asyncio.create_task(_queue_takes_one())
        await _until_the_queue_waits()
        other = threading.Thread(target=lambda: asyncio.run(FakeRuns.put("r2")))
        other.start()
        run = await queue
        other.join()
    assert run["run_id"] == "r2"


async def test_a_run_put_between_scan_and_wait_is_not_missed(runs):
    """``put`` sets the event after the run is in the list; the queue clears it only before its
    scan, so a run added after a scan leaves the next wait nothing to wait for."""
    assert [r async for r in FakeRuns.next(wait=False)] == []
    await FakeRuns.put("r3")  # after the scan, before the wait
    async with asyncio.timeout(DEADLINE_S):
        got = [r async for r in FakeRuns.next(wait=True)]
    assert [r["run_id"] for r in got] == ["r3"]


async def test_a_run_ending_wakes_the_queue_for_one_queued_behind_it(runs):
    async with asyncio.timeout(DEADLINE_S):
        assert [r async for r in FakeRuns.next(wait=False)] == []
        async with FakeRuns.enter("r0") as run_id:
            assert run_id == "r0"
        assert await runs.wait(LONG_POLL_S) is True


async def test_without_a_wake_the_wait_is_the_poll(runs):
    assert await runs.wait(0.05) is False


async def test_a_wake_before_the_queue_first_waits_is_kept():
    wake = qw.QueueWake()
    wake.wake()  # no loop registered yet: remembered
    async with asyncio.timeout(DEADLINE_S):
        assert await wake.wait(LONG_POLL_S) is True


async def test_the_runtimes_own_next_is_wrapped_and_scans_after_a_wake(monkeypatch):
    """Against langgraph-runtime-inmem itself (the gated version): the wrapped ``Runs.next``
    scans the runtime's empty run list as soon as it is woken."""
    from langgraph_runtime_inmem import ops

    from factdebate import patches

    assert patches.gate("inmem_run_events") is None
    for name in ("put", "next", "enter"):
        monkeypatch.setattr(ops.Runs, name, ops.Runs.__dict__[name])
    monkeypatch.setattr(qw, "POLL_S", LONG_POLL_S)
    wake = qw.QueueWake()
    qw.wrap(ops.Runs, wake)
    assert all(getattr(getattr(ops.Runs, n), "_factdebate_run_events", False)
               for n in ("put", "next", "enter"))
    wake.wake()
    async with asyncio.timeout(DEADLINE_S):
        assert [r async for r in ops.Runs.next(wait=True, limit=1)] == []


async def test_put_tells_its_listeners_the_run_id_whether_it_stored_or_raised(monkeypatch):
    heard: list[tuple[str, bool]] = []

    def listener(run_id: str, returned: bool) -> None:
        heard.append((run_id, returned))

    monkeypatch.setattr(qw, "_put_listeners", [])
    qw.on_put_done(listener)
    qw.on_put_done(listener)  # registered once

    async def put(conn, assistant_id, kwargs, *, run_id=None, refuse=False):
        if refuse:
            raise PermissionError("the auth handler refused the run")
        return [run_id]

    wrapped = qw.waking_put(put, qw.QueueWake())
    assert await wrapped(None, "a", {}, run_id="r1") == ["r1"]
    with pytest.raises(PermissionError):
        await wrapped(None, "a", {}, run_id="r2", refuse=True)
    assert await wrapped(None, "a", {}) == [None]  # no run id given: nobody is told
    assert heard == [("r1", True), ("r2", False)]


def test_put_events_are_active_only_where_the_runtimes_put_is_wrapped(monkeypatch):
    from langgraph_runtime_inmem import ops

    monkeypatch.setattr(ops.Runs, "put", ops.Runs.__dict__["put"])
    monkeypatch.setattr(ops.Runs, "put", staticmethod(qw.waking_put(ops.Runs.put)))
    assert qw.put_events_active() is True
    monkeypatch.undo()
    monkeypatch.setattr(ops.Runs, "put", staticmethod(
        getattr(ops.Runs.put, "__wrapped__", ops.Runs.put)))
    assert qw.put_events_active() is False


async def test_a_run_that_ends_is_reported_and_one_handed_back_for_a_retry_is_not(monkeypatch):
    import contextlib

    ended: list[str] = []
    monkeypatch.setattr(qw, "_end_listeners", [])
    qw.on_run_end(ended.append)

    @contextlib.asynccontextmanager
    async def enter(run_id, thread_id, loop, resumable):
        try:
            yield "done"
        except RuntimeError:
            pass  # the runtime's enter catches a retry (the run is set pending again)

    wrapped = qw.waking_enter(enter, qw.QueueWake())
    async with wrapped("r1", "t", None, False) as done:
        assert done == "done"
    async with wrapped("r2", "t", None, False):
        raise RuntimeError("retry")  # suppressed by enter, as before the wrapper
    assert ended == ["r1"]
