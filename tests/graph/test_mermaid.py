"""MERMAID control flow with the scripted model, in-process tools and an in-memory store."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from factdebate.core.models import load_model
from factdebate.graphs.mermaid import build_mermaid
from factdebate.nodes.mermaid.memory import NO_ENTITIES_FLAG, NO_STORE_FLAG, run_memory_namespace
from factdebate.nodes.mermaid.state import MermaidContext
from factdebate.testing.scenarios import verdict
from factdebate.testing.scripted import ScriptCall
from factdebate.tools.evidence_memory import EvidenceMemory

CLAIM = "The Eiffel Tower is in Paris."
TRIPLETS = {
    CLAIM: [{"subject": "Eiffel Tower", "relation": "is in", "object": "Paris"}],
    "The Eiffel Tower was completed in 1889.": [
        {"subject": "Eiffel Tower", "relation": "was completed", "object": "",
         "attributes": "in 1889"}],
}


def ctx_for(spec: str, **overrides: Any) -> MermaidContext:
    return MermaidContext(debater_model=spec, tool_provider="in_process", wiki_backend="static",
                          search_backend="static", **overrides)


async def run(ctx: MermaidContext, claim: str = CLAIM, *, store: Any = None,
              saver: Any = None, thread: str = "t1") -> dict:
    graph = build_mermaid().compile(checkpointer=saver or InMemorySaver(), store=store)
    return await graph.ainvoke({"claim": claim}, {"configurable": {"thread_id": thread}},
                               context=ctx)


def decomposer_reply(call: ScriptCall) -> dict:
    claim = call.prompt.split("Claim: ")[-1].splitlines()[0].strip()
    return {"triplets": TRIPLETS.get(claim, []), "topic": "landmarks"}


def searching_responder(prompts: list[str]) -> Any:
    """Search Wikipedia once unless memory or an observation already answers the claim."""

    def respond(call: ScriptCall) -> Any:
        if call.role == "decomposer":
            return decomposer_reply(call)
        if call.role == "force_answer":
            return verdict(call, 1, "Forced after T_max steps.")
        prompts.append(call.prompt)
        if "wrought-iron" in call.prompt:  # evidence (memory or observation) is in the prompt
            return {"thought": "The evidence places the tower in Paris.", "answer": "SUPPORTS"}
        return {"thought": "I need the article.",
                "action": {"name": "search_wikipedia", "reason": "find the tower",
                           "input": "Eiffel Tower"}}

    return respond


def roles(spec: str) -> list[str]:
    return [c.role for c in load_model(spec).timeline]


async def test_tool_call_then_answer_and_memory_write(scenario):
    prompts: list[str] = []
    spec = scenario(searching_responder(prompts))
    store = InMemoryStore()
    out = await run(ctx_for(spec), store=store)
    assert out["stopped_by"] == "answer" and out["label"] == "SUPPORTS"
    assert out["round"] == 2
    first, second = out["turns"]
    assert first["action"] == "search_wikipedia" and first["query"] == "Eiffel Tower"
    assert first["evidence"][0]["title"] == "Eiffel Tower"
    assert second["label"] == "SUPPORTS" and second["parse"] == "explicit"
    assert roles(spec) == ["decomposer", "executor", "executor"]
    assert "Observation:" in prompts[1] and "wrought-iron" in prompts[1]
    assert "(Eiffel Tower; is in; Paris)" in prompts[0]  # decomposition as background
    assert "search_wikipedia: Search Wikipedia" in prompts[0]
    assert out["ledger"]["tool_calls"] == {"search_wikipedia": 1}
    assert out["ledger"]["memory_hits"] == 0 and out["ledger"]["memory_writes"] >= 1
    namespace = run_memory_namespace(ctx_for(spec), None)  # the CLI's memory of this index
    stored = await EvidenceMemory(store, namespace).recall(["eiffel tower"], limit=10)
    assert any("wrought-iron" in r["text"] and r["source"] == "search_wikipedia"
               and r["query"] == "Eiffel Tower" and r["timestamp"] for r in stored)


async def test_every_step_is_checkpointed(scenario):
    spec = scenario(searching_responder([]))
    saver = InMemorySaver()
    await run(ctx_for(spec), saver=saver, thread="steps")
    graph = build_mermaid().compile(checkpointer=saver)
    history = [s async for s in graph.aget_state_history({"configurable": {"thread_id": "steps"}})]
    nexts = [s.next for s in reversed(history)]
    assert ("execute_step",) in nexts and ("call_tool",) in nexts
    assert nexts.count(("execute_step",)) == 2  # one checkpoint before each ReAct step


async def test_forced_answer_at_t_max(scenario):
    def respond(call: ScriptCall) -> Any:
        if call.role == "decomposer":
            return decomposer_reply(call)
        if call.role == "force_answer":
            return verdict(call, 1, "Forced after T_max steps.")
        return {"thought": "More evidence.", "action": {"name": "get_summary",
                                                         "input": "Eiffel Tower"}}

    spec = scenario(respond)
    out = await run(ctx_for(spec, t_max=3))
    assert out["stopped_by"] == "forced_at_t_max" and out["label"] == "REFUTES"
    assert out["round"] == 3 and len(out["turns"]) == 3
    assert roles(spec) == ["decomposer", "executor", "executor", "executor", "force_answer"]
    assert out["ledger"]["tool_calls"] == {"get_summary": 3}
    assert all(t["evidence"][0]["source"] == "summary" for t in out["turns"])
    assert NO_STORE_FLAG in out["flags"]


async def test_memory_recall_saves_tool_calls_on_a_second_claim(scenario):
    prompts: list[str] = []
    spec = scenario(searching_responder(prompts))
    store = InMemoryStore()
    first = await run(ctx_for(spec), store=store, thread="c1")
    prompts.clear()
    second = await run(ctx_for(spec), "The Eiffel Tower was completed in 1889.", store=store,
                       thread="c2")
    assert sum(first["ledger"]["tool_calls"].values()) == 1
    assert sum(second["ledger"]["tool_calls"].values()) == 0
    assert second["ledger"]["memory_hits"] >= 1
    assert "Memory (evidence recalled" in prompts[0] and "search_wikipedia: Eiffel Tower" \
        in prompts[0]
    assert second["round"] == 1 and second["stopped_by"] == "answer"


async def test_decomposer_off(scenario):
    prompts: list[str] = []
    spec = scenario(searching_responder(prompts))
    store = InMemoryStore()
    out = await run(ctx_for(spec, decomposer=False), store=store)
    assert "decomposer" not in roles(spec)
    assert "Background: (no decomposition)" in prompts[0]
    assert NO_ENTITIES_FLAG in out["flags"]
    assert out["label"] == "SUPPORTS" and out["ledger"]["tool_calls"] == {"search_wikipedia": 1}
    assert "memory_writes" not in out["ledger"]
    assert await store.asearch(("mermaid", "evidence"), limit=5) == []


async def test_memory_only_offers_no_tools(scenario):
    store = InMemoryStore()
    namespace = run_memory_namespace(ctx_for("scripted:agree"), None)  # the CLI's memory
    await EvidenceMemory(store, namespace).update(["Eiffel Tower"], [
        {"query": "Eiffel Tower", "source": "get_summary", "id": "p1", "title": "Eiffel Tower",
         "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris.", "url": ""}])
    prompts: list[str] = []

    def respond(call: ScriptCall) -> Any:
        if call.role == "decomposer":
            return decomposer_reply(call)
        prompts.append(call.prompt)
        if call.round == 1:  # tries a tool anyway
            return {"thought": "Search.", "action": {"name": "search_web", "input": "Eiffel"}}
        return {"thought": "Memory says Paris.", "answer": "SUPPORTS"}

    spec = scenario(respond)
    out = await run(ctx_for(spec, memory_only=True), store=store)
    assert "Available tools: (none" in prompts[0] and "wrought-iron" in prompts[0]
    assert out["ledger"]["tool_calls"] == {}
    assert out["ledger"]["tool_faults"] == {"search_web": 1}
    assert any("search_web" in f and "not available" in f for f in out["flags"])
    assert out["label"] == "SUPPORTS" and out["round"] == 2
    assert out["ledger"]["memory_hits"] == 1 and out["ledger"]["memory_writes"] == 0


async def test_unreadable_step_counts_and_non_label_answer_is_flagged(scenario):
    def respond(call: ScriptCall) -> Any:
        if call.role == "decomposer":
            return "not json"
        if call.role == "force_answer":
            return verdict(call, 0, "Forced.")
        return {"thought": "?", "answer": "perhaps"} if call.round == 1 else "garbage"

    spec = scenario(respond)
    out = await run(ctx_for(spec, t_max=2, llm_retries=0))
    assert out["stopped_by"] == "forced_at_t_max" and out["label"] == "SUPPORTS"
    assert [t["parse"] for t in out["turns"]] == ["failed", "failed"]
    assert any(f.startswith("decomposer: reply could not be read") for f in out["flags"])
    assert any("'perhaps' is not a label" in f for f in out["flags"])
    assert out["ledger"]["tool_calls"] == {}
