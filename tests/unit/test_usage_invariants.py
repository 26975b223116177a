"""Invariants of the server's byte ledger and history bound (factdebate.server.usage,
factdebate.patches.inmem_history), on real LangGraph objects: one bound per thread across all
namespaces, pruning that reads only its own thread, and charges that all come back."""

from __future__ import annotations

import asyncio
import operator
import random
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from factdebate.patches import inmem_history
from factdebate.server.usage import (
    ByteLedger,
    RequestInfo,
    cron_bytes,
    cron_key,
    history_key,
    missing_checkpoint,
    prune_history,
    run_key,
    thread_key,
)


class Turn(TypedDict):
    text: str
    line: str


class State(TypedDict):
    text: str
    line: str
    verdicts: Annotated[list[str], operator.add]


def _debate(saver: InMemorySaver):
    """Two visible subgraph turns per run (each checkpoints under a namespace of its own, as
    Tool-MAD's debater turns do), then a verdict node."""
    turn = StateGraph(Turn)
    turn.add_node("think", lambda s: {"line": f"think {s['text'][:5]}"})
    turn.add_node("speak", lambda s: {"line": f"speak {s['text'][:5]}"})
    turn.add_edge("__start__", "think")
    turn.add_edge("think", "speak")
    subgraph = turn.compile()
    builder = StateGraph(State)
    builder.add_node("first", subgraph)
    builder.add_node("second", subgraph)
    builder.add_node("verdict", lambda s: {"verdicts": [s["line"]]})
    builder.add_edge("__start__", "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", "verdict")
    return builder.compile(checkpointer=saver)


def _run(graph: Any, thread: str, n: int) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"text": f"run {n} " + "x" * 200}, config)
    return config


class NoWalk(dict):
    """A blobs dictionary that refuses to be walked: pruning one thread must look up its own
    values by key, never iterate the server's."""

    def __iter__(self):  # noqa: D105
        raise AssertionError("the server's blobs were walked")

    def keys(self):  # noqa: D102
        raise AssertionError("the server's blobs were walked")

    def items(self):  # noqa: D102
        raise AssertionError("the server's blobs were walked")

    def values(self):  # noqa: D102
        raise AssertionError("the server's blobs were walked")


def _referenced(saver: InMemorySaver, thread: str) -> set[tuple[Any, ...]]:
    found = set()
    for ns, checkpoints in saver.storage[thread].items():
        for stored in checkpoints.values():
            versions = saver.serde.loads_typed(stored[0])["channel_versions"]
            found.update((thread, ns, ch, v) for ch, v in versions.items())
    return found


def test_one_bound_covers_every_namespace_of_a_thread_whatever_the_number_of_runs():
    saver = InMemorySaver()
    graph = _debate(saver)
    _run(graph, "t", 0)
    one_run, namespaces_of_one = inmem_history.count(saver, "t")
    assert namespaces_of_one >= 3  # the top level and two turn namespaces: the case at hand
    keep = 5
    after: list[int] = []
    for n in range(1, 9):
        prune_history("t", keep - 1, saver)  # before each write, as the server does
        _run(graph, "t", n)
        after.append(inmem_history.count(saver, "t")[0])
    # per-namespace pruning grew by one run's namespaces per run; one bound stays flat
    assert after[-1] <= after[2] and after[-1] <= keep - 1 + one_run, after
    assert inmem_history.prune(saver, "t", keep) > 0
    total, namespaces = inmem_history.count(saver, "t")
    assert total <= keep and namespaces <= 3, (total, namespaces)
    state = graph.get_state({"configurable": {"thread_id": "t"}})
    assert state.values["text"].startswith("run 8") and state.values["line"] == "speak run 8"
    assert len(state.values["verdicts"]) == 9  # the channel values stay whole
    _run(graph, "t", 9)  # and the thread runs on from its pruned history
    assert graph.get_state({"configurable": {"thread_id": "t"}}).values["text"].startswith("run 9")


def test_pruning_reads_only_its_thread_and_leaves_no_orphan_values():
    saver = InMemorySaver()
    graph = _debate(saver)
    for n in range(4):
        _run(graph, "t", n)
        _run(graph, "other", n)
    other_storage = {ns: dict(c) for ns, c in saver.storage["other"].items()}
    other_blobs = {k: v for k, v in saver.blobs.items() if k[0] == "other"}
    saver.blobs = NoWalk(saver.blobs)
    assert inmem_history.prune(saver, "t", 3) > 0
    assert inmem_history.stored_bytes(saver, "t") > 0  # measuring reads by key too
    saver.blobs = dict(dict.items(saver.blobs))
    mine = {k for k in saver.blobs if k[0] == "t"}
    assert mine == _referenced(saver, "t")  # every value kept is used, every value used is kept
    assert {k: v for k, v in saver.blobs.items() if k[0] == "other"} == other_blobs
    assert {ns: dict(c) for ns, c in saver.storage["other"].items()} == other_storage
    assert not any(k[0] == "t" and k[2] not in saver.storage["t"].get(k[1], {})
                   for k in saver.writes)


def test_the_newest_checkpoint_stays_whatever_the_bound():
    saver = InMemorySaver()
    graph = _debate(saver)
    for n in range(3):
        _run(graph, "t", n)
    newest = max(saver.storage["t"][""])
    inmem_history.prune(saver, "t", 1)
    assert list(saver.storage["t"][""]) == [newest]
    assert graph.get_state({"configurable": {"thread_id": "t"}}).values["text"].startswith("run 2")


def test_a_fork_from_a_pruned_checkpoint_is_named_in_the_refusal():
    saver = InMemorySaver()
    graph = _debate(saver)
    _run(graph, "t", 0)
    oldest = min(saver.storage["t"][""])
    for n in range(1, 4):
        _run(graph, "t", n)
    newest = max(saver.storage["t"][""])
    assert missing_checkpoint("t", oldest, saver=saver) is None  # still there
    inmem_history.prune(saver, "t", 4)
    detail = missing_checkpoint("t", oldest, keep=4, saver=saver)
    assert detail is not None and oldest in detail and "FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD" in detail
    assert missing_checkpoint("t", newest, saver=saver) is None
    assert missing_checkpoint("t", None, saver=saver) is None  # no fork: nothing to check


async def test_after_everything_is_deleted_the_charge_is_zero(monkeypatch):
    """Random writes to threads, their history, crons, kept runs, assistants and store items,
    then every object deleted (a thread's crons, history and kept runs go with it): 0 bytes."""

    async def nothing_stored(identity: str) -> tuple[dict[str, int], dict[str, set[str]]]:
        return {}, {}

    monkeypatch.setattr("factdebate.server.usage.measure_user", nothing_stored)
    for seed in range(20):
        rng = random.Random(seed)
        ledger = ByteLedger(limit=10**9)
        threads = [thread_key(f"t{n}") for n in range(rng.randint(1, 6))]
        standalone: list[str] = []
        for step in range(rng.randint(5, 60)):
            thread = rng.choice(threads)
            kind = rng.choice(("write", "history", "cron", "run", "assistant", "store"))
            size = rng.randint(1, 5000)
            if kind == "write":
                await ledger.charge("u", thread, size)
            elif kind == "history":
                await ledger.charge("u", history_key(thread), size, mode="set")
                ledger.link("u", thread, history_key(thread))
            elif kind in ("cron", "run"):
                key = (cron_key if kind == "cron" else run_key)(f"{kind}{step}")
                await ledger.charge("u", key, size, mode="new")
                if kind == "run" or rng.random() < 0.5:  # a cron without a thread stands alone
                    ledger.link("u", thread, key)
                else:
                    standalone.append(key)
            else:
                key = f"{kind}:{step}"
                await ledger.charge("u", key, size, mode="set" if kind == "store" else "new")
                standalone.append(key)
        assert ledger.total("u") > 0
        for key in rng.sample(threads + standalone, len(threads) + len(standalone)):
            ledger.free("u", key)
        assert ledger.total("u") == 0 and ledger.book("u") == {}, (seed, ledger.book("u"))


def test_a_cron_is_charged_its_metadata_once():
    metadata = {"owner": "u", "note": "n" * 1000}
    payload = {"assistant_id": "cot", "input": {"claim": "c"}, "metadata": metadata}
    assert cron_bytes(payload, metadata) < 1500  # not 2 x 1000
    assert cron_bytes({"assistant_id": "cot"}, metadata) > 1000  # metadata outside: counted


def test_only_a_state_update_keeps_its_body():
    update = RequestInfo("POST", "/threads/abc/state")
    for chunk in (b'{"values": {}, ', b'"checkpoint_id": "x"}'):
        update.received(chunk)
    assert update.read == 36 and update.json_body() == {"values": {}, "checkpoint_id": "x"}
    other = RequestInfo("POST", "/threads/abc/runs/wait")
    other.received(b"{}")
    assert other.read == 2 and other.body is None and other.json_body() is None
    assert RequestInfo("DELETE", "/threads/abc").deleted_thread() == "abc"
    assert RequestInfo("DELETE", "/threads/abc/runs/r").deleted_thread() is None


@pytest.mark.parametrize("keep", [0, -1])
def test_no_bound_keeps_everything(keep: int):
    saver = InMemorySaver()
    graph = _debate(saver)
    for n in range(3):
        _run(graph, "t", n)
    before = inmem_history.count(saver, "t")
    assert inmem_history.prune(saver, "t", keep) == 0 and inmem_history.count(saver, "t") == before


class Rows:
    """A thread list deleted by an index found before an await, as langgraph-runtime-inmem's
    ``Threads.delete`` does (its auth handler is the await)."""

    rows: list[str] = []

    @staticmethod
    async def delete(thread_id: str) -> str:
        index = Rows.rows.index(thread_id)
        await asyncio.sleep(0.01)
        return Rows.rows.pop(index)

    @staticmethod
    async def patch(thread_id: str) -> str:
        index = Rows.rows.index(thread_id)
        await asyncio.sleep(0.01)
        Rows.rows[index] = thread_id.upper()
        return Rows.rows[index]


async def test_deletes_one_at_a_time_remove_the_thread_they_name(monkeypatch):
    from factdebate.patches import inmem_threads

    monkeypatch.setattr(Rows, "delete", Rows.delete)  # restored after the test
    monkeypatch.setattr(Rows, "patch", Rows.patch)
    Rows.rows = list("abcdef")
    assert await asyncio.gather(Rows.delete("b"), Rows.delete("e")) == ["b", "f"]  # the bug
    assert Rows.rows == list("acde")  # "e" lives on, "f" - never deleted - is gone
    inmem_threads.wrap(Rows)
    inmem_threads.wrap(Rows)  # idempotent: one lock, not two
    Rows.rows = list("abcdef")
    assert await asyncio.gather(Rows.delete("b"), Rows.delete("e"), Rows.patch("f")) == [
        "b", "e", "F"]
    assert Rows.rows == list("acdF")


class Store:
    """A thread delete as langgraph-runtime-inmem's: checkpoints and pending writes go, the
    channel values stay; an unknown thread is an error and deletes nothing."""

    saver = InMemorySaver()

    @staticmethod
    async def delete(conn: Any, thread_id: str, ctx: Any = None) -> str:
        if thread_id not in Store.saver.storage:
            raise LookupError(thread_id)
        del Store.saver.storage[thread_id]
        for key in [k for k in Store.saver.writes if k[0] == thread_id]:
            del Store.saver.writes[key]
        return thread_id

    @staticmethod
    async def patch(thread_id: str) -> str:
        return thread_id


async def test_a_deleted_thread_leaves_no_channel_values_behind():
    from factdebate.patches import inmem_threads

    graph = _debate(Store.saver)
    for n in range(3):
        _run(graph, "gone", n)
        _run(graph, "kept", n)
    kept = {k: v for k, v in Store.saver.blobs.items() if k[0] == "kept"}
    assert any(k[0] == "gone" for k in Store.saver.blobs)
    inmem_threads.wrap(Store, lambda: Store.saver)
    with pytest.raises(LookupError):
        await Store.delete(None, "never-there")
    assert await Store.delete(None, "gone") == "gone"
    assert not any(k[0] == "gone" for k in Store.saver.blobs)  # upstream alone leaves them all
    assert {k: v for k, v in Store.saver.blobs.items() if k[0] == "kept"} == kept
    state = graph.get_state({"configurable": {"thread_id": "kept"}})
    assert state.values["text"].startswith("run 2")
