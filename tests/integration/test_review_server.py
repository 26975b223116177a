"""The review step on a real ``langgraph dev`` (the LangGraph server Studio talks to): a run with
context ``{"review": true}`` ends ``interrupted`` at ``review`` with the contract's payload, and
``Command(resume=...)`` through the SDK completes it with the decision in the state; a bad resume
value leaves it interrupted with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.servers import needs_langgraph, serving, users_env

pytestmark = needs_langgraph

KEYS = {"desk": "desk-key-0123456789"}
CLAIM = "The Eiffel Tower stands in Paris."
CONTEXT = {"debater_model": "scripted:agree", "max_rounds": 1, "review": True}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("review-server")
    with serving(work, users_env(work, KEYS)) as url:
        yield url


def client(url: str) -> Any:
    from langgraph_sdk import get_client

    return get_client(url=url, api_key=KEYS["desk"])


async def test_a_reviewed_run_interrupts_and_the_sdk_resumes_it(server: str):
    c = client(server)
    thread = (await c.threads.create())["thread_id"]
    await c.runs.wait(thread, "tool_mad", input={"claim": CLAIM}, context=CONTEXT)
    state = await c.threads.get_state(thread)
    assert (await c.threads.get(thread))["status"] == "interrupted"
    assert state["next"] == ["review"]
    (pending,) = state["interrupts"]
    payload = pending["value"]
    assert set(payload) == {"kind", "claim", "framework", "draft", "labels", "error"}
    assert payload["kind"] == "review" and payload["claim"] == CLAIM
    assert payload["framework"] == "tool_mad" and payload["error"] == ""
    assert payload["draft"]["label"] == "SUPPORTS"

    await c.runs.wait(thread, "tool_mad", command={"resume": {"decision": "approve"}})
    again = await c.threads.get_state(thread)
    assert again["next"] == ["review"]  # no reviewer: asked again, with the reason
    assert "reviewer is required" in again["interrupts"][0]["value"]["error"]
    assert again["interrupts"][0]["value"]["draft"] == payload["draft"]

    out = await c.runs.wait(thread, "tool_mad", command={"resume": {
        "decision": "edit", "label": "REFUTES", "reviewer": "ana", "note": "see the source"}})
    assert (await c.threads.get(thread))["status"] == "idle"
    assert out["label"] == "REFUTES"
    assert out["review"]["decision"] == "edit" and out["review"]["reviewer"] == "ana"
    assert out["review"]["changed"]["label"] == ["SUPPORTS", "REFUTES"]
    assert out["review"]["machine_label"] == "SUPPORTS"


async def test_review_off_on_the_server_finishes_without_interrupt(server: str):
    c = client(server)
    thread = (await c.threads.create())["thread_id"]
    out = await c.runs.wait(thread, "standard", input={"claim": CLAIM},
                            context={"debater_model": "scripted:agree"})
    assert (await c.threads.get(thread))["status"] == "idle"
    assert out["label"] == "SUPPORTS" and out.get("review") is None
