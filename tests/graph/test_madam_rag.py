"""MADAM-RAG control flow with the scripted model, the static retriever and an in-memory saver."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.models import load_model
from factdebate.graphs.madam_rag import build_madam_rag
from factdebate.nodes.madam_rag.aggregate import parse_aggregate
from factdebate.nodes.madam_rag.answer_from_document import parse_agent_reply
from factdebate.nodes.madam_rag.state import MadamRagContext
from factdebate.testing.scenarios import madam_role
from factdebate.testing.scripted import ScriptCall, ScriptFault

QUESTION = "In which year was Michael Jordan born?"
DOCS = [
    {"text": "Michael Jeffrey Jordan (born February 17, 1963) is a basketball player.",
     "type": "correct", "answer": "1963"},
    {"text": "Michael Irwin Jordan (born February 25, 1956) is a Berkeley professor.",
     "type": "correct", "answer": "1956"},
    {"text": "Jordan played college basketball with the North Carolina Tar Heels.",
     "type": "noise", "answer": "unknown"},
]
YEAR = {"1963": "1963", "1956": "1956"}


def ctx_for(spec: str, **overrides: Any) -> MadamRagContext:
    return MadamRagContext(debater_model=spec, rag_backend="static", search_backend="static",
                           **overrides)


async def run(ctx: MadamRagContext, payload: dict, *, saver: Any = None,
              thread: str = "t1") -> dict:
    graph = build_madam_rag().compile(checkpointer=saver or InMemorySaver())
    return await graph.ainvoke(payload, {"configurable": {"thread_id": thread}}, context=ctx)


async def failed_run(ctx: MadamRagContext, thread: str) -> tuple[Any, dict]:
    """A run of :func:`open_item` on ``thread`` that the scripted fault ends: the graph on its
    checkpoints and the thread's config, to resume it with."""
    saver = InMemorySaver()
    with pytest.raises(ScriptFault):
        await run(ctx, open_item(), saver=saver, thread=thread)
    return build_madam_rag().compile(checkpointer=saver), {"configurable": {"thread_id": thread}}


def calls(spec: str) -> list[tuple[str, str, int]]:
    return [(c.role, c.agent, c.round) for c in load_model(spec).timeline]


def year_of(prompt: str) -> str:
    """The year the agent's own document states ('unknown' if none)."""
    document = prompt.split("Document:", 1)[1].split("</document>", 1)[0]
    return next((y for y in YEAR if y in document), "unknown")


def open_item() -> dict:
    return {"claim": QUESTION, "task": "open_qa", "documents": DOCS}


async def test_one_agent_per_document_and_stop_when_no_answer_changes(scenario):
    prompts: dict[tuple[str, str, int], str] = {}

    def responder(call: ScriptCall) -> Any:
        prompts[(call.role, call.agent, call.round)] = call.prompt
        return madam_role(call, answer="SUPPORTS")

    spec = scenario(responder)
    out = await run(ctx_for(spec, max_rounds=3),
                    {"claim": "Jordan played basketball.", "documents": DOCS})
    assert out["stopped_by"] == "no_change" and out["round"] == 2
    seq = calls(spec)
    for r in (1, 2):
        assert sorted(a for role, a, rr in seq if role == "agent" and rr == r) == \
            ["doc1", "doc2", "doc3"]
    assert [c for c in seq if c[0] == "aggregator"] == [("aggregator", "", 1),
                                                         ("aggregator", "", 2)]
    assert out["answers"] == ["SUPPORTS"] and out["label"] == "SUPPORTS"
    assert out["ledger"]["tool_calls"] == {}  # the item's documents: no retrieval
    # each agent reads its own document only; dataset annotations never reach a prompt
    own = prompts[("agent", "doc2", 1)]
    assert DOCS[1]["text"] in own and DOCS[0]["text"] not in own and DOCS[2]["text"] not in own
    assert "misinfo" not in own and "noise" not in own and "'type'" not in own
    assert [e["text"] for t in out["turns"] if t["agent"] == "doc3" for e in t["evidence"]] == \
        [DOCS[2]["text"]] * 2
    assert "All Correct Answers" in prompts[("agent", "doc1", 2)]  # (y, e) of round 1
    assert "All Correct Answers" not in prompts[("agent", "doc1", 1)].split("Document:")[1]
    assert out["scores"] == {}


async def test_answers_that_keep_changing_run_all_t_rounds(scenario):
    def responder(call: ScriptCall) -> Any:
        if call.role == "aggregator":
            return {"answers": [f"year {call.round}"], "explanation": f"expl-{call.round}"}
        return {"answer": f"year {call.round}", "explanation": "the document"}

    spec = scenario(responder)
    out = await run(ctx_for(spec, max_rounds=3), open_item())
    assert out["stopped_by"] == "max_rounds" and out["round"] == 3
    assert sum(role == "agent" for role, _, _ in calls(spec)) == 9
    assert out["answers"] == ["year 3"] and out["label"] is None and out["rationale"] == "expl-3"
    assert len(out["turns"]) == 9 and all(t["parse"] == "structured" for t in out["turns"])


async def test_aggregator_off_concatenates_the_answers(scenario):
    prompts: dict[tuple[str, str, int], str] = {}

    def responder(call: ScriptCall) -> Any:
        prompts[(call.role, call.agent, call.round)] = call.prompt
        return f"Answer: {year_of(call.prompt)}. Explanation: from my document."  # free text

    spec = scenario(responder)
    out = await run(ctx_for(spec, aggregator=False), open_item())
    assert not any(role == "aggregator" for role, _, _ in calls(spec))
    assert out["answers"] == ["1963", "1956"] and out["label"] is None
    assert out["stopped_by"] == "no_change" and out["round"] == 2
    assert "Answer: 1956" in out["rationale"] and "Answer: unknown" in out["rationale"]
    assert "Answer: 1956" in prompts[("agent", "doc1", 2)]  # the concatenation is shared
    assert all(t["parse"] == "explicit" for t in out["turns"])


async def test_aggregator_reads_shuffled_responses_and_keeps_every_answer(scenario):
    orders: list[list[str]] = []

    def responder(call: ScriptCall) -> Any:
        if call.role == "aggregator":
            responses = call.prompt.rsplit("Agent responses:", 1)[1]
            orders.append([y for y in ("1963", "1956", "unknown") if y in responses])
            orders[-1].sort(key=responses.index)
            return 'All Correct Answers: ["1963", "1956"]. Explanation: two people.'
        return {"answer": year_of(call.prompt), "explanation": "from my document"}

    spec = scenario(responder)
    first = await run(ctx_for(spec, max_rounds=1), open_item(), thread="a")
    again = await run(ctx_for(spec, max_rounds=1), open_item(), thread="b")
    assert first["answers"] == ["1963", "1956"] and first["rationale"] == "two people."
    assert first["stopped_by"] == "max_rounds" and again["answers"] == first["answers"]
    assert sorted(orders[0]) == sorted(["1963", "1956", "unknown"])
    assert orders[0] == orders[1]  # seeded: the same shuffle for the same item and round


async def test_items_without_documents_retrieve_top_k(scenario):
    spec = scenario(lambda call: madam_role(call, answer="SUPPORTS"))
    claim = "The Eiffel Tower is in Paris."
    out = await run(ctx_for(spec, num_documents=2), {"claim": claim})
    assert out["ledger"]["tool_calls"] == {"static": 1}
    round_one = [t for t in out["turns"] if t["round"] == 1]
    assert sorted(t["agent"] for t in round_one) == ["doc1", "doc2"]
    assert all(t["query"] == claim and t["evidence"][0]["source"] == "static" for t in round_one)
    assert out["label"] == "SUPPORTS"


async def test_resume_after_an_agent_fault_reruns_only_that_agent(scenario):
    failed = {"done": False}

    def responder(call: ScriptCall) -> Any:
        if call.role == "agent" and call.agent == "doc2" and call.round == 2 \
                and not failed["done"]:
            failed["done"] = True
            raise ScriptFault("provider went away")
        if call.role == "aggregator":
            return {"answers": ["1963", "1956"], "explanation": "two people"}
        return {"answer": year_of(call.prompt), "explanation": "from my document"}

    spec = scenario(responder)
    ctx = ctx_for(spec, llm_retries=0)
    graph, config = await failed_run(ctx, "resume")
    snapshot = await graph.aget_state(config)
    turns = snapshot.values["turns"]
    assert snapshot.values["round"] == 2 and sum(t["round"] == 1 for t in turns) == 3
    # round 2: doc2 failed; a sibling that finished before the fault may already be recorded
    assert {t["agent"] for t in turns if t["round"] == 2} <= {"doc1", "doc3"}
    before = calls(spec)
    out = await graph.ainvoke(None, config, context=ctx)
    after = calls(spec)[len(before):]
    assert after.count(("agent", "doc2", 2)) == 1
    assert not any(r == 1 for _, _, r in after)  # round 1 comes from the checkpoint
    # siblings that finished before the fault keep their checkpointed writes; those still
    # running were cancelled and run once more - no agent answers twice in the result
    assert all(after.count(("agent", a, 2)) <= 1 for a in ("doc1", "doc3"))
    assert after[-1] == ("aggregator", "", 2)
    assert out["stopped_by"] == "no_change" and out["round"] == 2
    assert out["answers"] == ["1963", "1956"] and len(out["turns"]) == 6
    assert sorted((t["agent"], t["round"]) for t in out["turns"]) == \
        [(f"doc{i}", r) for i in (1, 2, 3) for r in (1, 2)]


async def test_resume_after_an_aggregator_fault_runs_only_the_aggregator(scenario):
    failed = {"done": False}

    def responder(call: ScriptCall) -> Any:
        if call.role == "aggregator" and call.round == 2 and not failed["done"]:
            failed["done"] = True
            raise ScriptFault("aggregator timed out")
        return madam_role(call, answer="1963")

    spec = scenario(responder)
    ctx = ctx_for(spec, llm_retries=0)
    graph, config = await failed_run(ctx, "agg-fault")
    assert (await graph.aget_state(config)).next == ("aggregate",)
    before = calls(spec)
    out = await graph.ainvoke(None, config, context=ctx)
    assert calls(spec)[len(before):] == [("aggregator", "", 2)]
    assert out["stopped_by"] == "no_change" and out["answers"] == ["1963"]
    assert len(out["turns"]) == 6


def test_reply_parsers():
    assert parse_agent_reply("Answer: 1963. Explanation: born then.") == ("1963", "born then.")
    assert parse_agent_reply("answer: [Lake Placid]") == ("Lake Placid", "")
    assert parse_agent_reply("I think so") is None
    assert parse_aggregate('All Correct Answers: ["1963", "1956"]. Explanation: two.') == \
        (["1963", "1956"], "two.")
    assert parse_aggregate("All Correct Answers: [unknown]. Explanation: none") == \
        (["unknown"], "none")
    assert parse_aggregate("no format") is None
