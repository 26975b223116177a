"""graphs/turns.py: a turn subgraph as one node, no inner checkpoints, LangGraph's own loop."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Annotated, Any
from uuid import UUID

import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from typing_extensions import TypedDict

from factdebate.core.ledger import UsageTracker
from factdebate.core.state import add_ledger
from factdebate.graphs import turns


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


async def test_turn_state_and_output_match_the_subgraph_as_a_plain_node():
    out: dict[str, Any] = {}
    for label, node in (("turn_node", turns.turn_node(build_turn(), "turn", turns="lean")),
                        ("subgraph", build_turn().compile(name="turn"))):
        SEEN.clear()
        graph = build_parent(node).compile()  # no parent checkpointer: the plain node is legal
        out[label] = (await graph.ainvoke({}, context=Ctx("run")),
                      sorted(SEEN, key=lambda s: (s["state"]["agent"], s["node"])))
    result, seen = out["turn_node"]
    assert out["turn_node"] == out["subgraph"]
    assert sorted(result["items"]) == sorted(["p", "in", "a-1", "a-2", "in", "b-1", "b-2"])
    assert result["ledger"] == {"llm_calls": 2 * (1 + 2 + 1), "prompt_tokens": 0,
                                "completion_tokens": 0}
    a = [s for s in seen if s["state"]["agent"] == "a"]
    assert [s["node"] for s in a] == ["first", "second", "third"]
    assert a[0]["state"] == {"agent": "a", "items": ["in"], "ledger": {}}  # "extra" dropped
    assert a[0]["ctx"] == "run"  # the parent's runtime context
    assert a[1]["state"] == {"agent": "a", "items": ["in", "a-1"], "note": "one",
                             "ledger": {"llm_calls": 1}}
    assert a[1]["langgraph_node"] == "second"
    assert a[2]["inner"] == "X"


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_no_checkpoint_is_written_inside_a_turn(durability):
    async def run(node: Any) -> list[str]:
        saver = InMemorySaver()
        graph = build_parent(node).compile(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": durability}}
        result = await graph.ainvoke({}, config, context=Ctx(), durability=durability)
        assert len(result["items"]) == 7
        return [c.config["configurable"]["checkpoint_ns"] for c in saver.list(config)]

    ours = await run(turns.turn_node(build_turn(), "turn", turns="lean"))
    assert ours and set(ours) == {""}  # parent supersteps only
    if durability != "exit":  # (with "exit" only the final state is saved, in any case)
        inherited = await run(build_turn().compile(name="turn"))  # a plain subgraph node
        assert len(inherited) > len(ours) and any(ns.startswith("turn:") for ns in inherited)


async def test_the_durability_workaround_is_still_needed():
    """LangGraph 1.2.22 fails a checkpointer=False subgraph node under durability="sync".

    When this test fails, LangGraph has fixed it: drop ``turn_node``'s wrapper and add
    ``subgraph.compile(checkpointer=False)`` as the node itself (graphs/turns.py docstring).
    """
    graph = build_parent(build_turn().compile(checkpointer=False)).compile(
        checkpointer=InMemorySaver())
    with pytest.raises(AttributeError, match="_put_checkpoint_fut"):
        await graph.ainvoke({}, {"configurable": {"thread_id": "t"}}, context=Ctx(),
                            durability="sync")


async def test_inner_nodes_are_child_runs_of_the_turn_with_langgraph_metadata():
    rec = Recorder()
    graph = build_parent(turns.turn_node(build_turn(), "turn", turns="lean")).compile()
    await graph.ainvoke({}, {"callbacks": [rec], "tags": ["outer"]}, context=Ctx())
    paths = {rec.path(rid) for rid in rec.runs}
    for node in ("first", "second", "third"):
        assert f"LangGraph/turn/turn/{node}" in paths
    assert "LangGraph/turn/turn/third/chat" in paths  # model call nests under its node
    nodes = [r for r in rec.runs.values() if r["name"] in ("first", "second", "third")]
    assert len(nodes) == 6
    for run in nodes:
        assert run["meta"]["langgraph_node"] == run["name"]
        assert re.fullmatch(rf"turn:[0-9a-f-]+\|{run['name']}:[0-9a-f-]+",
                            run["meta"]["langgraph_checkpoint_ns"])
        assert "outer" in run["tags"]
    chats = [r for r in rec.runs.values() if r["name"] == "chat"]
    assert chats and all(c["meta"]["langgraph_node"] == "third" and c["meta"]["fd_role"] == "t"
                         for c in chats)


@pytest.mark.parametrize("build", ["loop", "inline"])
async def test_a_node_exception_propagates_unchanged_and_stops_the_turn(build: str):
    SEEN.clear()
    g = StateGraph(Parent, context_schema=Ctx)
    subgraph = build_turn() if build == "loop" else straight_turn()  # (defined below)
    g.add_node("turn", turns.turn_node(subgraph, "turn", turns="lean"))
    g.add_conditional_edges(START, lambda s: [Send("turn", {"agent": "boom"})], ["turn"])
    with pytest.raises(Boom, match="second failed"):
        await g.compile().ainvoke({}, context=Ctx())
    assert [s["node"] for s in SEEN] == ["first", "second"]  # third never ran


@pytest.mark.parametrize("modes", [["updates"], ["tasks"], ["updates", "values", "debug"]])
async def test_inner_nodes_stream_under_the_turn_namespace(modes):
    graph = build_parent(turns.turn_node(build_turn(), "turn", turns="lean")).compile()
    chunks = [c async for c in graph.astream({}, context=Ctx(), subgraphs=True,
                                             stream_mode=modes)]
    inner = [c for c in chunks if c[0]]
    assert inner and {c[0][0].split(":")[0] for c in inner} == {"turn"}
    assert {c[1] for c in inner} == set(modes)
    if modes == ["updates"]:
        assert {n for _, _, data in inner for n in data} == {"first", "second", "third"}


async def test_messages_of_inner_model_calls_stream_with_subgraphs():
    graph = build_parent(turns.turn_node(build_turn(), "turn", turns="lean")).compile()
    messages = [c async for c in graph.astream({}, context=Ctx(), subgraphs=True,
                                               stream_mode="messages")]
    assert [m for ns, (m, meta) in messages if meta["langgraph_node"] == "third"]


class Small(TypedDict, total=False):
    a: str
    xs: Annotated[list[str], operator.add]
    n: Annotated[int, operator.add]


class SmallOut(TypedDict):
    xs: list[str]
    n: int


@pytest.mark.parametrize(("one", "two", "given", "expected"), [
    (lambda s: None, lambda s: None, {"a": "x"}, None),  # no output key ever written
    (lambda s: {"xs": ["1"]}, lambda s: {"xs": Overwrite(["only"])}, {"xs": ["in"]},
     {"xs": ["only"], "n": 0}),
    (lambda s: {"n": 2}, lambda s: {"n": 3}, {"n": 1}, {"xs": [], "n": 6}),
], ids=["none", "overwrite", "int-reducer"])
async def test_a_turn_returns_what_its_compiled_subgraph_returns(one, two, given, expected):
    g = StateGraph(Small, output_schema=SmallOut)
    g.add_node("one", one)
    g.add_node("two", two)
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    g.add_edge("two", END)
    fn = turns.turn_node(g, "t", turns="lean")
    assert await fn(dict(given), {}) == expected
    assert await fn.compiled.ainvoke(dict(given)) == expected


# -- inline turns: a StraightTurn nobody watches runs its steps in the turn node -----------------


async def a_first(state: TurnState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    SEEN.append({"node": "first", "state": dict(state), "ctx": runtime.context.tag})
    return {"items": [f"{state['agent']}-1"], "ledger": {"llm_calls": 1}, "note": "one",
            "not_a_state_key": "dropped"}


async def a_second(state: TurnState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    SEEN.append({"node": "second", "state": dict(state)})
    if state["agent"] == "boom":
        raise Boom("second failed")
    return {"items": [f"{state['agent']}-2"], "ledger": {"llm_calls": 2}, "note": "two"}


async def a_third(state: TurnState) -> dict[str, Any]:  # no runtime: the state alone
    tracker = UsageTracker()
    model = FakeListChatModel(responses=["fine"])
    await model.bind().ainvoke("hi", config={"callbacks": [tracker],
                                             "metadata": {"fd_role": "t"}})
    SEEN.append({"node": "third", "state": dict(state)})
    return {"ledger": tracker.delta(), "note": "three"}


def straight_turn() -> turns.StraightTurn:
    return turns.StraightTurn(TurnState, [("first", a_first), ("second", a_second),
                                          ("third", a_third)],
                              context_schema=Ctx, output_schema=TurnOutput)


class InlineCount:
    """Counts the turns run inline (``InlineSteps.run``) in a test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = turns.InlineSteps.run

        async def counted(steps: turns.InlineSteps, state: Any, runtime: Any) -> Any:
            self.calls += 1
            return await real(steps, state, runtime)
        monkeypatch.setattr(turns.InlineSteps, "run", counted)


def test_every_framework_turn_is_a_straight_turn_that_can_run_inline():
    from factdebate.graphs.baselines.multi_agent_debate import build_debate_turn as du_turn
    from factdebate.graphs.baselines.speculative_rag import build_draft_branch
    from factdebate.graphs.madke import build_debater_turn
    from factdebate.graphs.tool_mad import build_debate_turn

    for build in (build_debate_turn, build_debater_turn, du_turn, build_draft_branch):
        assert turns.InlineSteps.of(build()) is not None, build.__module__


def test_a_turn_that_is_not_a_straight_line_of_async_steps_runs_in_langgraphs_loop():
    assert turns.InlineSteps.of(build_turn()) is None  # a plain StateGraph (sync step, config)
    synced = turns.StraightTurn(TurnState, [("first", a_first), ("second", second)])
    assert turns.InlineSteps.of(synced) is None  # a sync step taking config
    extended = straight_turn()
    extended.add_node("fourth", a_third)
    extended.add_edge("third", "fourth")
    assert turns.InlineSteps.of(extended) is None  # no longer the line it was built as
    branched = straight_turn()
    branched.add_conditional_edges("first", lambda s: "second", ["second"])
    assert turns.InlineSteps.of(branched) is None


async def test_an_unwatched_lean_and_visible_turn_runs_inline_with_the_subgraphs_result(
        monkeypatch: pytest.MonkeyPatch):
    count = InlineCount(monkeypatch)
    out: dict[str, Any] = {}
    for label, node in (("lean", turns.turn_node(straight_turn(), "turn", turns="lean")),
                        ("visible", turns.turn_node(straight_turn(), "turn", turns="visible")),
                        ("subgraph", straight_turn().compile(name="turn"))):
        SEEN.clear()
        before = count.calls
        graph = build_parent(node).compile(checkpointer=InMemorySaver())
        result = await graph.ainvoke({}, {"configurable": {"thread_id": label}},
                                     context=Ctx("run"))
        out[label] = (result, sorted(SEEN, key=lambda s: (s["state"]["agent"], s["node"])))
        assert count.calls - before == (0 if label == "subgraph" else 2)  # both turns inline
    assert out["lean"] == out["subgraph"] == out["visible"]
    result, seen = out["lean"]
    assert sorted(result["items"]) == sorted(["p", "in", "a-1", "a-2", "in", "b-1", "b-2"])
    assert result["ledger"] == {"llm_calls": 2 * (1 + 2 + 1), "prompt_tokens": 0,
                                "completion_tokens": 0}
    a = [s for s in seen if s["state"]["agent"] == "a"]
    assert a[0] == {"node": "first", "state": {"agent": "a", "items": ["in"], "ledger": {}},
                    "ctx": "run"}  # "extra" dropped, the reducer's default there, the run's ctx
    assert a[1]["state"] == {"agent": "a", "items": ["in", "a-1"], "note": "one",
                             "ledger": {"llm_calls": 1}}  # "not_a_state_key" dropped


async def test_a_watched_turn_runs_in_langgraphs_loop(monkeypatch: pytest.MonkeyPatch):
    count = InlineCount(monkeypatch)
    for turns_variant in ("lean", "visible"):
        graph = build_parent(turns.turn_node(straight_turn(), "turn", turns=turns_variant)).compile()
        rec = Recorder()  # a caller's callback handler: traces see every inner node
        await graph.ainvoke({}, {"callbacks": [rec]}, context=Ctx())
        assert {rec.path(r) for r in rec.runs} >= {f"LangGraph/turn/turn/{n}"
                                                  for n in ("first", "second", "third")}
        # streaming subgraphs (LangGraph gives the turn the parent's stream only then): every
        # inner node's update under the turn's namespace - this fails if LangGraph renames the
        # key graphs/turns.py reads (SUBGRAPH_STREAM_KEY)
        chunks = [c async for c in graph.astream({}, context=Ctx(), subgraphs=True,
                                                 stream_mode="updates")]
        assert {n for ns, data in chunks if ns for n in data} == {"first", "second", "third"}
    assert count.calls == 0
    # the model-call ledger's own handlers watch nothing: a turn with only them runs inline
    graph = build_parent(turns.turn_node(straight_turn(), "turn", turns="lean")).compile()
    await graph.ainvoke({}, {"callbacks": [UsageTracker()]}, context=Ctx())
    assert count.calls == 2


async def _none(state: Small) -> None:
    return None


async def _xs(state: Small) -> dict[str, Any]:
    return {"xs": ["1"], "unknown": 1}


async def _overwrite(state: Small) -> dict[str, Any]:
    return {"xs": Overwrite(["only"])}


async def _n2(state: Small) -> dict[str, Any]:
    return {"n": 2}


async def _n3_and_a(state: Small) -> dict[str, Any]:
    return {"n": 3, "a": state.get("a", "") + "!"}


async def _a_only(state: Small) -> dict[str, Any]:
    return {"a": "changed"}


@pytest.mark.parametrize(("steps", "given"), [
    ((_none, _none), {"a": "x"}),  # no output key ever written: None
    ((_a_only, _none), {"a": "x", "elsewhere": 2}),  # only a non-output key written: None
    ((_xs, _overwrite), {"xs": ["in"]}),
    ((_n2, _n3_and_a), {"n": 1}),
    ((_none, _n2), {}),
    ((_xs, _n3_and_a), {"a": "x", "xs": ["in"], "n": 5}),
], ids=["none", "non-output-only", "overwrite", "int-reducer", "empty-input", "all-kinds"])
async def test_inline_steps_return_what_the_compiled_subgraph_returns(steps, given):
    from langgraph.runtime import Runtime as LangGraphRuntime

    turn = turns.StraightTurn(Small, [(f"s{i}", fn) for i, fn in enumerate(steps)],
                              output_schema=SmallOut)
    inline = turns.InlineSteps.of(turn)
    assert inline is not None
    expected = await turn.compile(checkpointer=False).ainvoke(dict(given))
    assert await inline.run(dict(given), LangGraphRuntime(context=None)) == expected
