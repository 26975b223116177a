"""graphs/turns.py: linear turn subgraphs run node by node, as the compiled subgraph would."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Annotated, Any
from uuid import UUID

import factdebate.graphs.turns as turns
import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import InvalidUpdateError
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from typing_extensions import TypedDict

from factdebate.core.ledger import UsageTracker
from factdebate.core.state import add_ledger


@dataclass
class Ctx:
    tag: str = "ctx"


class TurnState(TypedDict, total=False):
    agent: str
    note: str
    seen: list[dict[str, Any]]
    items: Annotated[list[str], operator.add]
    ledger: Annotated[dict[str, Any], add_ledger]


class TurnOutput(TypedDict):
    items: list[str]
    ledger: dict[str, Any]


class Parent(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    ledger: Annotated[dict[str, Any], add_ledger]


class Boom(RuntimeError):
    pass


SEEN: list[dict[str, Any]] = []


async def first(state: TurnState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    SEEN.append({"node": "first", "state": dict(state), "ctx": runtime.context.tag})
    return {"items": [f"{state['agent']}-1"], "ledger": {"llm_calls": 1}, "note": "one",
            "not_a_state_key": "dropped"}


def second(state: TurnState, config: RunnableConfig) -> dict[str, Any]:  # sync, takes config
    SEEN.append({"node": "second", "state": dict(state),
                 "langgraph_node": config["metadata"]["langgraph_node"]})
    if state["agent"] == "boom":
        raise Boom("second failed")
    return {"items": [f"{state['agent']}-2"], "ledger": {"llm_calls": 2}, "note": "two"}


async def third(state: TurnState) -> dict[str, Any]:
    tracker = UsageTracker()
    model = FakeListChatModel(responses=["fine"])
    # as nodes/llm.py calls models (through a binding, own callbacks, no parent config): the
    # binding merges in the node's config from LangChain's context var, so the call nests
    await model.bind().ainvoke("hi", config={"callbacks": [tracker],
                                             "metadata": {"fd_role": "t"}})
    inner = await RunnableLambda(lambda x: x.upper(), name="inner_lambda").ainvoke("x")
    SEEN.append({"node": "third", "state": dict(state), "inner": inner})
    return {"ledger": tracker.delta(), "note": "three"}


def build_turn() -> StateGraph:
    g = StateGraph(TurnState, context_schema=Ctx, output_schema=TurnOutput)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_node("third", third)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", "third")
    g.add_edge("third", END)
    return g


def build_parent(turn_fn: Any) -> StateGraph:
    g = StateGraph(Parent, context_schema=Ctx)
    g.add_node("start", lambda state: {"items": ["p"]})
    g.add_node("turn", turn_fn)
    g.add_edge(START, "start")
    g.add_conditional_edges(
        "start", lambda s: [Send("turn", {"agent": a, "items": ["in"], "extra": 1})
                            for a in ("a", "b")], ["turn"])
    g.add_edge("turn", END)
    return g


def compiled_turn(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The same turn forced onto the compiled-subgraph path (what ``turn_node`` did before)."""
    with monkeypatch.context() as m:
        m.setattr(turns, "_plan", lambda graph, compiled: "forced by the test")
        fn = turns.turn_node(build_turn(), "turn")
    assert not fn.linear
    return fn


class Recorder(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.runs: dict[UUID, dict[str, Any]] = {}

    async def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None,
                             metadata=None, **kwargs):
        self.runs[run_id] = {"name": kwargs.get("name"), "parent": parent_run_id,
                             "meta": dict(metadata or {}), "tags": kwargs.get("tags")}

    async def on_chain_error(self, error, *, run_id, **kwargs):
        self.runs[run_id]["error"] = error

    async def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None,
                                  metadata=None, **kwargs):
        self.runs[run_id] = {"name": "chat", "parent": parent_run_id, "meta": dict(metadata or {})}

    def path(self, run_id: UUID) -> str:
        names = []
        while run_id in self.runs:
            names.append(str(self.runs[run_id]["name"]))
            run_id = self.runs[run_id]["parent"]
        return "/".join(reversed(names))


def test_linear_subgraphs_take_the_fast_path_and_others_fall_back():
    assert turns.turn_node(build_turn(), "turn").linear
    g = build_turn()
    g.add_conditional_edges("third", lambda s: END, [END])
    fn = turns.turn_node(g, "turn")
    assert not fn.linear and fn.fallback_reason == "conditional edges"
    g = build_turn()
    g.add_edge("first", "third")  # fan-out: first -> second and first -> third
    assert "several outgoing edges" in turns.turn_node(g, "turn").fallback_reason
    g = build_turn()
    g.nodes["second"].retry_policy = object()  # what add_node(..., retry_policy=...) sets
    assert "policy" in turns.turn_node(g, "turn").fallback_reason


async def test_state_merge_and_output_filtering_match_the_compiled_subgraph(monkeypatch):
    fast = turns.turn_node(build_turn(), "turn")
    out: dict[str, Any] = {}
    for label, fn in (("fast", fast), ("compiled", compiled_turn(monkeypatch))):
        SEEN.clear()
        graph = build_parent(fn).compile(checkpointer=InMemorySaver())
        out[label] = (await graph.ainvoke({}, {"configurable": {"thread_id": label}},
                                          context=Ctx("run")),
                      sorted(SEEN, key=lambda s: (s["state"]["agent"], s["node"])))
    result, seen = out["fast"]
    assert out["fast"] == out["compiled"]
    # parent reducers saw each turn's output: input "in" + both nodes' items, summed ledgers
    assert sorted(result["items"]) == sorted(["p", "in", "a-1", "a-2", "in", "b-1", "b-2"])
    assert result["ledger"] == {"llm_calls": 2 * (1 + 2 + 1), "prompt_tokens": 0,
                                "completion_tokens": 0}
    a = [s for s in seen if s["state"]["agent"] == "a"]
    assert [s["node"] for s in a] == ["first", "second", "third"]
    assert a[0]["state"] == {"agent": "a", "items": ["in"], "ledger": {}}  # "extra" dropped
    assert a[0]["ctx"] == "run"  # the parent's runtime context
    # reducer keys accumulate, plain keys overwrite, unknown return keys are dropped
    assert a[1]["state"] == {"agent": "a", "items": ["in", "a-1"], "note": "one",
                             "ledger": {"llm_calls": 1}}
    assert a[1]["langgraph_node"] == "second"
    assert a[2]["state"]["items"] == ["in", "a-1", "a-2"] and a[2]["state"]["note"] == "two"
    assert a[2]["inner"] == "X"


async def test_turn_returns_only_output_schema_keys():
    fn = turns.turn_node(build_turn(), "turn")
    seen: list[Any] = []

    async def capture(state, config):
        seen.append(await fn(state, config))
        return seen[-1]

    graph = build_parent(capture).compile()
    await graph.ainvoke({}, context=Ctx())
    assert [sorted(r) for r in seen] == [["items", "ledger"]] * 2
    assert seen[0]["items"] == ["in", f"{seen[0]['items'][1][0]}-1", f"{seen[0]['items'][1][0]}-2"]


async def test_inner_nodes_are_child_runs_of_the_turn_with_langgraph_metadata():
    rec = Recorder()
    graph = build_parent(turns.turn_node(build_turn(), "turn")).compile()
    await graph.ainvoke({}, {"callbacks": [rec], "tags": ["outer"]}, context=Ctx())
    paths = {rec.path(rid) for rid in rec.runs}
    for node in ("first", "second", "third"):
        assert f"LangGraph/turn/{node}" in paths
    assert "LangGraph/turn/third/chat" in paths  # model call nests under its node
    assert "LangGraph/turn/third/inner_lambda" in paths
    nodes = [r for r in rec.runs.values() if r["name"] in ("first", "second", "third")]
    assert len(nodes) == 6
    for run in nodes:
        meta = run["meta"]
        assert meta["langgraph_node"] == run["name"]
        assert re.fullmatch(rf"turn:[0-9a-f-]+\|{run['name']}:[0-9a-f-]+",
                            meta["langgraph_checkpoint_ns"])
        step = ["first", "second", "third"].index(run["name"]) + 1
        assert meta["langgraph_step"] == step and f"graph:step:{step}" in run["tags"]
        assert "outer" in run["tags"]
    chats = [r for r in rec.runs.values() if r["name"] == "chat"]
    assert chats and all(c["meta"]["langgraph_node"] == "third" and c["meta"]["fd_role"] == "t"
                         for c in chats)


async def test_a_node_exception_propagates_unchanged_and_stops_the_turn():
    rec = Recorder()
    SEEN.clear()
    fn = turns.turn_node(build_turn(), "turn")
    g = StateGraph(Parent, context_schema=Ctx)
    g.add_node("turn", fn)
    g.add_conditional_edges(START, lambda s: [Send("turn", {"agent": "boom"})], ["turn"])
    graph = g.compile()
    with pytest.raises(Boom, match="second failed") as caught:
        await graph.ainvoke({}, {"callbacks": [rec]}, context=Ctx())
    assert [s["node"] for s in SEEN] == ["first", "second"]  # third never ran
    failed = [r for r in rec.runs.values() if r["name"] == "second"]
    assert failed and failed[0]["error"] is caught.value


def _normalise(chunks: list[Any]) -> list[Any]:
    ids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    return sorted(ids.sub("<id>", repr(c)) for c in chunks)


async def test_subgraph_stream_chunks_match_the_compiled_subgraph(monkeypatch):
    chunks: dict[str, list[Any]] = {}
    for label, fn in (("fast", turns.turn_node(build_turn(), "turn")),
                      ("compiled", compiled_turn(monkeypatch))):
        graph = build_parent(fn).compile()
        chunks[label] = [c async for c in graph.astream(
            {}, context=Ctx(), subgraphs=True, stream_mode=["updates", "values"])]
    assert _normalise(chunks["fast"]) == _normalise(chunks["compiled"])
    inner = [c for c in chunks["fast"] if c[0]]
    assert {c[0][0].split(":")[0] for c in inner} == {"turn"}
    assert {n for ns, mode, data in inner if mode == "updates" for n in data} == \
        {"first", "second", "third"}


async def test_streaming_task_events_runs_the_turn_compiled(monkeypatch):
    fn = turns.turn_node(build_turn(), "turn")
    calls: list[str] = []
    real = turns._LinearTurn.run

    async def spy(self, state, config):
        calls.append("linear")
        return await real(self, state, config)

    monkeypatch.setattr(turns._LinearTurn, "run", spy)
    graph = build_parent(fn).compile()
    tasks = [c async for c in graph.astream({}, context=Ctx(), subgraphs=True,
                                            stream_mode=["tasks"])]
    assert not calls
    assert {c[2]["name"] for c in tasks if c[0] and "result" in c[2]} == \
        {"first", "second", "third"}
    await graph.ainvoke({}, context=Ctx())
    assert calls == ["linear", "linear"]


class Small(TypedDict, total=False):
    a: str
    xs: Annotated[list[str], operator.add]
    n: Annotated[int, operator.add]


class SmallOut(TypedDict):
    xs: list[str]
    n: int


@pytest.mark.parametrize(("one", "two", "given", "expected"), [
    (lambda s: None, lambda s: None, {"a": "x"}, None),  # no output key ever written
    (lambda s: {}, lambda s: {"a": "y"}, {"a": "x"}, None),
    (lambda s: {"xs": ["1"]}, lambda s: {"xs": Overwrite(["only"])}, {"xs": ["in"]},
     {"xs": ["only"], "n": 0}),
    (lambda s: {"n": 2}, lambda s: {"n": 3}, {"n": 1}, {"xs": [], "n": 6}),
    (lambda s: {"a": "q"}, lambda s: {"xs": [s["a"]]}, {}, {"xs": ["q"], "n": 0}),
], ids=["none", "no-output-writes", "overwrite", "int-reducer", "empty-input"])
async def test_edge_cases_return_what_the_compiled_subgraph_returns(one, two, given, expected):
    g = StateGraph(Small, output_schema=SmallOut)
    g.add_node("one", one)
    g.add_node("two", two)
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    g.add_edge("two", END)
    fn = turns.turn_node(g, "t")
    assert fn.linear
    assert await fn(dict(given), {}) == expected
    assert await fn.compiled.ainvoke(dict(given)) == expected


async def test_a_non_dict_return_is_rejected_like_stategraph_does():
    g = StateGraph(Small)
    g.add_node("one", lambda s: "text")
    g.add_edge(START, "one")
    g.add_edge("one", END)
    with pytest.raises(InvalidUpdateError, match="Expected dict"):
        await turns.turn_node(g, "t")({"a": "x"}, {})
