"""Each paper-fidelity switch, both settings, with the scripted double.

Every deviation from a paper is a Context switch with the paper's behaviour available; these
tests run each graph under both settings and assert the behaviour that differs.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.models import load_model
from factdebate.core.state import Evidence
from factdebate.graphs.madke import build_madke
from factdebate.graphs.registry import build_framework, context_class
from factdebate.graphs.tool_mad import build_tool_mad
from factdebate.nodes.madke.state import MadkeContext
from factdebate.testing.scenarios import answer_role, madke_role, verdict
from factdebate.testing.scripted import ScriptCall
from factdebate.testing.scripted_ragas import respond_ragas
from factdebate.tools.base import RETRIEVERS
from tests.graph.baseline_replies import DOCS, QUESTION

CLAIM = "The Eiffel Tower is in Paris."


async def invoke(graph: Any, payload: dict, ctx: Any) -> dict:
    compiled = graph.compile(checkpointer=InMemorySaver())
    return await compiled.ainvoke(payload, {"configurable": {"thread_id": "t"}}, context=ctx)


def roles(spec: str) -> list[tuple[str, str, int]]:
    return [(c.role, c.agent, c.round) for c in load_model(spec).timeline]


# -- Tool-MAD: stop rule -----------------------------------------------------------------------
def half_faithful(call: ScriptCall) -> Any:
    """Debaters agree; the rag debater's answers are half supported (faithfulness 0.5) every
    round, below the 0.7 threshold each round but above it summed over two rounds."""
    if call.role == "ragas":
        return respond_ragas(call, faithful=0.5 if call.agent == "rag" else 1.0)
    return answer_role(call, debater_label=0)


@pytest.mark.parametrize(("rule", "rounds", "stopped_by"),
                         [("round_ge", 3, "judge"), ("accumulated_gt", 2, "consensus")])
async def test_tool_mad_stop_rule(scenario, static_ctx, rule, rounds, stopped_by):
    spec = scenario(half_faithful)
    out = await invoke(build_tool_mad(), {"claim": CLAIM}, static_ctx(spec, stop_rule=rule))
    assert [r["faithfulness"] for r in out["scores"]["rag"]] == [0.5] * rounds
    assert out["round"] == rounds and out["stopped_by"] == stopped_by
    assert any(r == "judge" for r, _, _ in roles(spec)) == (stopped_by == "judge")


# -- Tool-MAD: scores shown to the judge without scoring feedback ------------------------------
@pytest.mark.parametrize("show", [False, True])
async def test_tool_mad_judge_scores_without_feedback(scenario, static_ctx, show):
    judge_prompts: list[str] = []

    def responder(call: ScriptCall) -> Any:
        if call.role == "judge":
            judge_prompts.append(call.prompt)
            return verdict(call, 0, "weighed")
        return answer_role(call, debater_label=0 if call.agent == "rag" else 1)

    spec = scenario(responder)
    ctx = static_ctx(spec, max_rounds=1, score_feedback=False,
                     judge_scores_without_feedback=show)
    out = await invoke(build_tool_mad(), {"claim": CLAIM}, ctx)
    assert out["stopped_by"] == "judge" and len(judge_prompts) == 1
    assert ("faithfulness=" in judge_prompts[0]) is show
    assert out["scores"]["rag"][0]["faithfulness"] is not None  # computed either way


# -- MADKE: what orderly talk shows of this round ----------------------------------------------
@pytest.mark.parametrize("view", ["latest", "previous_round"])
async def test_madke_orderly_view(scenario, view):
    prompts: dict[tuple[str, str, int], str] = {}

    def responder(call: ScriptCall) -> Any:
        prompts[(call.role, call.agent, call.round)] = call.prompt
        if call.role == "debater":
            return verdict(call, 0 if call.agent == "debater1" else 1,
                           f"reason-{call.agent}-r{call.round}")
        return madke_role(call, consensus_round=0)

    spec = scenario(responder)
    ctx = MadkeContext(debater_model=spec, rag_backend="static", search_backend="static",
                       max_rounds=2, orderly_view=view)
    await invoke(build_madke(), {"claim": CLAIM}, ctx)
    second = prompts[("debater", "debater2", 2)]  # debater1 already spoke in round 2
    assert ("reason-debater1-r2" in second) is (view == "latest")
    assert ("reason-debater1-r1" in second) is (view == "previous_round")
    assert "reason-debater2-r1" in prompts[("debater", "debater1", 2)]  # the same either way


# -- MADKE: pool size per source, the paper's temperature --------------------------------------
class KSpy:
    """Records the ``k`` each knowledge source is asked for."""

    asked: dict[str, list[int]] = {}

    def __init__(self, name: str) -> None:
        self.name = name

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        KSpy.asked.setdefault(self.name, []).append(k)
        return [Evidence(id=f"{self.name}{i}", title=f"{self.name} {i}", text=f"passage {i}",
                         source=self.name, url="", score=1.0) for i in range(k)]


for _name in ("kspy_wiki", "kspy_search"):
    if _name not in RETRIEVERS:
        RETRIEVERS.register(_name, lambda settings, n=_name: KSpy(n))


async def test_madke_pool_sizes_per_source_and_temperature(scenario):
    KSpy.asked.clear()
    spec = scenario(lambda call: madke_role(call))
    ctx = MadkeContext(debater_model=spec, rag_backend="kspy_wiki", search_backend="kspy_search")
    assert ctx.temperature == 0.5  # MADKE §4.4
    out = await invoke(build_madke(), {"claim": CLAIM}, ctx)
    assert KSpy.asked == {"kspy_wiki": [5], "kspy_search": [10]}
    assert out["ledger"]["tool_calls"] == {"kspy_wiki": 1, "kspy_search": 1}
    KSpy.asked.clear()
    ctx = MadkeContext(debater_model=spec, rag_backend="kspy_wiki", search_backend="kspy_search",
                       wiki_pool_size=2, search_pool_size=3)
    await invoke(build_madke(), {"claim": CLAIM}, ctx)
    assert KSpy.asked == {"kspy_wiki": [2], "kspy_search": [3]}


# -- Speculative RAG: all drafts to the aggregator in the multi-answer setting -----------------
def speculative_replies(prompts: list[tuple[str, str]]) -> Any:
    def respond(call: ScriptCall) -> Any:
        prompts.append((call.role, call.prompt))
        if call.role == "drafter":
            year = {"draft1": "1963", "draft2": "1956"}.get(call.agent, "1998")
            return {"answers": [year], "explanation": f"{call.agent} rationale {year}"}
        if call.role == "verifier":
            return {"reasoning": "checked", "score": 0.9 if call.agent == "draft2" else 0.1}
        if call.role == "aggregator":
            return {"answers": ["1963", "1956"], "explanation": "Drafts 1 and 2 are right."}
        raise AssertionError(f"unexpected role {call.role}")

    return respond


async def test_speculative_rag_multi_answer_aggregates_all_drafts(scenario):
    prompts: list[tuple[str, str]] = []
    spec = scenario(speculative_replies(prompts))
    ctx = context_class("speculative_rag")(debater_model=spec, rag_backend="static")
    assert ctx.multi_answer_drafts == "aggregate"
    out = await invoke(build_framework("speculative_rag"),
                       {"claim": QUESTION, "task": "qa_conflict", "documents": DOCS}, ctx)
    assert sorted(r for r, _ in prompts) == ["aggregator"] + ["drafter"] * 3  # no verifier
    aggregator = next(p for r, p in prompts if r == "aggregator")
    for n, year in enumerate(("1963", "1956", "1998"), 1):
        assert f'<draft n="{n}">Answers: {year}. Rationale: draft{n} rationale {year}' \
            in aggregator
    assert out["answers"] == ["1963", "1956"] and out["stopped_by"] == "aggregator"


async def test_speculative_rag_multi_answer_select_keeps_one_draft(scenario):
    prompts: list[tuple[str, str]] = []
    spec = scenario(speculative_replies(prompts))
    ctx = context_class("speculative_rag")(debater_model=spec, rag_backend="static",
                                           multi_answer_drafts="select")
    out = await invoke(build_framework("speculative_rag"),
                       {"claim": QUESTION, "task": "qa_conflict", "documents": DOCS}, ctx)
    assert sorted(r for r, _ in prompts) == ["drafter"] * 3 + ["verifier"] * 3
    assert out["answers"] == ["1956"] and out["stopped_by"] == "verifier"


async def test_speculative_rag_labels_still_use_the_verifier(scenario):
    def respond(call: ScriptCall) -> Any:
        if call.role == "verifier":
            return {"reasoning": "checked", "score": 0.5}
        return verdict(call, 0, "drafted")

    spec = scenario(respond)
    ctx = context_class("speculative_rag")(debater_model=spec, rag_backend="static")
    out = await invoke(build_framework("speculative_rag"), {"claim": CLAIM}, ctx)
    assert out["stopped_by"] == "verifier" and out["label"] == "SUPPORTS"
    assert "aggregator" not in {r for r, _, _ in roles(spec)}
