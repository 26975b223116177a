"""``GET /factdebate/claimreview/{thread_id}`` on a real ``langgraph dev``: alice's edited verdict
is ClaimReview JSON-LD of the operator's publisher whose rating is the reviewer's label, checked by
a JSON-LD processor against schema.org's vocabulary; bob's key gets 404; an unreviewed thread
409; a client's query parameter cannot set the publisher."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from factdebate.evaluation import claimreview as cr
from tests.integration.servers import needs_langgraph, serving, user_client, users_env
from tests.schema_org import schema_problems

pytestmark = needs_langgraph

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab"}
CLAIM = "The Eiffel Tower stands in Paris."
CONTEXT = {"debater_model": "scripted:agree", "max_rounds": 1, "review": True}
ORG, PAGE = "Alice's Desk", "https://desk.example/checks/{thread_id}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("claimreview-server")
    env = {**users_env(work, KEYS), "FACTDEBATE_CLAIMREVIEW_ORG": ORG,
           "FACTDEBATE_CLAIMREVIEW_URL": PAGE}
    with serving(work, env) as url:
        yield url


def sdk(url: str, who: str) -> Any:
    from langgraph_sdk import get_client

    return get_client(url=url, api_key=KEYS[who])


async def reviewed_thread(url: str, *, decide: bool) -> str:
    c = sdk(url, "alice")
    thread = (await c.threads.create())["thread_id"]
    await c.runs.wait(thread, "tool_mad", input={"claim": CLAIM}, context=CONTEXT)
    if decide:
        out = await c.runs.wait(thread, "tool_mad", command={"resume": {
            "decision": "edit", "label": "REFUTES", "reviewer": "ana"}})
        assert out["review"]["decision"] == "edit"
    return thread


async def test_alices_edited_verdict_is_claimreview_and_bob_gets_404(server: str):
    thread = await reviewed_thread(server, decide=True)
    path = f"/factdebate/claimreview/{thread}"
    with user_client(server, KEYS["alice"]) as alice:
        got = alice.get(path)
        sneaky = alice.get(path, params={"org": "Evil", "url": "https://evil.example/"})
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].startswith("application/ld+json")
    markup = got.json()
    assert markup["@context"] == "https://schema.org" and markup["@type"] == "ClaimReview"
    assert markup["claimReviewed"] == CLAIM
    assert markup["reviewRating"]["alternateName"] == cr.RATINGS["REFUTES"][0]
    assert markup["author"]["name"] == ORG
    assert markup["url"] == PAGE.replace("{thread_id}", thread)
    assert cr.check_claim_review(markup) == []
    assert schema_problems(markup) == []
    assert sneaky.status_code == 422 and "Evil" not in sneaky.text
    with user_client(server, KEYS["bob"]) as bob:
        other = bob.get(path)
        missing = bob.get("/factdebate/claimreview/00000000-0000-4000-8000-000000000000")
    assert other.status_code == 404 and missing.status_code == 404
    assert other.json()["detail"].replace(thread, "X") == missing.json()["detail"].replace(
        "00000000-0000-4000-8000-000000000000", "X")
    with user_client(server, "wrong-key-0123456789") as nobody:
        assert nobody.get(path).status_code in (401, 403)


async def test_a_thread_waiting_for_review_is_409(server: str):
    thread = await reviewed_thread(server, decide=False)
    with user_client(server, KEYS["alice"]) as alice:
        got = alice.get(f"/factdebate/claimreview/{thread}")
    assert got.status_code == 409
    assert "waiting for review" in got.json()["detail"]


async def test_an_unreviewed_verdict_is_409(server: str):
    c = sdk(server, "alice")
    thread = (await c.threads.create())["thread_id"]
    await c.runs.wait(thread, "standard", input={"claim": CLAIM},
                      context={"debater_model": "scripted:agree"})
    with user_client(server, KEYS["alice"]) as alice:
        got = alice.get(f"/factdebate/claimreview/{thread}")
    assert got.status_code == 409
    assert "not reviewed" in got.json()["detail"]


def test_a_text_check_is_one_claimreview_per_reviewed_claim(server: str):
    with user_client(server, KEYS["alice"], timeout=180) as alice:
        thread = alice.post("/threads", json={}).json()["thread_id"]
        done = alice.post(f"/threads/{thread}/runs/wait", json={
            "assistant_id": "check_text",
            "input": {"text": "The Eiffel Tower is in Paris. The Louvre is in Paris."},
            "context": {"debater_model": "scripted:check_text", "framework": "tool_mad",
                        "review": True, "scoring_mode": "none"}})
        assert done.status_code == 200, done.text
        first = alice.post(f"/app/api/reviews/{thread}",
                           json={"decision": "approve", "reviewer": "ana"}).json()
        assert first["status"] == "next", first
        second = alice.post(f"/app/api/reviews/{thread}", json={
            "decision": "edit", "label": "REFUTES", "reviewer": "ana"}).json()
        assert second["status"] == "done", second
        got = alice.get(f"/factdebate/claimreview/{thread}")
    assert got.status_code == 200, got.text
    reviews = got.json()
    assert isinstance(reviews, list) and len(reviews) == 2
    assert [r["reviewRating"]["alternateName"] for r in reviews][1] == "False"
    assert schema_problems(reviews) == []
    assert all(cr.check_claim_review(r) == [] for r in reviews)
