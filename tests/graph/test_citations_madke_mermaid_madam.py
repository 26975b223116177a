"""MADKE, MERMAID and MADAM-RAG cite what their verdicts rest on, scripted double.

For each graph, under the built-in scenarios:
* every passage of ``verdict_evidence`` was cited - per its ``cited_by`` - by the deciding reply or
  by a reply whose label (answers) became the verdict, and the verdict rests on something;
* ``?cite=wrong``: the unshown number is dropped (never evidence), flagged and counted;
* ``retrieved_evidence`` holds no cited passage.

Then each framework's numbering: a MADKE debater cites its selected knowledge by the numbers its
own prompt shows (not the pool's); MERMAID's answer cites memory and observations under one
numbering across the whole history; the MADAM-RAG aggregator cites the documents behind the
responses, numbered as the responses are, and only the final aggregate decides.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from factdebate.core.citations import passage_key
from factdebate.graphs.madam_rag import build_madam_rag
from factdebate.graphs.madke import build_madke
from factdebate.graphs.mermaid import build_mermaid
from factdebate.graphs.registry import build_framework
from factdebate.nodes.mermaid.memory import run_memory_namespace
from factdebate.testing.scenarios import madke_role, verdict
from factdebate.testing.scripted import ScriptCall
from factdebate.tools.evidence_memory import EvidenceMemory
from tests.graph.test_madam_rag import DOCS as JORDAN_DOCS
from tests.graph.test_madam_rag import QUESTION, year_of
from tests.graph.test_madam_rag import ctx_for as madam_ctx
from tests.graph.test_madke import ctx_for as madke_ctx
from tests.graph.test_madke import pool_titles
from tests.graph.test_mermaid import ctx_for as mermaid_ctx
from tests.graph.test_scripted_every_framework import CLAIM, DOCUMENTS, context_for

FRAMEWORKS = ["madke", "mermaid", "madam_rag"]
_DOC = re.compile(r'<document n="(\d+)" title="([^"]*)">')


async def run(name: str, spec: str) -> dict[str, Any]:
    graph = build_framework(name).compile(checkpointer=InMemorySaver())
    return await graph.ainvoke({"claim": CLAIM, "documents": DOCUMENTS},
                               {"configurable": {"thread_id": f"{name}-{spec}"}},
                               context=context_for(name, spec))


def keys(passages: list[dict[str, Any]]) -> set[str]:
    return {passage_key(p) for p in passages}


def who(record: dict[str, Any]) -> str:
    """How ``cited_by`` names the citing reply (core/citations.evidence_behind_verdict)."""
    return record["by"] if record["decides"] or not record["round"] \
        else f"{record['by']}@{record['round']}"


def on_verdict_side(record: dict[str, Any], out: dict[str, Any]) -> bool:
    if record["decides"]:
        return True
    if out.get("label") is not None:
        return record["label"] == out["label"]
    final = {a.casefold().strip() for a in out.get("answers") or []}
    return bool(final & {a.casefold().strip() for a in record["answers"]})


def check_verdict_evidence(out: dict[str, Any]) -> None:
    """Every verdict passage was cited by who ``cited_by`` names, on the verdict's side;
    nothing cited is called retrieved."""
    records = out["citations"]
    for e in out["verdict_evidence"]:
        assert e["cited_by"] and e["stance"], e
        for name in e["cited_by"]:
            citing = [c for c in records if who(c) == name and passage_key(e) in keys(c["passages"])]
            assert citing, (e["id"], name, "no such citing reply")
            assert any(on_verdict_side(c, out) for c in citing), (e["id"], name, "off the verdict")
    cited = keys(out["verdict_evidence"])
    assert not cited & keys(out["retrieved_evidence"])
    every_cited = set().union(*(keys(c["passages"]) for c in records)) if records else set()
    assert cited <= every_cited  # no uncited passage is verdict evidence


@pytest.mark.parametrize("spec", ["scripted:agree", "scripted:disagree"])
@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_verdict_evidence_is_what_the_verdict_side_cited(name: str, spec: str):
    out = await run(name, spec)
    assert out["label"] or out.get("answers"), (name, out.get("flags"))
    assert out["verdict_evidence"], (name, "the verdict rests on no cited passage")
    check_verdict_evidence(out)
    assert out["ledger"]["replies_cited"] >= 1
    assert not any(f.startswith("citation: ") for f in out["flags"]), out["flags"]


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_an_unshown_number_is_dropped_and_flagged(name: str):
    out = await run(name, "scripted:disagree?cite=wrong")
    check_verdict_evidence(out)
    assert out["verdict_evidence"]
    assert out["ledger"]["citations_unshown"] >= 1
    assert any(f.startswith("citation: ") and "cited unshown" in f for f in out["flags"])
    shown = [c for c in out["citations"] if c["shown"]]
    assert shown and all(c["unshown"] for c in shown)  # the double cites n+5 in every reply
    for c in shown:
        assert all(int(n) > c["shown"] for n in c["unshown"]) and len(c["passages"]) <= c["shown"]
    # the dropped number became no passage: verdict evidence is only the shown ones cited
    assert keys(out["verdict_evidence"]) <= set().union(*(keys(c["passages"]) for c in shown))


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_uncited_verdicts_are_flagged_and_rest_on_nothing(name: str):
    out = await run(name, "scripted:agree?cite=none")
    assert out["verdict_evidence"] == []
    assert out["ledger"]["replies_uncited"] >= 1
    assert any(f.startswith("citation: ") and "uncited" in f for f in out["flags"])
    assert out["retrieved_evidence"]  # what was shown is still listed, as retrieved


# -- MADKE: the speaker's own numbering ------------------------------------------------------
async def test_madke_debater_cites_its_selection_by_its_own_prompts_numbers(scenario):
    prompts: dict[tuple[str, str, int], str] = {}

    def respond(call: ScriptCall) -> Any:
        prompts[(call.role, call.agent, call.round)] = call.prompt
        if call.role == "debater":  # 2 = its second selected item; 4 is a pool number only
            return {**verdict(call, 0, "The knowledge bears on it."), "citations": [2, 4]}
        return madke_role(call, selected=(2, 4))

    out = await build_madke().compile(checkpointer=InMemorySaver()).ainvoke(
        {"claim": "The Eiffel Tower is in Paris."}, {"configurable": {"thread_id": "m"}},
        context=madke_ctx(scenario(respond)))
    pool = await pool_titles()
    seen = prompts[("debater", "debater1", 1)]
    assert _DOC.findall(seen) == [("1", pool[1]), ("2", pool[3])]  # the selection, from 1
    debaters = [c for c in out["citations"] if c["role"] == "debater"]
    assert len(debaters) == 2
    for c in debaters:
        assert [p["title"] for p in c["passages"]] == [pool[3]] and c["unshown"] == ["4"]
        assert c["shown"] == 2 and c["label"] == out["label"]
    summary = [c for c in out["citations"] if c["decides"]]
    assert [(c["by"], c["shown"], c["passages"]) for c in summary] == [("summarizer", 0, [])]
    assert [e["title"] for e in out["verdict_evidence"]] == [pool[3]]
    assert sorted(out["verdict_evidence"][0]["cited_by"]) == ["debater1@1", "debater2@1"]
    retrieved = [e["title"] for e in out["retrieved_evidence"]]
    assert retrieved[0] == pool[1]  # shown to the debaters, not cited
    assert pool[3] not in retrieved and set(retrieved) == set(pool) - {pool[3]}  # the whole pool
    assert out["ledger"]["citations_unshown"] == 2
    turn = next(t for t in out["turns"] if t["agent"] == "debater1")
    assert turn["cited"] == [passage_key(out["verdict_evidence"][0])]
    check_verdict_evidence(out)


# -- MERMAID: one numbering across memory and every observation ----------------------------
async def test_mermaid_answer_cites_memory_and_observations_under_one_numbering(scenario):
    store = InMemoryStore()
    claim = "The Eiffel Tower is in Paris."
    memo = {"query": "Eiffel Tower", "source": "get_summary", "id": "m1", "title": "Eiffel Tower",
            "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris.", "url": ""}
    await EvidenceMemory(store, run_memory_namespace(mermaid_ctx("scripted:agree"), None)).update(
        ["Eiffel Tower"], [memo])
    prompts: list[str] = []

    def respond(call: ScriptCall) -> Any:
        if call.role == "decomposer":
            return {"triplets": [{"subject": "Eiffel Tower", "relation": "is in",
                                  "object": "Paris"}], "topic": "landmarks"}
        prompts.append(call.prompt)
        if len(prompts) <= 2:  # two searches whose results overlap
            query = "Eiffel Tower" if len(prompts) == 1 else "Paris capital of France Eiffel"
            return {"thought": "Search.", "action": {"name": "search_wikipedia", "input": query},
                    "citations": []}
        numbers = {title: n for n, title in _DOC.findall(call.prompt)}
        memory = next(n for t, n in numbers.items() if t.startswith("Eiffel Tower (memory"))
        return {"thought": f"Paris, per [{numbers['Paris']}].", "answer": "SUPPORTS",
                "citations": [int(numbers["Paris"]), int(memory), 40]}

    out = await build_mermaid().compile(checkpointer=InMemorySaver(), store=store).ainvoke(
        {"claim": claim}, {"configurable": {"thread_id": "n"}}, context=mermaid_ctx(scenario(respond)))
    assert out["stopped_by"] == "answer" and out["label"] == "SUPPORTS"
    last = prompts[-1]
    shown = _DOC.findall(last)
    assert shown[0][0] == "1" and shown[0][1].startswith("Eiffel Tower (memory: eiffel tower")
    by_title: dict[str, set[str]] = {}
    for n, title in shown:
        by_title.setdefault(title, set()).add(n)
    assert all(len(ns) == 1 for ns in by_title.values()), by_title  # one number per passage
    assert len(by_title["Paris"]) == 1 and sum(t == "Paris" for _, t in shown) == 2  # seen twice
    assert sorted({int(n) for n, _ in shown}) == list(range(1, len(by_title) + 1))
    [record] = out["citations"]
    assert record["decides"] and record["by"] == "executor" and record["unshown"] == ["40"]
    paris = next(e for t in out["turns"] for e in t["evidence"] if e["title"] == "Paris")
    assert [p["id"] for p in record["passages"]] == [paris["id"], "m1"]  # in citation order
    assert [e["id"] for e in out["verdict_evidence"]] == [paris["id"], "m1"]
    assert all(e["cited_by"] == ["executor"] and e["stance"] == "supports"
               for e in out["verdict_evidence"])
    observed = keys([e for t in out["turns"] for e in t["evidence"]])
    assert observed - keys(out["verdict_evidence"]) <= keys(out["retrieved_evidence"])
    assert any("cited unshown [40]" in f for f in out["flags"])
    check_verdict_evidence(out)


# -- MADAM-RAG: documents behind the responses; the final aggregate decides ----------------
async def test_madam_aggregator_cites_the_documents_behind_the_answers_it_keeps(scenario):
    aggregator_prompts: list[str] = []

    def respond(call: ScriptCall) -> Any:
        if call.role == "aggregator":
            aggregator_prompts.append(call.prompt)
            lines = re.findall(r"Agent \d+ \(document \[(\d+)\]\): Answer: (\w+)\.", call.prompt)
            keep = [int(d) for d, answer in lines if answer in ("1963", "1956")]
            every = [int(d) for d, _ in lines]
            return {"answers": ["1963", "1956"], "explanation": "Two people.",
                    "citations": every if call.round == 1 else keep}  # round 1 cites the noise
        year = year_of(call.prompt)
        return {"answer": year, "explanation": "From my document.",
                "citations": [1] if year != "unknown" else []}

    out = await build_madam_rag().compile(checkpointer=InMemorySaver()).ainvoke(
        {"claim": QUESTION, "task": "open_qa", "documents": JORDAN_DOCS},
        {"configurable": {"thread_id": "j"}}, context=madam_ctx(scenario(respond)))
    assert out["answers"] == ["1963", "1956"] and out["label"] is None
    assert out["stopped_by"] == "no_change" and len(aggregator_prompts) == 2
    # each response names the document its agent read, shown (its opening) under that number
    for prompt in aggregator_prompts:
        documents = dict(re.findall(r'<document n="(\d+)" title="[^"]*">([^<]*)</document>', prompt))
        lines = re.findall(r"Agent \d+ \(document \[(\d+)\]\): Answer: (\w+)\.", prompt)
        assert len(lines) == 3 and sorted(documents) == ["1", "2", "3"]
        for number, answer in lines:
            assert (answer in documents[number]) if answer != "unknown" else \
                not any(y in documents[number] for y in ("1963", "1956"))
    deciders = [c for c in out["citations"] if c["decides"]]
    assert len(deciders) == 1 and deciders[0]["by"] == "aggregator"
    assert deciders[0]["answers"] == ["1963", "1956"] and deciders[0]["shown"] == 3
    texts = {e["text"] for e in out["verdict_evidence"]}
    assert texts == {JORDAN_DOCS[0]["text"], JORDAN_DOCS[1]["text"]}  # not the noise document
    assert JORDAN_DOCS[2]["text"] in {e["text"] for e in out["retrieved_evidence"]}
    assert all(e["stance"] == "answers: 1963; 1956" for e in out["verdict_evidence"])
    agents = {c["by"]: c for c in out["citations"] if c["round"] == 2 and not c["decides"]}
    assert agents["doc1"]["answers"] == ["1963"] and agents["doc3"]["answers"] == []
    assert agents["doc3"]["passages"] == []  # 'unknown' cites nothing and is not flagged
    assert not any("uncited" in f for f in out["flags"])
    check_verdict_evidence(out)


async def test_item_documents_without_ids_are_not_listed_as_retrieved_when_cited():
    docs = ["Michael Jeffrey Jordan (born February 17, 1963) is a basketball player.",
            {"text": "Michael Irwin Jordan (born February 25, 1956) is a Berkeley professor."}]
    out = await build_madam_rag().compile(checkpointer=InMemorySaver()).ainvoke(
        {"claim": QUESTION, "task": "open_qa", "documents": docs},
        {"configurable": {"thread_id": "ids"}}, context=madam_ctx("scripted:agree"))
    cited = {e["text"] for e in out["verdict_evidence"]}
    assert cited and not cited & {e["text"] for e in out["retrieved_evidence"]}
