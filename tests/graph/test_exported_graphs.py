"""The graphs langgraph.json exports, as a LangGraph user runs them (graphs/exported.py, turns.py).

Every node drawn by ``get_graph(xray=True)`` (inside turns too), breakpoints on nodes inside turns
that pause, show and take edited state and resume, unknown node names refused before anything
runs, sync ``invoke``/``stream``/``batch`` on all 18 graphs (also from inside a running event loop),
model messages of debaters, scorers and judge without ``subgraphs=True``, progress events on the
``custom`` stream. The CLI/eval engine keeps the lean turns (one node, no inner checkpoints).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from factdebate.core.errors import ConfigError
from factdebate.core.labels import LABEL_SETS
from factdebate.graphs.exported import DebateGraph
from factdebate.graphs.registry import FRAMEWORKS, build_framework
from factdebate.graphs.tool_mad import build_tool_mad
from factdebate.nodes.progress import EVENTS
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.testing.scenarios import answer_role
from tests.integration.servers import tiny_index

REPO = Path(__file__).resolve().parents[2]
EXPORTED = json.loads((REPO / "langgraph.json").read_text())["graphs"]
CLAIM = "The Eiffel Tower is in Paris."
TURN = ("debate_turn:formulate_query", "debate_turn:retrieve", "debate_turn:respond",
        "debate_turn:score")
DESIGN_NODES = {  # what each framework's docstring says it runs, as get_graph(xray=True) draws it
    "tool_mad": {"prepare", "open_round", *TURN, "check_consensus", "judge", "cite_verdict", "review"},
    "mermaid": {"decompose", "recall_memory", "execute_step", "call_tool", "force_answer",
                "update_memory", "cite_verdict", "review"},
    "madke": {"prepare", "gather_knowledge", "open_round", "debater_turn:select_knowledge",
              "debater_turn:speak", "judge_consensus", "summarize", "cite_verdict", "review"},
    "madam_rag": {"prepare", "gather_documents", "open_round", "answer_from_document",
                  "aggregate", "check_convergence", "cite_verdict", "review"},
    "check_text": {"split_text", "extract_claims", "collect_claims", "verify_claim", "review", "aggregate"},
    "standard": {"prepare", "answer", "cite_verdict", "review"},
    "cot": {"prepare", "answer", "cite_verdict", "review"},
    "no_rag": {"prepare", "answer", "cite_verdict", "review"},
    "rag": {"prepare", "gather_evidence", "answer", "cite_verdict", "review"},
    "concat_rag": {"prepare", "gather_evidence", "answer", "cite_verdict", "review"},
    "self_consistency": {"prepare", "sample", "vote", "cite_verdict", "review"},
    "react": {"prepare", "react_step", "react_tool", "answer", "cite_verdict", "review"},
    "mad": {"prepare", "open_round", "affirmative", "negative", "moderate", "judge",
            "cite_verdict", "review"},
    "multi_agent_debate": {"prepare", "open_round", "debate_turn:respond", "vote", "cite_verdict", "review"},
    "self_reflection": {"prepare", "gather_evidence", "answer", "critique", "refine",
                        "cite_verdict", "review"},
    "astute_rag": {"prepare", "gather_evidence", "generate_passages", "consolidate", "answer",
                   "cite_verdict", "review"},
    "speculative_rag": {"prepare", "gather_evidence", "draft_branch:draft",
                        "draft_branch:verify_draft", "select_draft", "aggregate_drafts",
                        "cite_verdict", "review"},
    "self_ask": {"prepare", "follow_up", "answer_follow_up", "answer", "cite_verdict", "review"},
}


def graph_module(graph_id: str) -> str:
    """The module langgraph.json names for ``graph_id``."""
    path = EXPORTED[graph_id].removeprefix("./").removesuffix(".py:graph")
    return "factdebate." + path.replace("/", ".")


def exported(graph_id: str) -> Any:
    """The module-level ``graph`` langgraph.json points at for ``graph_id``."""
    return importlib.import_module(graph_module(graph_id)).graph


def drawn(graph: Any) -> set[str]:
    """Every node ``get_graph(xray=True)`` draws but the graph's own start and end (a turn's
    ``turn:__end__`` included: a subgraph's end drawn as a node is a drawing fault)."""
    return {n for n in graph.get_graph(xray=True).nodes if n not in ("__start__", "__end__")}


@pytest.fixture(scope="module")
def index_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real 3-passage index as the default index (``FACTDEBATE_INDEX_DIR``)."""
    index = tiny_index(tmp_path_factory.mktemp("exported"))
    before = os.environ.get("FACTDEBATE_INDEX_DIR")
    os.environ["FACTDEBATE_INDEX_DIR"] = str(index)
    yield index
    if before is None:
        os.environ.pop("FACTDEBATE_INDEX_DIR", None)
    else:
        os.environ["FACTDEBATE_INDEX_DIR"] = before


DOCUMENTS = [{"id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower stands in Paris."}]


def input_for(graph_id: str, claim: str = CLAIM) -> dict[str, Any]:
    if graph_id == "check_text":
        return {"text": f"{claim} It was completed in 1889."}
    if graph_id == "concat_rag":  # reads the item's own documents, by design
        return {"claim": claim, "documents": DOCUMENTS}
    return {"claim": claim}


def reached_verdict(graph_id: str, out: dict[str, Any]) -> bool:
    return out.get("label") in LABEL_SETS.get("fever").labels or bool(out.get("answers"))


def test_langgraph_json_exports_every_framework_with_a_design_card_entry():
    assert set(EXPORTED) == set(FRAMEWORKS.names()) == set(DESIGN_NODES)


@pytest.mark.parametrize("graph_id", sorted(EXPORTED))
def test_xray_draws_every_node_the_graph_runs(graph_id: str):
    from factdebate.graphs import finish

    graph = exported(graph_id)
    assert isinstance(graph, DebateGraph)
    assert drawn(graph) == DESIGN_NODES[graph_id]
    # each drawn node (a turn's node and its turn) is one its module's docstring names; the
    # shared last nodes, cite_verdict and review, are named by graphs/finish.py, which adds them
    doc = importlib.import_module(graph_module(graph_id)).__doc__ or ""
    unnamed = [n for n in drawn(graph) for part in n.split(":")
               if part not in doc and not (part in ("cite_verdict", "review") and part in finish.__doc__)]
    assert not unnamed, unnamed
    assert drawn(build_framework(graph_id).compile()) == DESIGN_NODES[graph_id]  # Python default


@pytest.mark.parametrize("graph_id", sorted(EXPORTED))
def test_every_graph_on_a_bare_claim_runs_or_names_the_input_it_needs(graph_id: str,
                                                                     index_env: Path):
    """What Studio's form sends by default: a claim and nothing else. The graph reaches a result,
    or stops with one line naming the input its schema marks as required and describes."""
    from factdebate.core.errors import InputError

    graph = exported(graph_id)
    bare = {"text": CLAIM} if graph_id == "check_text" else {"claim": CLAIM}
    schema = graph.get_input_jsonschema()
    try:
        out = graph.invoke(bare, context={"debater_model": "scripted:agree"})
    except InputError as exc:
        message = str(exc)
        needed = [k for k in schema.get("required", []) if k not in bare]
        assert needed and all(k in message for k in needed), (message, needed)
        assert "\n" not in message
        assert all("Required" in schema["properties"][k]["description"] for k in needed)
        return
    assert reached_verdict(graph_id, out), (graph_id, out.get("label"), out.get("flags"))
    if out.get("label") is None:  # a list of answers: the schema says so where the claim goes
        assert "answers" in schema["properties"]["claim"]["description"]


@pytest.mark.parametrize("names", [["respond"], ["debate_turn:respond"], "respond"])
def test_breakpoints_given_to_compile_pause_inside_both_turns(names: Any):
    graph = build_tool_mad().compile(checkpointer=InMemorySaver(), interrupt_before=names)
    config = {"configurable": {"thread_id": "compiled"}}
    ctx = static("scripted:agree")
    out = graph.invoke({"claim": CLAIM}, config, context=ctx)
    assert not out.get("stopped_by") and not out["turns"]  # paused in round 1
    state = graph.get_state(config, subgraphs=True)
    assert state.next == ("debate_turn", "debate_turn")
    assert [t.state.next for t in state.tasks] == [("respond",), ("respond",)]
    assert {t.state.values["agent"] for t in state.tasks} == {"rag", "search"}
    out = graph.invoke(None, config, context=ctx)  # resumed: no second pause at that checkpoint
    assert out["stopped_by"] == "consensus" and graph.get_state(config).next == ()


def test_compiled_inner_and_top_level_breakpoints_survive_a_copy_and_yield_to_a_runs_own():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver(),
                                     interrupt_before=["judge", "debate_turn:score"],
                                     interrupt_after=["retrieve"])
    assert graph.interrupt_before_nodes == ["judge"]
    copied = graph.copy({"name": "copied"})  # langgraph-api copies the graph it serves
    assert isinstance(copied, DebateGraph) and copied.inner_breakpoints == graph.inner_breakpoints
    ctx = static("scripted:agree")
    config = {"configurable": {"thread_id": "after"}}
    copied.invoke({"claim": CLAIM}, config, context=ctx)
    assert [t.state.next for t in copied.get_state(config, subgraphs=True).tasks] == [
        ("respond",), ("respond",)]  # interrupt_after retrieve
    own = {"configurable": {"thread_id": "own"}}
    copied.invoke({"claim": CLAIM}, own, context=ctx, interrupt_before=["respond"],
                  interrupt_after=["score"])  # the run's own replace the compiled ones
    assert [t.state.next for t in copied.get_state(own, subgraphs=True).tasks] == [
        ("respond",), ("respond",)]


@pytest.mark.parametrize("kind", ["interrupt_before", "interrupt_after"])
def test_compile_refuses_an_unknown_breakpoint_naming_the_nodes(kind: str):
    with pytest.raises(ConfigError) as refused:
        build_tool_mad().compile(checkpointer=InMemorySaver(), name="Tool-MAD",
                                 **{kind: ["nosuch", "judge"]})
    message = str(refused.value)
    assert f"{kind} names node(s) Tool-MAD does not have: 'nosuch'" in message
    assert "debate_turn:respond" in message and "check_consensus" in message
    assert isinstance(refused.value, ValueError)  # what LangGraph's own compile raises


@pytest.mark.parametrize("graph_id", ["tool_mad", "madke", "multi_agent_debate", "speculative_rag"])
def test_the_cli_engine_compiles_lean_turns(graph_id: str):
    from factdebate.run.claims import compiled_graph

    lean = compiled_graph(graph_id, InMemorySaver(), None)
    assert not isinstance(lean, DebateGraph)
    turn = next(n.split(":")[0] for n in DESIGN_NODES[graph_id] if ":" in n)
    assert turn in drawn(lean) and not any(":" in n for n in drawn(lean))


@pytest.mark.parametrize("graph_id", sorted(EXPORTED))
def test_sync_invoke_stream_and_batch_reach_a_verdict(graph_id: str, index_env: Path):
    graph = exported(graph_id)  # no checkpointer, as the module exports it
    context = {"debater_model": "scripted:agree"}
    out = graph.invoke(input_for(graph_id), context=context)
    assert reached_verdict(graph_id, out), (graph_id, out.get("label"), out.get("flags"))
    updates = list(graph.stream(input_for(graph_id), context=context, stream_mode="updates"))
    assert updates and list(updates[-1]) == ["review" if graph_id != "check_text"
                                             else "aggregate"]
    if graph_id != "check_text":  # review off: the verdict passes the review step unchanged
        assert list(updates[-2]) == ["cite_verdict"] and updates[-1]["review"] is None
    outs = graph.batch([input_for(graph_id), input_for(graph_id, "Berlin is in France.")],
                       context=context)
    assert len(outs) == 2 and all(reached_verdict(graph_id, o) for o in outs)


@pytest.mark.parametrize("graph_id", ["tool_mad", "mermaid", "check_text"])
async def test_sync_invoke_inside_a_running_event_loop(graph_id: str, index_env: Path):
    asyncio.get_running_loop()  # as in a notebook cell: a loop runs in this thread
    out = exported(graph_id).invoke(input_for(graph_id),
                                    context={"debater_model": "scripted:agree"})
    assert reached_verdict(graph_id, out)


def static(spec: str, **overrides: Any) -> ToolMadContext:
    return ToolMadContext(debater_model=spec, rag_backend="static", search_backend="static",
                          **overrides)


@pytest.mark.parametrize("names", [["respond"], ["debate_turn:respond"], "respond"])
def test_a_breakpoint_inside_the_turns_pauses_both_turns_with_their_evidence(names: Any):
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "bp"}}
    out = graph.invoke({"claim": CLAIM}, config, context=static("scripted:agree"),
                       interrupt_before=names)
    assert not out.get("stopped_by") and not out["turns"]  # paused in round 1
    state = graph.get_state(config, subgraphs=True)
    assert state.next == ("debate_turn", "debate_turn")
    turns = [task.state for task in state.tasks]
    assert {t.values["agent"] for t in turns} == {"rag", "search"}
    assert all(t.next == ("respond",) and t.values["evidence"] and not t.values["answer"]
               for t in turns)
    assert {e["title"] for t in turns for e in t.values["evidence"]} >= {"Eiffel Tower"}


def test_an_edited_turn_state_resumes_to_a_verdict_that_used_the_edit():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "edit"}}
    ctx = static("scripted:agree")
    graph.invoke({"claim": CLAIM}, config, context=ctx, interrupt_before=["respond"])
    rag = next(t.state for t in graph.get_state(config, subgraphs=True).tasks
               if t.state.values["agent"] == "rag")
    edited = dict(rag.values["evidence"][0], id="edited", title="Edited passage")
    graph.update_state(rag.config, {"evidence": [edited]})
    out = graph.invoke(None, config, context=ctx)
    assert out["label"] == "SUPPORTS" and out["stopped_by"] == "consensus"
    rag_turn = next(t for t in out["turns"] if t["agent"] == "rag")
    assert [e["id"] for e in rag_turn["evidence"]] == ["edited"]
    assert graph.get_state(config).next == ()


async def test_interrupt_after_an_inner_node_resumes_with_a_command():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "after"}}
    ctx = static("scripted:disagree", max_rounds=2)
    await graph.ainvoke({"claim": CLAIM}, config, context=ctx,
                        interrupt_after=["debate_turn:retrieve"])
    paused = await graph.aget_state(config, subgraphs=True)
    assert [t.state.next for t in paused.tasks] == [("respond",), ("respond",)]
    out = await graph.ainvoke(Command(resume=True), config, context=ctx)
    assert out["stopped_by"] == "judge" and len(out["turns"]) == 4  # 2 rounds, not paused again


def test_a_top_level_breakpoint_still_pauses_at_the_turn_node():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "top"}}
    ctx = static("scripted:agree")
    graph.invoke({"claim": CLAIM}, config, context=ctx,
                 interrupt_before=["debate_turn", "debate_turn:score"])
    assert graph.get_state(config).next == ("debate_turn", "debate_turn")
    assert graph.get_state(config, subgraphs=True).tasks[0].state.values == {}  # not started
    graph.invoke(None, config, context=ctx, interrupt_before=["debate_turn:score"])
    state = graph.get_state(config, subgraphs=True)
    assert [t.state.next for t in state.tasks] == [("score",), ("score",)]


@pytest.mark.parametrize("kind", ["interrupt_before", "interrupt_after"])
def test_an_unknown_node_name_is_refused_before_anything_runs(kind: str, scenario):
    calls: list[Any] = []
    spec = scenario(lambda call: calls.append(call) or answer_role(call, debater_label=0))
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "unknown"}}
    with pytest.raises(ConfigError) as refused:
        graph.invoke({"claim": CLAIM}, config, context=static(spec), **{kind: ["respnd", "judge"]})
    message = str(refused.value)
    assert f"{kind} names node(s)" in message and "'respnd'" in message and "'judge'" not in (
        message.split("its nodes")[0])
    assert "debate_turn:respond" in message and "check_consensus" in message
    assert calls == [] and graph.get_state(config).values == {}


async def test_messages_of_debaters_scorers_and_judge_stream_without_subgraphs():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    chunks = [c async for c in graph.astream(
        {"claim": CLAIM}, {"configurable": {"thread_id": "m"}},
        context=static("scripted:disagree", max_rounds=1), stream_mode="messages")]
    named = {(meta["langgraph_node"], meta.get("fd_agent") or "") for _, meta in chunks}
    assert {("respond", "rag"), ("respond", "search"), ("formulate_query", "rag"),
            ("score", "rag"), ("judge", "")} <= named
    assert all(isinstance(c, tuple) and len(c) == 2 for c in chunks)  # as LangGraph shapes them


async def test_other_modes_keep_their_top_level_shape_when_messages_are_flattened():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    chunks = [c async for c in graph.astream(
        {"claim": CLAIM}, {"configurable": {"thread_id": "mu"}},
        context=static("scripted:agree"), stream_mode=["updates", "messages"])]
    updates = [data for mode, data in chunks if mode == "updates"]
    assert [next(iter(u)) for u in updates] == [
        "prepare", "open_round", "debate_turn", "debate_turn", "check_consensus", "cite_verdict",
        "review"]
    assert any(mode == "messages" and meta["langgraph_node"] == "respond"
               for mode, (msg, meta) in ((m, d) for m, d in chunks if m == "messages"))


def test_progress_events_on_the_custom_stream():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    events = list(graph.stream({"claim": CLAIM}, {"configurable": {"thread_id": "c"}},
                               context=static("scripted:disagree", max_rounds=2),
                               stream_mode="custom"))
    assert [e["event"] for e in events] == [
        "round_opened", "turn_finished", "turn_finished", "scores", "stop_decision",
        "round_opened", "turn_finished", "turn_finished", "scores", "stop_decision", "verdict"]
    assert {e["event"] for e in events} == set(EVENTS)
    turn = next(e for e in events if e["event"] == "turn_finished")
    assert turn["turn"] == "debate_turn" and turn["round"] == 1 and turn["agent"] in ("rag",
                                                                                     "search")
    assert turn["label"] in ("SUPPORTS", "REFUTES") and turn["cited"]
    scores = next(e for e in events if e["event"] == "scores")
    assert set(scores["scores"]) == {"rag", "search"}
    assert [e["stop"] for e in events if e["event"] == "stop_decision"] == [False, True]
    verdict = events[-1]
    assert verdict["stopped_by"] == "judge" and verdict["label"] in ("SUPPORTS", "REFUTES")
    json.dumps(events)  # plain JSON, as the server sends it


def test_resuming_with_the_same_breakpoints_pauses_once_per_round_as_studio_does():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "studio"}}
    ctx = static("scripted:disagree", max_rounds=2, scoring_mode="consistency")
    graph.invoke({"claim": CLAIM}, config, context=ctx, interrupt_before=["respond"])
    rounds = []
    while graph.get_state(config).next:
        state = graph.get_state(config, subgraphs=True)
        assert [t.state.next for t in state.tasks] == [("respond",), ("respond",)]
        rounds.append(state.values["round"])
        graph.invoke(None, config, context=ctx, interrupt_before=["respond"])
    assert rounds == [1, 2] and graph.get_state(config).values["stopped_by"] == "judge"


@pytest.mark.parametrize(("graph_id", "expected"), [
    ("madke", ["round_opened", "turn_finished", "stop_decision", "verdict"]),
    ("madam_rag", ["round_opened", "stop_decision", "verdict"]),
    ("multi_agent_debate", ["round_opened", "turn_finished", "verdict"]),
])
def test_progress_events_of_the_other_debates(graph_id: str, expected: list[str]):
    from tests.graph.test_scripted_every_framework import DOCUMENTS as ITEM_DOCUMENTS
    from tests.graph.test_scripted_every_framework import context_for

    graph = build_framework(graph_id).compile(checkpointer=InMemorySaver())
    events = list(graph.stream({"claim": CLAIM, "documents": ITEM_DOCUMENTS},
                               {"configurable": {"thread_id": graph_id}},
                               context=context_for(graph_id, "scripted:agree"),
                               stream_mode="custom"))
    assert [e for e in dict.fromkeys(e["event"] for e in events)] == expected
    assert events[-1]["event"] == "verdict" and events[-1]["stopped_by"]
    stops = [e for e in events if e["event"] == "stop_decision"]
    assert not stops or (stops[-1]["stop"] and stops[-1]["by"] == events[-1]["stopped_by"])
