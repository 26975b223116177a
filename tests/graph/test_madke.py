"""MADKE control flow with the scripted model, the static retriever and an in-memory saver."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.errors import ConfigError
from factdebate.core.models import load_model
from factdebate.graphs.madke import build_madke
from factdebate.nodes.madke.select_knowledge import parse_selection, pick
from factdebate.nodes.madke.state import MadkeContext
from factdebate.testing.scenarios import madke_role, verdict
from factdebate.testing.scripted import ScriptCall
from factdebate.tools.base import RETRIEVERS

CLAIM = "The Eiffel Tower is in Paris."


def ctx_for(spec: str, **overrides: Any) -> MadkeContext:
    return MadkeContext(debater_model=spec, rag_backend="static", search_backend="static",
                        **overrides)


async def run(ctx: MadkeContext, thread: str = "t1") -> dict:
    graph = build_madke().compile(checkpointer=InMemorySaver())
    return await graph.ainvoke({"claim": CLAIM}, {"configurable": {"thread_id": thread}},
                               context=ctx)


def calls(spec: str) -> list[tuple[str, str, int]]:
    temperature = MadkeContext().temperature  # the cached model instance is per temperature
    return [(c.role, c.agent, c.round) for c in load_model(spec, temperature=temperature).timeline]


async def pool_titles() -> list[str]:
    """The shared pool for CLAIM: the static ranking (both sources return it; kept once)."""
    static = RETRIEVERS.get("static")(None)  # tests/conftest.py's word-overlap ranking
    return [e["title"] for e in await static.search(CLAIM, k=5)]


def recording(prompts: dict[tuple[str, str, int], str], **kwargs: Any) -> Any:
    def respond(call: ScriptCall) -> Any:
        prompts[(call.role, call.agent, call.round)] = call.prompt
        return madke_role(call, **kwargs)

    return respond


async def test_judge_yes_after_round_one_ends_with_the_summary(scenario):
    def responder(call: ScriptCall) -> Any:
        if call.role == "judge":  # the paper's free-text token
            return "Both agents answer SUPPORTS. [Yes]"
        return madke_role(call)

    spec = scenario(responder)
    out = await run(ctx_for(spec))
    assert out["round"] == 1 and out["stopped_by"] == "consensus"
    assert out["label"] == "SUPPORTS" and out["scores"] == {}
    assert sorted(calls(spec)) == sorted([
        ("select_knowledge", "debater1", 1), ("select_knowledge", "debater2", 1),
        ("debater", "debater1", 1), ("debater", "debater2", 1),
        ("judge", "", 1), ("summarizer", "", 1),
    ])
    assert calls(spec)[-1] == ("summarizer", "", 1)
    assert out["ledger"]["tool_calls"] == {"static": 2}  # pool retrieved once: rag + search
    assert out["ledger"]["llm_calls"] == 6
    assert sorted(t["agent"] for t in out["turns"]) == ["debater1", "debater2"]


async def test_without_consensus_t_rounds_of_orderly_talk_then_summary(scenario):
    def responder(call: ScriptCall) -> Any:
        if call.role == "debater":
            label = 0 if call.agent == "debater1" else 1
            return verdict(call, label, f"reason-{call.agent}-r{call.round}")
        return madke_role(call, consensus_round=0)

    prompts: dict[tuple[str, str, int], str] = {}

    def spy(call: ScriptCall) -> Any:
        prompts[(call.role, call.agent, call.round)] = call.prompt
        return responder(call)

    spec = scenario(spy)
    out = await run(ctx_for(spec, max_rounds=3))
    assert out["round"] == 3 and out["stopped_by"] == "max_rounds"
    seq = calls(spec)
    assert [c for c in seq if c[0] == "judge"] == [("judge", "", 1), ("judge", "", 2),
                                                    ("judge", "", 3)]
    assert seq[-1] == ("summarizer", "", 3) and seq.count(("summarizer", "", 3)) == 1
    # orderly talk: in rounds 2 and 3 debater1 finishes before debater2 starts
    for r in (2, 3):
        assert seq.index(("debater", "debater1", r)) < seq.index(("select_knowledge", "debater2", r))
    # debater2 sees debater1's answer of the same round, debater1 sees debater2's previous one
    assert "reason-debater1-r2" in prompts[("debater", "debater2", 2)]
    assert "reason-debater2-r1" in prompts[("debater", "debater1", 2)]
    assert "reason-debater1-r1" in prompts[("debater", "debater1", 2)]  # its own history
    assert "reason-" not in prompts[("debater", "debater2", 1)]  # simultaneous talk
    assert "Answers from other agents" not in prompts[("debater", "debater2", 1)]
    assert "reason-debater1-r2" in prompts[("select_knowledge", "debater1", 3)]
    assert "reason-debater1-r3" in prompts[("summarizer", "", 3)]
    assert len(out["turns"]) == 6 and out["label"] == "SUPPORTS"


async def test_aks_gives_the_debater_exactly_the_items_it_picked(scenario):
    prompts: dict[tuple[str, str, int], str] = {}
    spec = scenario(recording(prompts, selected=(2, 4)))
    out = await run(ctx_for(spec))
    pool = await pool_titles()
    assert len(pool) == 4
    aks = prompts[("select_knowledge", "debater1", 1)]
    assert all(f'<document n="{i}" title="{t}">' in aks for i, t in enumerate(pool, 1))
    seen = prompts[("debater", "debater1", 1)]
    shown = [t for t in pool if f'title="{t}"' in seen]
    assert shown == [pool[1], pool[3]]
    first = next(t for t in out["turns"] if t["agent"] == "debater1")
    assert [e["title"] for e in first["evidence"]] == [pool[1], pool[3]]


async def test_aks_numbers_outside_the_pool_are_dropped_and_flagged(scenario):
    spec = scenario(lambda call: madke_role(call, selected=(9, 1, 1, 2, 3, 4)))
    out = await run(ctx_for(spec))
    pool = await pool_titles()
    assert all([e["title"] for e in t["evidence"]] == pool[:3] for t in out["turns"])
    assert any("outside the pool" in f for f in out["flags"])


async def test_no_found_means_no_knowledge(scenario):
    prompts: dict[tuple[str, str, int], str] = {}

    def responder(call: ScriptCall) -> Any:
        prompts[(call.role, call.agent, call.round)] = call.prompt
        if call.role == "select_knowledge":
            return "None of the knowledge answers this. [No Found]"
        return madke_role(call)

    spec = scenario(responder)
    out = await run(ctx_for(spec))
    assert all(t["evidence"] == [] for t in out["turns"])
    seen = prompts[("debater", "debater1", 1)]
    assert "<document n=" not in seen and "none selected" in seen
    assert not any("knowledge selection" in f for f in out["flags"])


async def test_aks_off_shows_the_whole_pool(scenario):
    prompts: dict[tuple[str, str, int], str] = {}
    spec = scenario(recording(prompts))
    out = await run(ctx_for(spec, knowledge_selection=False))
    pool = await pool_titles()
    assert not any(role == "select_knowledge" for role, _, _ in calls(spec))
    assert all([e["title"] for e in t["evidence"]] == pool for t in out["turns"])
    assert all(f'title="{t}"' in prompts[("debater", "debater2", 1)] for t in pool)


async def test_no_knowledge_sources_make_no_tool_calls(scenario):
    prompts: dict[tuple[str, str, int], str] = {}
    spec = scenario(recording(prompts))
    out = await run(ctx_for(spec, knowledge_sources="none"))
    assert out["ledger"]["tool_calls"] == {}
    assert not any(role == "select_knowledge" for role, _, _ in calls(spec))
    assert all(t["evidence"] == [] for t in out["turns"])
    assert out["stopped_by"] == "consensus" and out["label"] == "SUPPORTS"


async def test_one_source_and_three_debaters(scenario):
    spec = scenario(lambda call: madke_role(call, consensus_round=2))
    out = await run(ctx_for(spec, knowledge_sources="wiki", num_debaters=3))
    assert out["ledger"]["tool_calls"] == {"static": 1}
    assert out["round"] == 2 and out["stopped_by"] == "consensus"
    assert {t["agent"] for t in out["turns"]} == {"debater1", "debater2", "debater3"}
    assert len(out["turns"]) == 6


def test_selection_parsing_and_context_checks():
    assert parse_selection("knowledge [1], [3] helps") == ([1, 3], False)
    assert parse_selection("the most helpful is [2, 5]") == ([2, 5], False)
    assert parse_selection("nothing here [No Found]") == ([], True)
    assert parse_selection("no brackets at all") is None
    pool = [{"title": str(i)} for i in range(1, 5)]
    chosen, dropped = pick(pool, [0, 4, 4, 1, 2, 3])  # type: ignore[arg-type]
    assert [e["title"] for e in chosen] == ["4", "1", "2"] and dropped == [0]
    with pytest.raises(ConfigError, match="num_debaters"):
        MadkeContext(num_debaters=1)
    with pytest.raises(ConfigError, match="knowledge_sources"):
        MadkeContext(knowledge_sources="google")  # type: ignore[arg-type]
    assert MadkeContext().tool_kinds() == ["rag", "search"]
    assert MadkeContext(knowledge_sources="none").tool_kinds() == []
    ctx = MadkeContext()
    assert (ctx.num_debaters, ctx.max_rounds, ctx.wiki_pool_size, ctx.search_pool_size,
            ctx.temperature) == (2, 3, 5, 10, 0.5)
    assert (ctx.pool_size("rag"), ctx.pool_size("search")) == (5, 10)


async def test_a_task_without_labels_is_a_config_error(scenario):
    spec = scenario(lambda call: madke_role(call))
    graph = build_madke().compile(checkpointer=InMemorySaver())
    with pytest.raises(ConfigError, match="no labels"):
        await graph.ainvoke({"claim": "Who wrote Hamlet?", "task": "open_qa"},
                            {"configurable": {"thread_id": "open"}},
                            context=ctx_for(spec, knowledge_sources="none"))
