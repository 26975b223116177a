"""graphs/exported.py on a small graph: the sync bridge, inner breakpoints, flat messages."""

from __future__ import annotations

import asyncio
import contextvars
import operator
import threading
from typing import Annotated, Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict

from factdebate.core.errors import ConfigError
from factdebate.graphs.exported import DebateGraph, new_builder
from factdebate.graphs.turns import turn_node

CALLER = contextvars.ContextVar("caller", default="unset")


class State(TypedDict, total=False):
    agent: str
    items: Annotated[list[str], operator.add]
    turns: Annotated[list[dict[str, Any]], operator.add]


class TurnOut(TypedDict):
    items: list[str]
    turns: list[dict[str, Any]]


class Boom(RuntimeError):
    pass


async def look(state: State) -> dict[str, Any]:
    return {"items": [f"{state['agent']}:look:{CALLER.get()}"]}


async def speak(state: State) -> dict[str, Any]:
    if state["agent"] == "boom":
        raise Boom("speak failed")
    reply = await FakeListChatModel(responses=[f"{state['agent']} says"]).ainvoke("hi")
    return {"items": [reply.content], "turns": [{"agent": state["agent"], "label": "x"}]}


def build(turns: str = "visible") -> StateGraph:
    turn = StateGraph(State, output_schema=TurnOut)
    turn.add_node("look", look)
    turn.add_node("speak", speak)
    turn.add_edge(START, "look")
    turn.add_edge("look", "speak")
    turn.add_edge("speak", END)
    g = new_builder(turns, State)  # type: ignore[arg-type]
    g.add_node("turn", turn_node(turn, "turn", turns=turns))  # type: ignore[arg-type]
    g.add_node("done", lambda s: {"items": ["done"]})
    g.add_conditional_edges(START, lambda s: [Send("turn", {"agent": a}) for a in
                                              (s.get("agent") or "a,b").split(",")], ["turn"])
    g.add_edge("turn", "done")
    g.add_edge("done", END)
    return g


def test_the_variants_differ_only_in_what_is_drawn_and_checkpointed():
    visible, lean = build().compile(), build("lean").compile()
    assert isinstance(visible, DebateGraph) and not isinstance(lean, DebateGraph)
    assert set(visible.get_graph(xray=True).nodes) == {
        "__start__", "turn:look", "turn:speak", "done", "__end__"}
    assert set(lean.get_graph(xray=True).nodes) == {"__start__", "turn", "done", "__end__"}
    assert sorted(visible.invoke({})["items"]) == sorted(asyncio.run(lean.ainvoke({}))["items"])
    with pytest.raises(ConfigError, match="unknown turns variant 'wide'"):
        build("wide")


def test_sync_invoke_copies_the_callers_context_variables():
    token = CALLER.set("caller-value")
    try:
        out = build().compile().invoke({})
    finally:
        CALLER.reset(token)
    assert "a:look:caller-value" in out["items"] and "b:look:caller-value" in out["items"]


def test_an_exception_reaches_the_sync_caller_unchanged():
    with pytest.raises(Boom, match="speak failed"):
        build().compile().invoke({"agent": "boom"})


def test_closing_a_sync_stream_early_cancels_the_run():
    cancelled = threading.Event()

    async def wait_forever(state: State) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    g = new_builder("visible", State)
    g.add_node("first", lambda s: {"items": ["first"]})
    g.add_node("wait", wait_forever)
    g.add_edge(START, "first")
    g.add_edge("first", "wait")
    g.add_edge("wait", END)
    chunks = g.compile().stream({}, stream_mode="updates")
    assert next(chunks) == {"first": {"items": ["first"]}}
    chunks.close()  # returns once the run's thread has finished
    assert cancelled.is_set()


def test_batch_runs_every_input():
    outs = build().compile().batch([{"agent": "a"}, {"agent": "b,c"}])
    assert [sorted(o["items"]) for o in outs] == [
        sorted(["a:look:unset", "a says", "done"]),
        sorted(["b:look:unset", "b says", "c:look:unset", "c says", "done"])]


@pytest.mark.parametrize("names", [["speak"], ["turn:speak"]])
def test_an_inner_breakpoint_pauses_every_parallel_turn_and_resumes(names: list[str]):
    graph = build().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({}, config, interrupt_before=names)
    state = graph.get_state(config, subgraphs=True)
    assert state.next == ("turn", "turn")
    assert [t.state.next for t in state.tasks] == [("speak",), ("speak",)]
    out = graph.invoke(None, config)
    assert sorted(out["items"]) == sorted(["a:look:unset", "a says", "b:look:unset", "b says",
                                           "done"])


def test_unknown_names_are_refused_and_star_is_kept():
    graph = build().compile(checkpointer=InMemorySaver())
    with pytest.raises(ConfigError, match=r"interrupt_after names node\(s\) .*'spek'"):
        graph.invoke({}, {"configurable": {"thread_id": "u"}}, interrupt_after=["spek"])
    config = {"configurable": {"thread_id": "star"}}
    graph.invoke({}, config, interrupt_before="*")
    assert graph.get_state(config).next == ("turn", "turn")


async def test_messages_inside_turns_stream_without_subgraphs_in_the_asked_shape():
    graph = build().compile()
    single = [c async for c in graph.astream({}, stream_mode="messages")]
    tokens: dict[str, str] = {}  # token by token, as the model streams them
    for message, _meta in single:
        tokens[message.id] = tokens.get(message.id, "") + message.content
    assert sorted(tokens.values()) == ["a says", "b says"] and len(single) > 2
    assert {meta["langgraph_node"] for _, meta in single} == {"speak"}
    both = [c async for c in graph.astream({}, stream_mode=["messages", "updates"])]
    assert [next(iter(d)) for mode, d in both if mode == "updates"] == ["turn", "turn", "done"]
    v2 = [c async for c in graph.astream({}, stream_mode=["messages"], version="v2")]
    assert {c["type"] for c in v2} == {"messages"} and len(v2) == len(single)
    plain = build("lean").compile()  # LangGraph's own behaviour, for comparison
    assert [c async for c in plain.astream({}, stream_mode="messages")] == []


def test_the_sync_bridge_ending_on_its_own_never_touches_its_closing_loop():
    """A run that ends (done or raising) is not cancelled: its loop may be closing in the bridge
    thread while the caller leaves, and cancelling then raised 'Event loop is closed' in place of
    the run's own outcome (about 1 in 300 runs on 2 cores before)."""
    from factdebate.graphs.exported import _iterate_in_thread

    class Boom(Exception):
        pass

    async def raising():
        yield 1
        raise Boom("the run's own error")

    async def finishing():
        yield 1

    for _ in range(1500):
        with pytest.raises(Boom):
            list(_iterate_in_thread(raising))
        assert list(_iterate_in_thread(finishing)) == [1]


def test_closing_the_sync_bridge_early_cancels_the_run():
    import asyncio

    from factdebate.graphs.exported import _iterate_in_thread

    cancelled = []

    async def endless():
        try:
            while True:
                yield 1
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    items = _iterate_in_thread(endless)
    assert next(items) == 1
    items.close()
    assert cancelled == [True]


def test_the_context_schema_is_langgraphs_built_once_and_handed_out_as_a_copy():
    """langgraph-api asks every run for the graph's context JSON schema: the exported graphs
    build it once per Context class, equal to LangGraph's own, and a caller that changes its
    copy changes nobody else's."""
    from langgraph.graph.state import CompiledStateGraph

    from factdebate.graphs.tool_mad import graph

    first = graph.get_context_jsonschema()
    assert first == CompiledStateGraph.get_context_jsonschema(graph)
    assert "inner_checkpoints" in first["properties"]
    first["properties"].clear()
    assert graph.get_context_jsonschema()["properties"], "a caller's change leaked into the kept schema"


async def test_the_warm_heap_is_settled_once_a_run_has_streamed_to_its_end(monkeypatch):  # noqa: ANN001
    """The server's and Studio's runs go through ``DebateGraph.astream``: the first one that
    streams to its end freezes the warm heap (core/heap.py), in either stream shape; a run that
    fails does not."""
    from factdebate.graphs import exported

    settled: list[str] = []
    monkeypatch.setattr(exported, "settle_after_first_claim", lambda: settled.append("settled"))
    graph = build().compile()
    stream = graph.astream({}, stream_mode="updates")
    assert [c async for c in stream] and settled == ["settled"]
    assert [c async for c in graph.astream({}, stream_mode="messages")] and len(settled) == 2
    with pytest.raises(Boom):
        _ = [c async for c in graph.astream({"agent": "boom"}, stream_mode="updates")]
    assert len(settled) == 2
