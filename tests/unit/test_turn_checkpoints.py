"""graphs/turns.py + graphs/exported.py: a visible turn writes inner checkpoints only when needed.

A fresh run without a breakpoint inside a turn runs the turn without a checkpointer (the lean
variant's checkpoints, the same verdict); ``inner_checkpoints=True``, a breakpoint inside a turn
or a resume (input ``None``/``Command``) run the checkpointing turn. ``get_graph(xray=True)``
still draws the turn's nodes, and the policy's reserved-key check (assistants' and crons'
``configurable``) refuses the run-internal key; a run whose ``context`` carries it gets what
``inner_checkpoints`` gives (langgraph-api copies ``context`` into ``configurable``).
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.graphs.exported import TURN_CHECKPOINTS_KEY
from factdebate.graphs.tool_mad import build_tool_mad
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.server.policy import Refused, check_reserved_configurable
from factdebate.testing.scenarios import answer_role

CLAIM = "The Eiffel Tower is in Paris."
TURN = ("debate_turn:formulate_query", "debate_turn:retrieve", "debate_turn:respond",
        "debate_turn:score")


def static(spec: str, **overrides: Any) -> ToolMadContext:
    """A Tool-MAD Context on the static retriever (no index), as tests/graph does."""
    return ToolMadContext(debater_model=spec, rag_backend="static", search_backend="static",
                          **overrides)


def namespaces(saver: InMemorySaver, thread: str) -> list[str]:
    """The ``checkpoint_ns`` of every checkpoint of ``thread``, every namespace (in order)."""
    return [c.config["configurable"]["checkpoint_ns"]
            for c in saver.list({"configurable": {"thread_id": thread}})]


async def run_claim(turns: str, thread: str, ctx: ToolMadContext) -> tuple[dict[str, Any],
                                                                            InMemorySaver]:
    saver = InMemorySaver()
    graph = build_tool_mad(turns=turns).compile(checkpointer=saver)
    out = await graph.ainvoke({"claim": CLAIM}, {"configurable": {"thread_id": thread}},
                              context=ctx)
    return out, saver


@pytest.mark.parametrize("spec", ["scripted:agree", "scripted:disagree"])
async def test_a_fresh_visible_run_writes_the_lean_variants_checkpoints_and_verdict(spec: str):
    visible, saver = await run_claim("visible", "fresh", static(spec, max_rounds=2))
    lean, lean_saver = await run_claim("lean", "fresh", static(spec, max_rounds=2))
    assert visible["turns"] and visible["label"] in ("SUPPORTS", "REFUTES")
    assert (visible["label"], visible["stopped_by"], len(visible["turns"])) == (
        lean["label"], lean["stopped_by"], len(lean["turns"]))
    ours, theirs = namespaces(saver, "fresh"), namespaces(lean_saver, "fresh")
    assert ours and set(ours) == {""}  # the parent's supersteps only, in every namespace
    assert not [c for c in saver.list(None) if c.config["configurable"]["checkpoint_ns"]]
    assert len(ours) == len(theirs)


async def test_inner_checkpoints_true_writes_checkpoints_in_every_turn():
    ctx = static("scripted:disagree", max_rounds=2, inner_checkpoints=True)
    out, saver = await run_claim("visible", "inner", ctx)
    plain, plain_saver = await run_claim("visible", "plain",
                                         static("scripted:disagree", max_rounds=2))
    assert out["label"] == plain["label"] and out["stopped_by"] == plain["stopped_by"] == "judge"
    ns = namespaces(saver, "inner")
    inner = [n for n in ns if n]
    assert inner and all(n.startswith("debate_turn:") for n in inner)
    assert len(set(inner)) == 4  # 2 agents x 2 rounds, each turn in its own namespace
    assert ns.count("") == namespaces(plain_saver, "plain").count("")  # the same supersteps
    # the run-internal key stays out of checkpoint metadata (the "__" prefix)
    assert not [c for c in saver.list(None) if TURN_CHECKPOINTS_KEY in (c.metadata or {})]


async def test_an_inner_breakpoint_pauses_and_a_bare_resume_continues_inside_the_turn(scenario):
    calls: list[tuple[str, str]] = []

    def responder(call: Any) -> Any:
        calls.append((call.role, call.agent))
        return answer_role(call, debater_label=0)

    saver = InMemorySaver()
    graph = build_tool_mad().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "bp"}}
    ctx = static(scenario(responder), max_rounds=1)
    out = await graph.ainvoke({"claim": CLAIM}, config, context=ctx,
                              interrupt_before=["debate_turn:respond"])
    assert not out.get("stopped_by") and not out["turns"]  # paused in round 1
    state = await graph.aget_state(config, subgraphs=True)
    assert state.next == ("debate_turn", "debate_turn")
    assert [t.state.next for t in state.tasks] == [("respond",), ("respond",)]
    assert {t.state.values["agent"] for t in state.tasks} == {"rag", "search"}
    assert sorted(calls) == [("query", "rag"), ("query", "search")]  # nothing else ran yet
    paused_calls = len(calls)
    paused_inner = [n for n in namespaces(saver, "bp") if n]
    assert len(set(paused_inner)) == 2

    out = await graph.ainvoke(None, config, context=ctx)  # no breakpoints on the resume
    assert out["label"] == "SUPPORTS" and out["stopped_by"] == "consensus"
    assert len(out["turns"]) == 2 and (await graph.aget_state(config)).next == ()
    # continued at respond: no turn was redone from formulate_query (a lean turn would be)
    resumed = calls[paused_calls:]
    assert "query" not in {role for role, _ in resumed}
    assert sorted(c for c in resumed if c[0] == "debater") == [("debater", "rag"),
                                                               ("debater", "search")]
    resumed_inner = [n for n in namespaces(saver, "bp") if n]
    assert set(resumed_inner) == set(paused_inner)  # the same two turns, continued
    assert len(resumed_inner) > len(paused_inner)  # with checkpoints after respond


def test_xray_still_draws_the_nodes_inside_the_turn():
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    drawn = set(graph.get_graph(xray=True).nodes)
    assert set(TURN) <= drawn and "debate_turn" not in drawn
    subgraphs = dict(graph.get_subgraphs())  # what get_state(subgraphs=True) reads
    assert subgraphs["debate_turn"].checkpointer is not False
    lean = set(build_tool_mad(turns="lean").compile().get_graph(xray=True).nodes)
    assert "debate_turn" in lean and not set(TURN) & lean  # the comparison: drawn as one node


@pytest.mark.parametrize("key", [TURN_CHECKPOINTS_KEY, "__factdebate_turn_checkpoints"])
def test_the_server_refuses_the_turn_checkpoints_key_from_clients(key: str):
    assert TURN_CHECKPOINTS_KEY == "__factdebate_turn_checkpoints"
    with pytest.raises(Refused) as refused:
        check_reserved_configurable({"configurable": {key: True}}, "runs.create")
    assert refused.value.field == key and refused.value.status == 403
    assert "runs.create" in refused.value.detail
