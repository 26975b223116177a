"""The server's per-user checks without loopback requests where the answer is known in-process.

* A thread create whose body names no thread id gets a new id from langgraph-api, so the
  handler does not ask the server's API whether it exists (``RequestInfo.names_thread_id``).
* The run admission holds a user's lock until the runtime's ``Runs.put`` is done
  (``patches/inmem_run_events``), instead of asking the API until the run shows; without the
  runtime's signal it still asks.
"""

from __future__ import annotations

import asyncio

import pytest

from factdebate.patches import inmem_run_events
from factdebate.server import limits
from factdebate.server.usage import RequestInfo

DEADLINE_S = 10.0


def _create(body: bytes, path: str = "/threads") -> RequestInfo:
    info = RequestInfo(method="POST", path=path)
    info.received(body)
    return info


@pytest.mark.parametrize(("body", "named"), [
    (b"", False),
    (b"{}", False),
    (b'{"metadata": {"note": "thread_id"}}', False),
    (b'{"thread_id": null, "if_exists": "raise"}', False),
    (b'{"thread_id": "0b7f0a2c-4a8e-4d1e-9d3c-1f2e3d4c5b6a", "if_exists": "do_nothing"}', True),
    (b'{"thread\\u005fid": "0b7f0a2c-4a8e-4d1e-9d3c-1f2e3d4c5b6a"}', True),  # escaped key
    (b"not json", True),  # cannot tell: ask
    (b"[1, 2]", True),
])
def test_a_thread_create_says_whether_its_client_named_the_id(body, named):
    assert _create(body).names_thread_id() is named


def test_only_a_thread_create_can_say_it_named_no_id():
    assert RequestInfo(method="POST", path="/threads/search").names_thread_id() is True
    assert RequestInfo(method="GET", path="/threads").names_thread_id() is True
    assert _create(b"{}", path="/threads/").names_thread_id() is False


class NoBusyThreads:
    """The server's own API as the admission reads it: the user has no busy thread. Every call
    is counted (a loopback request)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        outer = self

        class Threads:
            async def search(self, **kwargs):
                outer.calls.append("threads.search")
                return []

        class Runs:
            async def get(self, thread_id, run_id):
                outer.calls.append("runs.get")
                return {"run_id": run_id}

        self.threads, self.runs = Threads(), Runs()


@pytest.fixture
def api(monkeypatch):
    client = NoBusyThreads()
    monkeypatch.setattr(limits, "loopback", lambda: client)
    return client


async def test_the_admission_waits_for_the_runtimes_put_not_the_api(monkeypatch, api):
    monkeypatch.setattr(inmem_run_events, "put_events_active", lambda: True)
    listeners: list = []
    monkeypatch.setattr(inmem_run_events, "_put_listeners", listeners)
    monkeypatch.setattr(inmem_run_events, "_end_listeners", [])
    admission = limits.RunAdmission()
    admission.settle_s = 60.0  # the runtime's signal, not the longest wait, must release
    async with asyncio.timeout(DEADLINE_S):
        assert await admission.admit("alice", "owner", 4, "run-1", "thread-1") is None
        assert listeners == [admission.put_done]
        second = asyncio.create_task(admission.admit("alice", "owner", 4, "run-2", "thread-1"))
        await asyncio.sleep(0.1)
        assert not second.done()  # alice's next run waits until run-1 is stored
        other = await admission.admit("bob", "owner", 4, "run-3", "thread-2")
        assert other is None  # another user never waits
        inmem_run_events._put_done("run-1")  # what the wrapped Runs.put calls when it returns
        assert await second is None
        inmem_run_events._put_done("run-2")
        inmem_run_events._put_done("run-2")  # a late second call is a no-op
        inmem_run_events._put_done("run-3")
    assert "runs.get" not in api.calls  # no loopback request to see the run
    assert api.calls.count("threads.search") == 2  # alice's and bob's first count only


async def test_without_the_runtimes_signal_the_admission_asks_the_api(monkeypatch, api):
    monkeypatch.setattr(inmem_run_events, "put_events_active", lambda: False)
    admission = limits.RunAdmission()
    async with asyncio.timeout(DEADLINE_S):
        assert await admission.admit("alice", "owner", 4, "run-1", "thread-1") is None
        assert await admission.admit("alice", "owner", 4, "run-2", "thread-1") is None
    assert "runs.get" in api.calls


async def test_the_longest_wait_releases_a_run_the_runtime_never_announced(monkeypatch, api):
    monkeypatch.setattr(inmem_run_events, "put_events_active", lambda: True)
    monkeypatch.setattr(inmem_run_events, "_put_listeners", [])
    monkeypatch.setattr(inmem_run_events, "_end_listeners", [])
    admission = limits.RunAdmission()
    admission.settle_s = 0.2
    async with asyncio.timeout(DEADLINE_S):
        assert await admission.admit("alice", "owner", 4, "run-1", "thread-1") is None
        assert await admission.admit("alice", "owner", 4, "run-2", "thread-1") is None


async def test_a_new_thread_is_bounded_without_asking_the_api_for_its_status(monkeypatch):
    """``bound_history`` before a run: a thread with no checkpoint (a new one) has nothing to
    prune or charge; one with history is read first (its status: a busy thread is left alone)."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.memory import InMemorySaver

    from factdebate.server import loopback as loopback_module
    from factdebate.server import usage

    saver = InMemorySaver()
    saver.put({"configurable": {"thread_id": "old", "checkpoint_ns": ""}}, empty_checkpoint(),
              {}, {})
    asked: list[str] = []

    class Threads:
        async def get(self, thread_id):
            asked.append(thread_id)
            return {"thread_id": thread_id, "status": "busy"}

    class Client:
        threads = Threads()

    monkeypatch.setattr(usage, "_saver", lambda saver_=None: saver)
    monkeypatch.setattr(loopback_module, "loopback", lambda: Client())
    await usage.bound_history("new", 100)
    assert asked == []
    await usage.bound_history("old", 100)
    assert asked == ["old"]


class BusyUser:
    """The server's API for one user whose unfinished runs are ``unfinished`` (one busy thread);
    each count through it is recorded."""

    def __init__(self) -> None:
        self.unfinished: list[str] = []
        self.counts = 0
        outer = self

        class Threads:
            async def search(self, **kwargs):
                outer.counts += 1
                return [{"thread_id": "t"}] if outer.unfinished and kwargs["offset"] == 0 else []

        class Runs:
            async def list(self, thread_id, limit, select):
                return [{"run_id": r, "status": "pending"} for r in outer.unfinished][:limit]

        self.threads, self.runs = Threads(), Runs()


@pytest.fixture
def busy(monkeypatch):
    client = BusyUser()
    monkeypatch.setattr(limits, "loopback", lambda: client)
    monkeypatch.setattr(inmem_run_events, "put_events_active", lambda: True)
    monkeypatch.setattr(inmem_run_events, "_put_listeners", [])
    monkeypatch.setattr(inmem_run_events, "_end_listeners", [])
    return client


async def _admit(admission, api, run_id: str, *, stored: bool = True) -> int | None:
    """One run creation as the runtime does it: the handler's admission inside ``Runs.put``,
    then put's end; a stored run is unfinished until the worker ends it."""
    already = await admission.admit("alice", "owner", 3, run_id, "t")
    if already is None and stored:
        api.unfinished.append(run_id)
    inmem_run_events._put_done(run_id, stored)
    return already


def _end(api, run_id: str) -> None:
    api.unfinished.remove(run_id)
    inmem_run_events._run_ended(run_id)  # what the wrapped Runs.enter reports


async def test_below_the_limit_the_admission_counts_from_the_runtimes_signals(busy):
    admission = limits.RunAdmission()
    async with asyncio.timeout(DEADLINE_S):
        assert await _admit(admission, busy, "r1") is None  # first: an exact count
        assert busy.counts == 1
        assert await _admit(admission, busy, "r2") is None
        _end(busy, "r1")
        assert await _admit(admission, busy, "r3") is None
        assert busy.counts == 1  # r2 and r3 were admitted without asking the API
        assert await _admit(admission, busy, "r4") is None  # the bound is 2 of 3: no ask
        assert busy.counts == 1
        assert await _admit(admission, busy, "r5") == 3  # at the limit: counted exactly, refused
        assert busy.counts == 2
        _end(busy, "r2")
        assert await _admit(admission, busy, "r6") is None
        assert sorted(busy.unfinished) == ["r3", "r4", "r6"]


async def test_a_run_whose_put_raised_leaves_the_bound(busy):
    admission = limits.RunAdmission()
    async with asyncio.timeout(DEADLINE_S):
        for run_id in ("r1", "r2"):
            assert await _admit(admission, busy, run_id) is None
        assert await _admit(admission, busy, "refused", stored=False) is None
        assert await _admit(admission, busy, "r3") is None
    assert busy.counts == 1  # "refused" was never counted against alice


async def test_a_run_gone_without_ending_is_found_by_the_exact_count_at_the_limit(busy):
    admission = limits.RunAdmission()
    async with asyncio.timeout(DEADLINE_S):
        for run_id in ("r1", "r2", "r3"):
            assert await _admit(admission, busy, run_id) is None
        busy.unfinished.remove("r2")  # cancelled while queued: the worker never ends it
        assert await _admit(admission, busy, "r4") is None  # bound at 3: exact count says 2
        assert busy.counts == 2
        assert await _admit(admission, busy, "r5") == 3


def test_the_thread_bound_answers_below_the_quota_and_counts_again_at_it():
    """``OwnedBound``: unknown until counted; then each create below the quota is taken without
    a count; at the quota the caller counts exactly (deletes do not lower the bound)."""
    bound = limits.OwnedBound()
    assert bound.take("alice", 3) is False  # never counted in this process: count exactly
    bound.counted("alice", 1)  # the count said 0; this create let through
    assert bound.take("alice", 3) is True
    bound.created("alice")  # a temporary run's thread
    assert bound.take("alice", 3) is False  # 3 of 3: count exactly again
    bound.counted("alice", 2)  # a delete since: the count says 1, this create makes 2
    assert bound.take("alice", 3) is True
    assert bound.take("alice", 3) is False
    bound.created("bob")  # an uncounted user stays unknown
    assert bound.take("bob", 3) is False
