"""The byte ledger and the history pruning of factdebate.server.usage, on real LangGraph objects."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from factdebate.core.errors import ConfigError
from factdebate.server.limits import load_limits
from factdebate.server.usage import ByteLedger, QuotaExceeded, prune_history


class State(TypedDict):
    text: str
    seen: Annotated[list[str], operator.add]


def _graph(saver: InMemorySaver):
    builder = StateGraph(State)
    builder.add_node("echo", lambda s: {"seen": [s["text"]]})
    builder.add_edge("__start__", "echo")
    return builder.compile(checkpointer=saver)


def test_pruning_keeps_the_newest_checkpoints_and_a_readable_state():
    saver = InMemorySaver()
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t1"}}
    for n in range(8):
        graph.invoke({"text": f"v{n}" + "x" * 1000}, config)
    other = {"configurable": {"thread_id": "t2"}}
    graph.invoke({"text": "other"}, other)
    before = len(list(saver.list(config)))
    blobs_before = sum(1 for k in saver.blobs if k[0] == "t1")
    assert prune_history("t1", 3, saver) == before - 3
    assert len(list(saver.list(config))) == 3
    assert sum(1 for k in saver.blobs if k[0] == "t1") < blobs_before  # old values are gone
    state = graph.get_state(config)
    assert state.values["text"].startswith("v7") and len(state.values["seen"]) == 8
    graph.invoke({"text": "v8"}, config)  # the thread runs on from its pruned history
    assert len(graph.get_state(config).values["seen"]) == 9
    assert len(list(saver.list(other))) > 0 and graph.get_state(other).values["text"] == "other"


def test_pruning_stays_off_when_the_checkpointer_s_layout_gate_is_closed(monkeypatch):
    """The pruning reads InMemorySaver's storage layout (patches/inmem_history.py): with another
    langgraph-checkpoint version it removes nothing."""
    from factdebate import patches

    saver = InMemorySaver()
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t1"}}
    for n in range(4):
        graph.invoke({"text": f"v{n}"}, config)
    before = len(list(saver.list(config)))
    monkeypatch.setitem(patches.PATCHES, "inmem_history", patches.Patch(
        "factdebate.patches.inmem_history", {"langgraph-checkpoint": ("9.9.9",)}))
    monkeypatch.setattr(patches, "_state", {})
    assert prune_history("t1", 1, saver) == 0
    assert len(list(saver.list(config))) == before


async def test_the_ledger_refuses_past_the_limit_and_frees_on_delete(monkeypatch):
    async def nothing_stored(identity: str) -> tuple[dict[str, int], dict[str, set[str]]]:
        return {}, {}

    monkeypatch.setattr("factdebate.server.usage.measure_user", nothing_stored)
    ledger = ByteLedger(limit=100)
    assert await ledger.charge("alice", "thread:1", 60, mode="new") == 60
    assert await ledger.charge("alice", "thread:1", 60, mode="new") == 0  # exists: no charge
    with pytest.raises(QuotaExceeded, match="FACTDEBATE_MAX_BYTES_PER_USER=100"):
        await ledger.charge("alice", "thread:2", 41, mode="new")
    assert await ledger.charge("bob", "thread:3", 100, mode="new") == 100  # per user
    assert await ledger.charge("alice", "store:k", 40, mode="set") == 40
    assert await ledger.charge("alice", "store:k", 10, mode="set") == -30  # a put replaces
    ledger.free("alice", "thread:1")
    assert ledger.total("alice") == 10
    assert await ledger.charge("alice", "thread:2", 90, mode="add") == 90


def test_malformed_byte_limits_stop_the_start_naming_the_variable():
    for name in ("FACTDEBATE_MAX_BYTES_PER_USER", "FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD",
                 "FACTDEBATE_STORE_TTL_MINUTES", "FACTDEBATE_STORE_SWEEP_MINUTES"):
        with pytest.raises(ConfigError, match=name):
            load_limits({name: "-1"})
    limits = load_limits({})
    assert limits.bytes_per_user == 100 * 1_048_576 and limits.checkpoints_per_thread == 100
    assert limits.store_ttl_minutes == 43_200
