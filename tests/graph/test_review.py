"""The fact-checker's review before a verdict is final (nodes/review.py, graphs/finish.py).

With the scripted double: review off passes through (no interrupt, ``review`` None); on, the run
stops at ``review`` with the payload of the contract; ``approve``/``edit``/``reject`` give the
final state the contract names; a bad resume value interrupts again with the error and the
same draft; ``check_text`` reviews each claim in text order.
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from factdebate.core.errors import ConfigError, InputError
from factdebate.core.labels import LABEL_SETS
from factdebate.graphs.registry import build_framework, context_class
from factdebate.nodes.review import MAX_ATTEMPTS, check_decision

CLAIM = "The Eiffel Tower is located in Paris."
DOCUMENTS = [
    {"id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a tower in Paris, France.",
     "source": "item", "url": "", "score": 1.0},
    {"id": "d2", "title": "Paris", "text": "Paris is the capital of France.", "source": "item",
     "url": "", "score": 0.5},
]
TEST_DOUBLES = {"rag_backend": "static", "search_backend": "static", "tool_provider": "in_process",
                "wiki_backend": "static"}
FRAMEWORKS = ["tool_mad", "madke", "madam_rag", "cot", "rag"]
PAYLOAD_KEYS = {"kind", "claim", "framework", "draft", "labels", "error"}
DRAFT_KEYS = {"label", "rationale", "evidence", "summary", "scores"}
EVIDENCE_KEYS = {"id", "title", "text", "url", "page", "sentences"}
RECORD_KEYS = {"decision", "reviewer", "at", "note", "machine_label", "changed"}


def context_for(name: str, review: bool, **extra: Any) -> Any:
    cls = context_class(name)
    known = {f.name for f in fields(cls)}
    return cls(debater_model="scripted:agree", review=review,
               **{k: v for k, v in {**TEST_DOUBLES, **extra}.items() if k in known})


class Run:
    """One framework on an in-memory saver: start, resume, read the pending interrupt."""

    def __init__(self, name: str, review: bool = True, **extra: Any) -> None:
        self.name = name
        self.graph = build_framework(name).compile(checkpointer=InMemorySaver())
        self.config = {"configurable": {"thread_id": f"t-{name}"},
                       "metadata": {"framework": name}}
        self.ctx = context_for(name, review, **extra)

    async def start(self, item: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.graph.ainvoke(item or {"claim": CLAIM, "documents": DOCUMENTS},
                                        self.config, context=self.ctx)

    async def resume(self, value: Any) -> dict[str, Any]:
        return await self.graph.ainvoke(Command(resume=value), self.config, context=self.ctx)

    def pending(self, out: dict[str, Any]) -> dict[str, Any]:
        (only,) = out["__interrupt__"]
        return only.value


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_review_off_passes_through(name: str):
    run = Run(name, review=False)
    out = await run.start()
    assert "__interrupt__" not in out
    assert out["review"] is None and out["label"] is not None
    assert not (await run.graph.aget_state(run.config)).next


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_review_on_interrupts_with_the_contract(name: str):
    run = Run(name)
    out = await run.start()
    payload = run.pending(out)
    assert set(payload) == PAYLOAD_KEYS and payload["kind"] == "review"
    assert payload["claim"] == CLAIM and payload["framework"] == name and payload["error"] == ""
    assert set(payload["draft"]) == DRAFT_KEYS
    assert payload["labels"] == list(LABEL_SETS.get("fever").labels)
    state = (await run.graph.aget_state(run.config))
    assert state.next == ("review",)
    values = state.values
    assert payload["draft"]["label"] == values["label"]
    assert payload["draft"]["rationale"] == values["rationale"]
    assert [e["id"] for e in payload["draft"]["evidence"]] == [
        e["id"] for e in values["verdict_evidence"]]
    assert all(set(e) == EVIDENCE_KEYS for e in payload["draft"]["evidence"])
    summary = payload["draft"]["summary"]
    assert f"Machine verdict: {values['label']}." in summary and "round" in summary
    assert isinstance(payload["draft"]["scores"], dict)


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_approve_keeps_the_verdict(name: str):
    run = Run(name)
    machine = run.pending(await run.start())["draft"]
    out = await run.resume({"decision": "approve", "reviewer": "ana", "note": "checked"})
    assert "__interrupt__" not in out
    assert out["label"] == machine["label"] and out["rationale"] == machine["rationale"]
    review = out["review"]
    assert set(review) == RECORD_KEYS
    assert review["decision"] == "approve" and review["reviewer"] == "ana"
    assert review["note"] == "checked" and review["machine_label"] == machine["label"]
    assert review["changed"] == {"label": None, "rationale": False, "evidence_ids": None}
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$", review["at"])


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_edit_replaces_label_rationale_and_evidence(name: str):
    run = Run(name)
    payload = run.pending(await run.start())
    machine = payload["draft"]["label"]
    new = next(lab for lab in payload["labels"] if lab != machine)
    state = (await run.graph.aget_state(run.config)).values
    ids = [e["id"] for e in [*state["verdict_evidence"], *state["retrieved_evidence"]]][-1:]
    out = await run.resume({"decision": "edit", "label": new, "rationale": "The census says so.",
                            "evidence_ids": ids, "reviewer": "bo"})
    assert out["label"] == new and out["rationale"] == "The census says so."
    assert [e["id"] for e in out["verdict_evidence"]] == ids
    assert not {e["id"] for e in out["retrieved_evidence"]} & set(ids)
    assert out["review"]["changed"] == {"label": [machine, new], "rationale": True,
                                        "evidence_ids": ids or None} or not ids
    assert out["review"]["decision"] == "edit" and out["review"]["machine_label"] == machine


@pytest.mark.parametrize("name", ["tool_mad", "standard"])
async def test_reject_keeps_the_machine_label(name: str):
    run = Run(name)
    machine = run.pending(await run.start())["draft"]["label"]
    out = await run.resume({"decision": "reject", "reviewer": "cy", "note": "not checkable"})
    assert out["label"] == machine
    assert out["review"]["decision"] == "reject" and out["review"]["note"] == "not checkable"
    assert out["review"]["changed"]["label"] is None


BAD = [  # (resume value, words the error names)
    ("approve", "must be an object"),
    ({"decision": "publish", "reviewer": "a"}, "decision must be one of"),
    ({"decision": "approve"}, "reviewer is required"),
    ({"decision": "approve", "reviewer": "   "}, "reviewer is required"),
    ({"decision": "approve", "reviewer": "x" * 201}, "over 200"),
    ({"decision": "edit", "reviewer": "a"}, "needs a label"),
    ({"decision": "edit", "reviewer": "a", "label": "MAYBE"}, "not in the label set"),
    ({"decision": "edit", "reviewer": "a", "label": "REFUTES", "evidence_ids": ["nope"]},
     "unknown evidence id"),
    ({"decision": "edit", "reviewer": "a", "label": "REFUTES", "evidence_ids": "d1"},
     "must be a list"),
    ({"decision": "approve", "reviewer": 7}, "reviewer is required"),
    ({"decision": "approve", "reviewer": "a", "note": 3}, "note must be text"),
    ({"decision": "approve", "reviewer": "a", "note": "n" * 2001}, "over 2000"),
    ({"decision": "approve", "reviewer": "a", "publish": True}, "unknown key"),
    ({"decision": "approve", "reviewer": "a", "rationale": "x"}, "only with decision 'edit'"),
]


@pytest.mark.parametrize(("value", "words"), BAD, ids=[w for _, w in BAD])
async def test_a_bad_resume_interrupts_again_with_the_error_and_the_same_draft(value: Any,
                                                                               words: str):
    run = Run("cot")
    first = run.pending(await run.start())
    again = run.pending(await run.resume(value))
    assert words in again["error"], again["error"]
    assert {**again, "error": ""} == first
    out = await run.resume({"decision": "approve", "reviewer": "ana"})  # nothing was lost
    assert out["review"]["decision"] == "approve" and out["label"] == first["draft"]["label"]


async def test_bad_resumes_are_bounded():
    run = Run("standard")
    await run.start()
    for _ in range(MAX_ATTEMPTS - 1):
        assert run.pending(await run.resume({"decision": "?"}))["error"]
    with pytest.raises(InputError, match="unusable decisions"):
        await run.resume({"decision": "?"})


async def test_review_without_a_checkpointer_is_one_clear_error():
    graph = build_framework("standard").compile()
    with pytest.raises(ConfigError, match="needs a checkpointer"):
        await graph.ainvoke({"claim": CLAIM}, context=context_for("standard", True))


def test_check_decision_accepts_nulls_for_optional_fields():
    decision, error = check_decision({"decision": "approve", "reviewer": " ana ", "note": None,
                                      "label": None, "evidence_ids": None}, ["SUPPORTS"], [],
                                     "SUPPORTS")
    assert error == "" and decision == {"decision": "approve", "reviewer": "ana", "note": "",
                                        "label": None, "rationale": None, "evidence_ids": None}


TEXT = "The Eiffel Tower is in Paris. The Louvre is in Paris."


async def test_check_text_reviews_each_claim_in_order():
    run = Run("check_text", verifier_settings={"max_rounds": 1})
    first = run.pending(await run.start({"text": TEXT}))
    assert first["framework"] == "tool_mad" and set(first) == PAYLOAD_KEYS
    second = run.pending(await run.resume({"decision": "approve", "reviewer": "ana"}))
    assert second["claim"] != first["claim"] and second["error"] == ""
    bad = run.pending(await run.resume({"decision": "edit", "reviewer": "ana"}))
    assert bad["claim"] == second["claim"] and "needs a label" in bad["error"]
    out = await run.resume({"decision": "edit", "reviewer": "ana", "label": "REFUTES"})
    assert "__interrupt__" not in out
    claims = out["check"]["claims"]
    reviews = {c["claim"]: c["review"] for c in claims if c.get("review")}
    assert reviews[first["claim"]]["decision"] == "approve"
    assert reviews[second["claim"]]["decision"] == "edit"
    assert next(c for c in claims if c["claim"] == second["claim"])["label"] == "REFUTES"
    assert out["label"] == "REFUTES"  # the reviewed verdicts are what the text is judged on


async def test_check_text_without_review_passes_through():
    run = Run("check_text", review=False, verifier_settings={"max_rounds": 1})
    out = await run.start({"text": TEXT})
    assert "__interrupt__" not in out
    assert all(c.get("review") is None for c in out["check"]["claims"])


async def test_a_plain_python_run_names_its_framework_from_its_context():
    """No engine or server metadata: the framework whose Context class the run has."""
    run = Run("madke")
    run.config = {"configurable": {"thread_id": "plain"}}
    assert run.pending(await run.start())["framework"] == "madke"


async def test_check_text_resumed_without_its_context_still_reviews_every_claim():
    """A server client resumes with ``Command(resume=...)`` alone: the run's Context is then the
    defaults (review off), and the recorded ``review_on`` keeps every claim's review."""
    run = Run("check_text", verifier_settings={"max_rounds": 1})
    first = run.pending(await run.start({"text": TEXT}))
    defaults = context_for("check_text", False, verifier_settings={"max_rounds": 1})
    out = await run.graph.ainvoke(Command(resume={"decision": "approve", "reviewer": "ana"}),
                                  run.config, context=defaults)
    second = run.pending(out)  # the second claim still waits for its reviewer
    assert second["claim"] != first["claim"]
    out = await run.graph.ainvoke(Command(resume={"decision": "reject", "reviewer": "ana"}),
                                  run.config, context=defaults)
    reviews = [c["review"]["decision"] for c in out["check"]["claims"] if c.get("review")]
    assert reviews == ["approve", "reject"]
