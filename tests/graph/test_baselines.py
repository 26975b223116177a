"""The baselines: each one's distinctive step, with the scripted model and ``static`` retriever."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from typer.testing import CliRunner

from factdebate.core.errors import ConfigError, InputError
from factdebate.core.models import load_model
from factdebate.core.state import DebateOutput
from factdebate.graphs.registry import FRAMEWORKS, build_framework, context_class
from factdebate.nodes.baselines.context import BaselineContext, MultiAgentDebateContext
from factdebate.testing.scenarios import verdict
from factdebate.testing.scripted import ScriptCall
from tests.graph.baseline_replies import DOCS, QUESTION, baseline_reply

CLAIM = "The Eiffel Tower is in Paris."
BASELINES = [e.name for e in FRAMEWORKS if e.meta.get("baseline")]
Responder = Callable[[ScriptCall], Any]


default_reply = baseline_reply
"""A valid reply for every schema the baselines ask for (first label, two answers)."""


def with_default(overrides: Callable[[ScriptCall], Any]) -> Responder:
    """``overrides(call)``, or the default reply where it returns None."""
    return lambda call: (r if (r := overrides(call)) is not None else default_reply(call))


async def run(name: str, spec: str, payload: dict | None = None, **overrides: Any) -> dict:
    ctx = context_class(name)(debater_model=spec, rag_backend="static",
                              search_backend="static", **overrides)
    graph = build_framework(name).compile(checkpointer=InMemorySaver())
    return await graph.ainvoke(payload or {"claim": CLAIM}, {"configurable": {"thread_id": "t"}},
                               context=ctx)


def calls(spec: str, temperature: float = 0.0) -> list[ScriptCall | Any]:
    return load_model(spec, temperature=temperature).timeline


def recorder(prompts: list[tuple[str, str, int, str]], overrides: Callable = lambda c: None):
    """A responder that records (role, agent, round, prompt) of every call."""

    def respond(call: ScriptCall) -> Any:
        prompts.append((call.role, call.agent, call.round, call.prompt))
        return with_default(overrides)(call)

    return respond


# -- one-call baselines ----------------------------------------------------------------------
ONE_CALL = [
    # name, payload, must be in the prompt, must not be, tool calls, answers
    ("cot", None, ["Let's think step by step"], ["<document"], {}, []),
    ("standard", None, [CLAIM], ["step by step", "<document"], {}, []),
    ("rag", None, ["<document", "wrought-iron lattice tower"], [], {"static": 1}, []),
    ("no_rag", {"claim": QUESTION}, [QUESTION], ["<document", "born 1963"], {}, ["1963", "1956"]),
    ("concat_rag", {"claim": QUESTION, "documents": DOCS},
     ["born 1963", "born 1956", "born in 1998", "Example question"],
     ["misinfo'", 'misinfo"', "'type'"], {},
     ["1963", "1956"]),
]


@pytest.mark.parametrize(("name", "payload", "present", "absent", "tools", "answers"), ONE_CALL)
async def test_one_call_baselines(scenario, name, payload, present, absent, tools, answers):
    prompts: list = []
    spec = scenario(recorder(prompts))
    out = await run(name, spec, payload)
    assert len(prompts) == 1
    prompt = prompts[0][3]
    assert all(p in prompt for p in present) and not any(a in prompt for a in absent)
    assert out["ledger"]["tool_calls"] == tools
    assert out["answers"] == answers
    assert out["label"] == (None if answers else "SUPPORTS")
    assert out["stopped_by"] == "answer" and out["round"] == 1
    assert out["ledger"]["llm_calls"] == 1


async def test_concat_rag_rejects_an_item_without_documents(scenario):
    spec = scenario(default_reply)
    with pytest.raises(InputError, match="documents"):
        await run("concat_rag", spec, {"claim": QUESTION})
    assert calls(spec) == []


# -- self-consistency ------------------------------------------------------------------------
async def test_self_consistency_samples_k_paths_in_parallel_and_takes_the_majority(scenario):
    votes = {"sample1": 1, "sample2": 0, "sample3": 0, "sample4": 1, "sample5": 1}
    spec = scenario(lambda call: verdict(call, votes[call.agent], f"path of {call.agent}"))
    out = await run("self_consistency", spec + "?latency=0.05")
    timeline = calls(spec + "?latency=0.05", temperature=0.7)
    assert [c.role for c in timeline] == ["sample"] * 5
    assert max(c.start for c in timeline) < min(c.end for c in timeline)  # all overlapped
    assert calls(spec + "?latency=0.05") == []  # nothing at the greedy temperature
    assert out["label"] == "REFUTES" and out["rationale"] == "path of sample1"
    assert out["stopped_by"] == "vote" and len(out["turns"]) == 5


# -- ReAct -----------------------------------------------------------------------------------
async def test_react_searches_then_answers_from_the_observation(scenario):
    prompts: list = []

    def step(call: ScriptCall) -> Any:
        if call.role == "react" and call.round == 1:
            return {"thought": "Find the tower.", "action": "search", "query": "Eiffel Tower"}
        return None

    spec = scenario(recorder(prompts, step))
    out = await run("react", spec)
    assert [(r, n) for r, _, n, _ in prompts] == [("react", 1), ("react", 2), ("answer", 2)]
    assert out["ledger"]["tool_calls"] == {"static": 1}
    assert "search[Eiffel Tower]" in prompts[1][3] and "Observation 1: <document" in prompts[1][3]
    assert "wrought-iron" in prompts[2][3]
    assert out["stopped_by"] == "finish" and out["label"] == "SUPPORTS" and out["round"] == 2


async def test_react_stops_at_max_steps(scenario):
    spec = scenario(with_default(lambda call: {"thought": "More.", "action": "search",
                                               "query": f"q{call.round}"}
                                 if call.role == "react" else None))
    out = await run("react", spec, max_steps=2)
    assert [c.role for c in calls(spec)] == ["react", "react", "answer"]
    assert out["ledger"]["tool_calls"] == {"static": 2}
    assert [t["query"] for t in out["turns"] if t["agent"] == "tool"] == ["q1", "q2"]
    assert out["stopped_by"] == "max_steps" and out["label"] == "SUPPORTS"


# -- MAD (Liang et al.) ----------------------------------------------------------------------
def mad_sides(call: ScriptCall) -> Any:
    if call.role == "debater":
        return verdict(call, 0 if call.agent == "affirmative" else 1, f"{call.agent} argument")
    return None


async def test_mad_moderator_ends_the_debate_early(scenario):
    prompts: list = []

    def respond(call: ScriptCall) -> Any:
        if call.role == "moderator":
            return {"preference": True, "supported_side": "negative", "reasoning": "convincing"}
        return mad_sides(call)

    spec = scenario(recorder(prompts, respond))
    out = await run("mad", spec)
    assert [(r, a) for r, a, _, _ in prompts] == [
        ("debater", "affirmative"), ("debater", "negative"), ("moderator", "")]
    assert "affirmative argument" in prompts[1][3]  # the negative answers the affirmative
    assert out["stopped_by"] == "moderator" and out["label"] == "REFUTES" and out["round"] == 1


async def test_mad_judge_decides_when_the_moderator_never_prefers(scenario):
    prompts: list = []

    def respond(call: ScriptCall) -> Any:
        if call.role == "judge":
            return verdict(call, 2, "neither side proved it")
        return mad_sides(call)

    spec = scenario(recorder(prompts, respond))
    out = await run("mad", spec, max_rounds=2)
    assert [r for r, _, _, _ in prompts] == ["debater", "debater", "moderator"] * 2 + ["judge"]
    affirmative_round2 = prompts[3][3]
    assert "negative argument" in affirmative_round2
    assert "Round 2:" in prompts[-1][3]
    assert out["stopped_by"] == "judge" and out["label"] == "NOT ENOUGH INFO"
    assert out["round"] == 2 and len(out["turns"]) == 4


# -- multi-agent debate (Du et al.) ----------------------------------------------------------
async def test_multi_agent_debate_runs_n_by_r_calls_and_takes_the_majority(scenario):
    prompts: list = []
    labels = {"agent1": 0, "agent2": 1, "agent3": 0}
    spec = scenario(recorder(prompts, lambda call: verdict(call, labels[call.agent],
                                                           f"{call.agent} says")))
    out = await run("multi_agent_debate", spec)
    assert sorted((a, n) for _, a, n, _ in prompts) == [
        (f"agent{i}", r) for i in (1, 2, 3) for r in (1, 2)]
    round2 = {a: p for _, a, n, p in prompts if n == 2}
    assert "agent2 agent" in round2["agent1"] and "agent3 agent" in round2["agent1"]
    assert "agent1 agent" not in round2["agent1"]
    assert out["label"] == "SUPPORTS" and out["stopped_by"] == "vote" and out["round"] == 2
    assert out["ledger"]["llm_calls"] == 6 and out["ledger"]["tool_calls"] == {}


def test_debate_baselines_take_label_tasks_only():
    with pytest.raises(ConfigError, match="answer_mode"):
        MultiAgentDebateContext(answer_mode="answers")


# -- self-reflection -------------------------------------------------------------------------
async def test_self_reflection_answers_reviews_and_refines_twice(scenario):
    prompts: list = []

    def respond(call: ScriptCall) -> Any:
        if call.role == "review":
            return {"feedback": f"feedback-{call.round}"}
        if call.role == "refine":
            return verdict(call, call.round - 1, f"refined-{call.round}")
        return None

    spec = scenario(recorder(prompts, respond))
    out = await run("self_reflection", spec)
    assert [r for r, _, _, _ in prompts] == ["answer", "review", "refine", "review", "refine"]
    assert "feedback-1" in prompts[2][3] and "refined-1" in prompts[3][3]
    assert "feedback-2" in prompts[4][3]
    assert out["label"] == "REFUTES" and out["rationale"] == "refined-2"
    assert out["stopped_by"] == "refine" and out["round"] == 2
    assert out["ledger"]["tool_calls"] == {"static": 1}


# -- Astute RAG ------------------------------------------------------------------------------
async def test_astute_rag_generates_internal_passages_then_consolidates(scenario):
    prompts: list = []
    spec = scenario(recorder(prompts))
    out = await run("astute_rag", spec, {"claim": QUESTION, "task": "qa_conflict",
                                         "documents": DOCS})
    assert [r for r, _, _, _ in prompts] == ["internal", "consolidate", "answer"]
    assert "born 1963" not in prompts[0][3]  # internal knowledge is written without documents
    assert "memory passage" in prompts[1][3] and "born 1963" in prompts[1][3]
    assert "consolidated: tower in Paris" in prompts[2][3] and "memory passage" in prompts[2][3]
    assert out["answers"] == ["1963", "1956"] and out["label"] is None  # open_qa -> answers
    assert out["stopped_by"] == "finalize" and out["ledger"]["tool_calls"] == {}


# -- Speculative RAG -------------------------------------------------------------------------
async def test_speculative_rag_drafts_from_distinct_subsets_and_the_verifier_picks(scenario):
    def respond(call: ScriptCall) -> Any:
        if call.role == "drafter":
            return verdict(call, 1 if call.agent == "draft2" else 0, f"{call.agent} rationale")
        if call.role == "verifier":
            return {"reasoning": "checked", "score": 0.9 if call.agent == "draft2" else 0.2}
        return None

    spec = scenario(with_default(respond))
    out = await run("speculative_rag", spec)
    drafts = [t for t in out["turns"] if t["agent"].startswith("draft")]
    subsets = [{e["id"] for e in t["evidence"]} for t in drafts]
    assert len(drafts) == 3 and all(subsets)
    assert sum(len(s) for s in subsets) == len(set().union(*subsets)) == 4  # disjoint, all docs
    assert sorted(c.role for c in calls(spec)) == ["drafter"] * 3 + ["verifier"] * 3
    assert out["label"] == "REFUTES"  # the verifier's pick, against the drafts' majority
    assert "draft2 rationale" in out["rationale"] and out["stopped_by"] == "verifier"
    assert out["scores"]["draft2"] == [{"round": 1, "verifier": 0.9}]


# -- Self-Ask --------------------------------------------------------------------------------
async def test_self_ask_follows_up_until_the_final_answer(scenario):
    prompts: list = []
    questions = {1: "Where is the Eiffel Tower?", 2: "Which country is Paris in?"}

    def respond(call: ScriptCall) -> Any:
        if call.role == "follow_up":
            return {"follow_up": questions.get(call.round, "")}
        return None

    spec = scenario(recorder(prompts, respond))
    out = await run("self_ask", spec)
    assert [r for r, _, _, _ in prompts] == ["follow_up"] * 3 + ["answer"]
    assert [t["query"] for t in out["turns"] if t["agent"] == "intermediate"] == \
        list(questions.values())
    final = prompts[-1][3]
    assert "Follow up: Where is the Eiffel Tower?" in final
    assert "Intermediate answer: <document" in final and "So the final answer is:" in final
    assert out["ledger"]["tool_calls"] == {"static": 2}
    assert out["stopped_by"] == "final_answer" and out["label"] == "SUPPORTS"


async def test_self_ask_stops_at_max_follow_ups(scenario):
    spec = scenario(with_default(lambda call: {"follow_up": f"q{call.round}"}
                                 if call.role == "follow_up" else None))
    out = await run("self_ask", spec, max_follow_ups=2)
    assert [c.role for c in calls(spec)] == ["follow_up", "follow_up", "answer"]
    assert out["stopped_by"] == "max_steps" and out["ledger"]["tool_calls"] == {"static": 2}


# -- registry --------------------------------------------------------------------------------
def test_every_baseline_compiles_is_listed_and_exported():
    from factdebate.cli.main import app

    assert len(BASELINES) == 13
    listed = CliRunner().invoke(app, ["ls", "frameworks"]).output.split()
    exported = json.loads((Path(__file__).parents[2] / "langgraph.json").read_text())["graphs"]
    for name in BASELINES:
        graph = build_framework(name).compile(checkpointer=InMemorySaver())
        assert "prepare" in graph.get_graph().nodes
        assert graph.builder.output_schema is DebateOutput
        assert issubclass(context_class(name), BaselineContext)
        assert context_class(name)().prompt_set == "baselines"
        assert name in listed and exported[name] == f"./graphs/baselines/{name}.py:graph"
