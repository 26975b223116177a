"""One claim per run: claim 2 on claim 1's thread equals claim 2 on a fresh thread.

Also: ``update_state`` works on every framework (routers need no run context), routing with the
knobs the run recorded. Scripted model, ``static`` retriever, in-memory saver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.state import INPUT_KEYS, complete_input
from factdebate.graphs.registry import FRAMEWORKS, build_framework, context_class
from factdebate.testing.scenarios import answer_role, madam_role, madke_role, verdict
from factdebate.testing.scripted import ScriptCall
from tests.graph import baseline_replies as replies

CLAIM_1 = "Mount Everest is the highest mountain."
CLAIM_2 = "The Eiffel Tower is in Paris."
RESULT_KEYS = ("claim", "label", "answers", "rationale", "round", "stopped_by", "turns", "scores",
               "ledger", "flags")
Prompts = list[tuple[str, str, int, str]]


def baseline_reply(call: ScriptCall) -> Any:
    """A valid reply for the schemas the baselines ask for (first label, one answer)."""
    return replies.baseline_reply(
        call, AnswersOut={"answers": ["1963"], "explanation": "Document 1."})


def mermaid_reply(call: ScriptCall) -> Any:
    """Search once, then answer from the observation."""
    if call.role == "decomposer":
        return {"triplets": [{"subject": "tower", "relation": "is in", "object": "Paris"}],
                "topic": "landmarks"}
    if call.role == "force_answer":
        return verdict(call, 1, "Forced.")
    if "Observation:" in call.prompt:
        return {"thought": "The observation answers it.", "answer": "SUPPORTS"}
    return {"thought": "I need the article.",
            "action": {"name": "search_wikipedia", "reason": "look", "input": "Eiffel Tower"}}


def tool_mad_reply(call: ScriptCall) -> Any:
    """Claim 1: the debaters disagree (all rounds, then the judge); claim 2: they agree."""
    split = "Everest" in call.prompt and call.agent == "search"
    return answer_role(call, debater_label=1 if split else 0)


def madke_reply(call: ScriptCall) -> Any:
    """Claim 1: the judge never sees consensus (T rounds); claim 2: consensus in round 1."""
    return madke_role(call, consensus_round=0 if "Everest" in call.prompt else 1)


CASES: dict[str, tuple[Callable[[ScriptCall], Any], dict[str, Any], dict[str, Any]]] = {
    # framework: (responder, context overrides, claim 1's input: optional keys claim 2 omits)
    "tool_mad": (tool_mad_reply, {"max_rounds": 2}, {"exclude_titles": ["Paris"]}),
    "madke": (madke_reply, {}, {"exclude_titles": ["Paris"]}),
    "madam_rag": (lambda call: madam_role(call), {},
                  {"documents": [{"id": "x", "title": "Everest", "text": "Everest is 8,849 m.",
                                  "source": "item", "url": "", "score": 1.0}]}),
    "mermaid": (mermaid_reply, {"tool_provider": "in_process", "wiki_backend": "static",
                                "memory": False}, {"exclude_titles": ["Eiffel Tower"]}),
    "self_consistency": (baseline_reply, {"samples": 3},
                         {"task": "medqa", "options": {"A": "yes", "B": "no", "C": "maybe",
                                                       "D": "unknown"}}),
}


def context_for(name: str, spec: str, overrides: dict[str, Any]) -> Any:
    return context_class(name)(debater_model=spec, rag_backend="static",
                               search_backend="static", **overrides)


def recording(responder: Callable[[ScriptCall], Any], prompts: Prompts) -> Callable:
    def respond(call: ScriptCall) -> Any:
        prompts.append((call.role, call.agent, call.round, call.prompt))
        return responder(call)

    return respond


async def run_on(graph: Any, thread: str, item: dict, ctx: Any) -> dict:
    config = {"configurable": {"thread_id": thread}}
    await graph.ainvoke(complete_input(item), config, context=ctx)
    return {k: v for k, v in (await graph.aget_state(config)).values.items() if k in RESULT_KEYS}


@pytest.mark.parametrize("name", list(CASES))
async def test_claim_two_on_a_used_thread_equals_a_fresh_thread(name, scenario):
    responder, overrides, extra = CASES[name]
    graph = build_framework(name).compile(checkpointer=InMemorySaver())
    first: Prompts = []
    one = await run_on(graph, "used", {"claim": CLAIM_1, **extra},
                       context_for(name, scenario(recording(responder, first)), overrides))
    reused: Prompts = []
    two = await run_on(graph, "used", {"claim": CLAIM_2},
                       context_for(name, scenario(recording(responder, reused)), overrides))
    fresh: Prompts = []
    alone = await run_on(graph, "fresh", {"claim": CLAIM_2},
                         context_for(name, scenario(recording(responder, fresh)), overrides))
    assert first and one["turns"]  # claim 1 really debated (so there was something to carry)
    assert two == alone
    assert sorted(reused) == sorted(fresh)  # parallel branches call in any order
    assert not any(CLAIM_1 in prompt for *_, prompt in reused)
    # the thread's history still holds claim 1's result
    history = [s async for s in graph.aget_state_history({"configurable": {"thread_id": "used"}})]
    assert any(s.values.get("claim") == CLAIM_1 and s.values.get("turns") == one["turns"]
               for s in history)


async def test_tool_mad_reset_without_complete_input(scenario):
    """The first node resets the debate even when the caller sends only the claim."""
    graph = build_framework("tool_mad").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    ctx = context_for("tool_mad", scenario(tool_mad_reply), {"max_rounds": 2})
    await graph.ainvoke({"claim": CLAIM_1}, config, context=ctx)
    assert (await graph.aget_state(config)).values["stopped_by"] == "judge"
    out = await graph.ainvoke({"claim": CLAIM_2}, config, context=ctx)
    alone = await graph.ainvoke({"claim": CLAIM_2}, {"configurable": {"thread_id": "fresh"}},
                                context=ctx)
    assert out == alone
    assert len(out["turns"]) == 2 * out["round"]  # no turn of claim 1 left
    assert out["ledger"]["tool_calls"] == {"static": 2 * out["round"]}


def test_complete_input_sends_every_input_key():
    assert complete_input({"claim": "c"}) == {"claim": "c", **dict.fromkeys(INPUT_KEYS[1:])}
    assert complete_input({"claim": "c", "task": "fever"})["task"] == "fever"


FRAMEWORK_NAMES = [e.name for e in FRAMEWORKS]


def responder_for(name: str) -> Callable[[ScriptCall], Any]:
    return CASES[name][0] if name in CASES else baseline_reply


@pytest.mark.parametrize("name", FRAMEWORK_NAMES)
async def test_update_state_runs_every_router(name, scenario):
    """``update_state`` as every node (routers included): no run context needed."""
    builder = build_framework(name)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    overrides = CASES[name][1] if name in CASES else {}
    item = {"claim": CLAIM_2, **({"documents": CASES["madam_rag"][2]["documents"]}
                                 if name == "concat_rag" else {})}
    await graph.ainvoke(complete_input(item), config,
                        context=context_for(name, scenario(responder_for(name)), overrides))
    for node in builder.nodes:
        await graph.aupdate_state(config, {"flags": [f"edited as {node}"]}, as_node=node)
        snapshot = await graph.aget_state(config)
        assert f"edited as {node}" in snapshot.values["flags"]
        assert set(snapshot.next) <= set(builder.nodes)


async def test_update_state_routes_with_the_run_s_recorded_knobs(scenario):
    """After a 2-round Tool-MAD run, round 2 at check_consensus goes to the judge (default: 3)."""
    graph = build_framework("tool_mad").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    ctx = context_for("tool_mad", scenario(tool_mad_reply), {"max_rounds": 2})
    await graph.ainvoke(complete_input({"claim": CLAIM_1}), config, context=ctx)
    await graph.aupdate_state(config, {"stopped_by": ""}, as_node="check_consensus")
    assert (await graph.aget_state(config)).next == ("judge",)
    await graph.aupdate_state(config, {"stopped_by": "consensus"}, as_node="check_consensus")
    assert (await graph.aget_state(config)).next == ("cite_verdict",)  # then END
