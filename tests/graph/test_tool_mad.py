"""Tool-MAD control flow with the scripted model, an in-memory saver and real ragas scoring."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.models import load_model
from factdebate.graphs.tool_mad import build_tool_mad
from factdebate.testing.scenarios import answer_role, claim_of, verdict
from factdebate.testing.scripted import ScriptCall, ScriptFault

CLAIM = "The Eiffel Tower is in Paris."


async def run(ctx: Any, *, saver: Any = None, thread: str = "t1", payload: Any = None,
              turns: Any = "visible") -> dict:
    graph = build_tool_mad(turns=turns).compile(checkpointer=saver or InMemorySaver())
    config = {"configurable": {"thread_id": thread}}
    return await graph.ainvoke(payload if payload is not None else {"claim": CLAIM}, config,
                               context=ctx)


async def failed_run(ctx: Any, thread: str, turns: Any = "visible") -> tuple[Any, dict]:
    """A run on ``thread`` that the scripted fault ends: the graph on its checkpoints and the
    thread's config, to resume it with."""
    saver = InMemorySaver()
    with pytest.raises(ScriptFault):
        await run(ctx, saver=saver, thread=thread, turns=turns)
    return (build_tool_mad(turns=turns).compile(checkpointer=saver),
            {"configurable": {"thread_id": thread}})


def roles(spec: str) -> list[tuple[str, str, int]]:
    return [(c.role, c.agent, c.round) for c in load_model(spec).timeline]


async def test_early_stop_in_round_one(scenario, static_ctx):
    spec = scenario(lambda call: answer_role(call, debater_label=0))
    out = await run(static_ctx(spec))
    assert out["stopped_by"] == "consensus"
    assert out["round"] == 1
    assert out["label"] == "SUPPORTS"
    assert {t["agent"] for t in out["turns"]} == {"rag", "search"}
    calls = roles(spec)
    assert ("judge", "", 1) not in calls and not any(r == "judge" for r, _, _ in calls)
    assert sum(r == "debater" for r, _, _ in calls) == 2
    for agent in ("rag", "search"):
        row = out["scores"][agent][0]
        assert row["faithfulness"] >= 0.7 and row["answer_relevancy"] >= 0.8
    assert out["ledger"]["llm_calls"] == len(calls)
    assert out["ledger"]["tool_calls"] == {"static": 2}


async def test_low_score_blocks_stop_until_round_two(scenario, static_ctx):
    from factdebate.testing.scripted_ragas import respond_ragas

    def responder(call: ScriptCall) -> Any:
        if call.role == "ragas":
            faithful = 0.0 if (call.agent == "rag" and call.round == 1) else 1.0
            return respond_ragas(call, faithful=faithful)
        return answer_role(call, debater_label=0)

    spec = scenario(responder)
    out = await run(static_ctx(spec))
    assert out["round"] == 2
    assert out["stopped_by"] == "consensus"
    assert out["scores"]["rag"][0]["faithfulness"] < 0.7
    assert out["scores"]["rag"][1]["faithfulness"] >= 0.7
    assert not any(r == "judge" for r, _, _ in roles(spec))


async def test_judge_decides_after_t_rounds(scenario, static_ctx):
    judge_prompts: list[str] = []

    def responder(call: ScriptCall) -> Any:
        if call.role == "judge":
            judge_prompts.append(call.prompt)
            return verdict(call, 1, "The search agent's evidence is stronger.")
        return answer_role(call, debater_label=0 if call.agent == "rag" else 1)

    spec = scenario(responder)
    out = await run(static_ctx(spec, max_rounds=3))
    assert out["round"] == 3
    assert out["stopped_by"] == "judge"
    assert out["label"] == "REFUTES"
    assert len(judge_prompts) == 1
    assert "Average scores" in judge_prompts[0] and "faithfulness=" in judge_prompts[0]
    assert "Round 3:" in judge_prompts[0] and "<document" in judge_prompts[0]
    assert len(out["turns"]) == 6
    # later rounds see the opponent's previous answer and reformulate from it
    followups = [c for c in load_model(spec).timeline if c.role == "query" and c.round > 1]
    assert len(followups) == 4


async def test_without_query_formulation_uses_the_claim(scenario, static_ctx):
    spec = scenario(lambda call: answer_role(call, debater_label=0 if call.agent == "rag" else 1))
    out = await run(static_ctx(spec, query_formulation=False, max_rounds=2, scoring_mode="none"))
    assert not any(r == "query" for r, _, _ in roles(spec))
    assert {t["query"] for t in out["turns"]} == {CLAIM}
    assert out["stopped_by"] == "judge"


async def test_a_query_cut_out_of_a_repetition_loop_falls_back_to_the_claim(scenario, static_ctx):
    from langchain_core.messages import AIMessage

    def responder(call: ScriptCall) -> Any:
        if call.role == "query" and call.agent == "rag":  # what the embedded model reports
            return AIMessage('{"query": "https://junk/en/en/v/13."}',
                             response_metadata={"repetition_cut": 4})
        if call.role == "query":
            return {"query": "Eiffel Tower location"}
        return answer_role(call, debater_label=0)

    out = await run(static_ctx(scenario(responder), scoring_mode="none"))
    queries = {t["agent"]: t["query"] for t in out["turns"]}
    assert queries == {"rag": CLAIM, "search": "Eiffel Tower location"}
    assert any("agent rag round 1 gave no usable query (repetition loop)" in f
               for f in out["flags"])


async def test_three_debaters_with_a_tool_less_agent(scenario, static_ctx):
    prompts: dict[tuple[str, int], str] = {}

    def responder(call: ScriptCall) -> Any:
        if call.role == "debater":
            prompts[(call.agent, call.round)] = call.prompt
        return answer_role(call, debater_label=0 if call.round > 1 else
                           {"rag": 0, "search": 1, "vanilla": 0}.get(call.agent, 0))

    spec = scenario(responder)
    out = await run(static_ctx(spec, debaters=["rag", "search", "vanilla"]))
    assert out["round"] == 2 and out["stopped_by"] == "consensus"
    vanilla = [t for t in out["turns"] if t["agent"] == "vanilla"]
    assert len(vanilla) == 2 and all(t["evidence"] == [] and t["query"] == "" for t in vanilla)
    assert "rag agent" in prompts[("vanilla", 2)] and "search agent" in prompts[("vanilla", 2)]
    assert out["scores"]["vanilla"][0]["faithfulness"] is None
    assert out["ledger"]["tool_calls"]["static"] == 4


async def test_consistency_scoring(scenario, static_ctx):
    judge_prompts: list[str] = []

    def responder(call: ScriptCall) -> Any:
        if call.role == "judge":
            judge_prompts.append(call.prompt)
        return answer_role(call, debater_label=0 if call.agent == "rag" else 1)

    spec = scenario(responder)
    out = await run(static_ctx(spec, scoring_mode="consistency", max_rounds=2))
    assert not any(r == "ragas" for r, _, _ in roles(spec))
    assert all(0.0 <= row["consistency"] <= 1.0 for rows in out["scores"].values() for row in rows)
    assert "consistency score" in judge_prompts[0] and "consistency=" in judge_prompts[0]


async def test_inner_turn_nodes_stream_under_the_turn_namespace(scenario, static_ctx):
    spec = scenario(lambda call: answer_role(call, debater_label=0))
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    seen: set[tuple[str, str]] = set()
    async for namespace, update in graph.astream(
            {"claim": CLAIM}, {"configurable": {"thread_id": "s"}}, context=static_ctx(spec),
            subgraphs=True, stream_mode="updates"):
        outer = namespace[0].split(":")[0] if namespace else ""
        seen |= {(outer, node) for node in update}
    assert {("debate_turn", n) for n in ("formulate_query", "retrieve", "respond", "score")} <= seen
    assert ("", "debate_turn") in seen and ("", "check_consensus") in seen


async def test_resume_mid_round_restores_state_and_redoes_only_that_round(scenario, static_ctx):
    # the CLI's lean turns run without inner checkpoints (graphs/turns.py): the resume point is
    # the turn, and the sibling turn cancelled by the failing one's error is redone too
    failed = {"done": False}

    def responder(call: ScriptCall) -> Any:
        if call.role == "debater" and call.agent == "search" and call.round == 2 \
                and not failed["done"]:
            failed["done"] = True
            raise ScriptFault("provider went away")
        return answer_role(call, debater_label=0 if call.agent == "rag" else 1)

    spec = scenario(responder)
    ctx = static_ctx(spec, max_rounds=2, llm_retries=0)
    graph, config = await failed_run(ctx, "resume", turns="lean")
    snapshot = await graph.aget_state(config)
    assert snapshot.values["round"] == 2
    assert len(snapshot.values["turns"]) == 2  # round 1 restored from the checkpoint
    assert snapshot.next == ("debate_turn", "debate_turn")
    before = roles(spec)
    out = await graph.ainvoke(None, config, context=ctx)
    after = roles(spec)[len(before):]
    assert out["stopped_by"] == "judge" and out["round"] == 2
    assert not any(r == 1 for _, _, r in after)  # round 1 never re-runs
    for agent in ("rag", "search"):  # each interrupted turn starts over exactly once
        assert after.count(("query", agent, 2)) == 1 and after.count(("debater", agent, 2)) == 1
    assert len(out["turns"]) == 4


async def test_resume_after_judge_fault_runs_only_the_judge(scenario, static_ctx):
    failed = {"done": False}

    def responder(call: ScriptCall) -> Any:
        if call.role == "judge" and not failed["done"]:
            failed["done"] = True
            raise ScriptFault("judge timed out")
        return answer_role(call, debater_label=0 if call.agent == "rag" else 1)

    spec = scenario(responder)
    ctx = static_ctx(spec, max_rounds=2, llm_retries=0)
    graph, config = await failed_run(ctx, "judge-fault")
    assert (await graph.aget_state(config)).next == ("judge",)
    before = roles(spec)
    out = await graph.ainvoke(None, config, context=ctx)
    assert roles(spec)[len(before):] == [("judge", "", 2)]
    assert out["stopped_by"] == "judge" and len(out["turns"]) == 4


async def test_bad_input_is_rejected_before_any_model_call(scenario, static_ctx):
    from factdebate.core.errors import InputError

    spec = scenario(lambda call: answer_role(call, debater_label=0))
    with pytest.raises(InputError, match="empty"):
        await run(static_ctx(spec), payload={"claim": "   \n\t"})
    assert roles(spec) == []


def test_claim_of_reads_the_prompt_subject():
    from langchain_core.messages import HumanMessage

    call = ScriptCall(0, "query", "rag", 1, None, [HumanMessage("Claim: X is Y.\nmore")])
    assert claim_of(call) == "X is Y."
