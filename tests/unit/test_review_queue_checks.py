"""The review queue's checks without a server: teams (``FACTDEBATE_TEAMS``), the resume value's
shape, the paging parameters, and the interrupt payload found in a thread."""

from __future__ import annotations

import pytest

from factdebate.core.errors import ConfigError
from factdebate.server.identities import load_teams
from factdebate.server.review_queue import (
    Refused,
    check_resume,
    check_thread_id,
    outcome,
    page_params,
    review_payload,
)

LABELS = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]


def test_teams_give_each_member_the_teams_owners():
    teams = load_teams({"FACTDEBATE_TEAMS": "desk1: alice, bob ;desk2:carol;;ops:bob,dave"})
    assert teams.reviewers_of("alice") == {"alice", "bob"}
    assert teams.reviewers_of("bob") == {"alice", "bob", "dave"}  # in two teams: both
    assert teams.reviewers_of("carol") == {"carol"}
    assert teams.reviewers_of("erin") == {"erin"}  # in no team: their own threads
    assert load_teams({}).reviewers_of("alice") == {"alice"}


@pytest.mark.parametrize(("value", "problem"), [
    ("alice,bob", "expected 'team:identity"),
    ("desk1:", "expected 'team:identity"),
    ("desk1:alice;desk1:bob", "named twice"),
    ("desk1:alice,bob:x", "not an identity"),
    ("desk1:local-development", "not an identity"),
    ("desk1:alice,zed", "has no API key"),
])
def test_bad_teams_name_the_problem(value: str, problem: str):
    with pytest.raises(ConfigError, match=problem):
        load_teams({"FACTDEBATE_TEAMS": value}, identities=["alice", "bob"])


def test_a_resume_value_keeps_only_what_its_decision_uses():
    assert check_resume({"decision": "approve", "reviewer": "ana", "note": ""}, LABELS) == {
        "decision": "approve", "reviewer": "ana"}
    edit = {"decision": "edit", "reviewer": "ana", "label": "REFUTES", "rationale": "why",
            "evidence_ids": ["d1"], "note": "n"}
    assert check_resume(edit, LABELS) == edit


@pytest.mark.parametrize(("value", "field"), [
    (None, "body"), ("approve", "body"),
    ({"decision": "approve", "reviewer": "ana", "x" * 500: 1}, "x" * 60),
    ({"decision": "approve", "reviewer": ""}, "reviewer"),
    ({"decision": "edit", "reviewer": "ana", "label": None}, "label"),
    ({"decision": "edit", "reviewer": "ana", "label": "REFUTES", "evidence_ids": [1]},
     "evidence_ids"),
    ({"decision": "approve", "reviewer": "ana", "rationale": "no"}, "rationale"),
])
def test_a_bad_resume_value_names_its_field(value: object, field: str):
    with pytest.raises(Refused) as err:
        check_resume(value, LABELS)
    assert err.value.status == 422 and err.value.detail.startswith(f"{field}:")


def test_thread_ids_and_paging():
    tid = "0F8FAD5B-D9CB-469F-A165-70867728950E"
    assert check_thread_id(tid) == tid.lower()
    for bad in ("../threads", tid + "x", "", "0f8fad5b"):
        with pytest.raises(Refused, match="thread_id"):
            check_thread_id(bad)
    assert page_params({}) == (20, 0)
    assert page_params({"limit": "100", "offset": "5"}) == (100, 5)
    with pytest.raises(Refused, match="^offset"):
        page_params({"offset": "10001"})


def test_the_review_payload_of_a_thread():
    payload = {"kind": "review", "claim": "c", "error": ""}
    waiting = {"status": "interrupted", "interrupts": {
        "task-1": [{"value": {"kind": "other"}, "id": "i0"}, {"value": payload, "id": "i1"}]}}
    assert review_payload(waiting) == payload
    assert review_payload({**waiting, "status": "idle"}) is None
    assert review_payload({"status": "interrupted", "interrupts": {}}) is None
    refused = {**waiting, "interrupts": {"t": [{"value": {**payload, "error": "no label"}}]}}
    assert outcome(refused, "t")["status"] == "waiting"
    assert outcome(refused, "t")["error"] == "no label"
    assert outcome(waiting, "t")["status"] == "next"  # a fresh ask: the next claim of a text
    done = {"status": "idle", "values": {"label": "REFUTES", "review": {"decision": "edit"}}}
    assert outcome(done, "t") == {"thread_id": "t", "status": "done", "label": "REFUTES",
                                  "review": {"decision": "edit"}}
    failed = outcome({"status": "error", "values": {}}, "t", {"message": "boom\nmore"})
    assert failed == {"thread_id": "t", "status": "error", "error": "boom"}
