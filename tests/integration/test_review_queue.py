"""The review queue's routes on a real ``langgraph dev``: ``GET /app/api/reviews`` and
``POST /app/api/reviews/{thread_id}``.

Four users: alice and carol in one team (``FACTDEBATE_TEAMS``), bob and dave alone. Runs with
context ``review: true`` stop at the ``review`` node; the queue lists them for their owner and
the owner's team only, another user's thread is "not found" exactly as a missing one, bad
bodies are 422 naming the field, and approve / edit / reject end the run with the state's
``review``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.servers import needs_langgraph, serving, user_client, users_env

pytestmark = needs_langgraph

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab",
        "carol": "carol-key-0123456789", "dave": "dave-key-0123456789a"}
CONTEXT = {"debater_model": "scripted:agree", "max_rounds": 1, "review": True}
CLAIM = "The Eiffel Tower stands in Paris."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("review-queue")
    env = {**users_env(work, KEYS), "FACTDEBATE_TEAMS": "desk1:alice,carol"}
    with serving(work, env) as url:
        yield url


@pytest.fixture(scope="module")
def waiting(server: str) -> str:
    """One thread of alice's waiting for review, for the table of bad bodies."""
    return review_run(server, "alice")


def client(url: str, who: str) -> httpx.Client:
    return user_client(url, KEYS[who])


def review_run(url: str, who: str, claim: str = CLAIM, graph: str = "tool_mad") -> str:
    """A thread of ``who`` whose run stopped at its review; returns its id."""
    with client(url, who) as c:
        thread = c.post("/threads", json={}).json()["thread_id"]
        done = c.post(f"/threads/{thread}/runs/wait", json={
            "assistant_id": graph, "input": {"claim": claim}, "context": CONTEXT})
        assert done.status_code == 200, done.text
        assert c.get(f"/threads/{thread}").json()["status"] == "interrupted"
    return thread


def queue(url: str, who: str, **params: int) -> dict:
    with client(url, who) as c:
        r = c.get("/app/api/reviews", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def ids(page: dict) -> list[str]:
    return [item["thread_id"] for item in page["items"]]


def decide(url: str, who: str, thread: str, body: object) -> httpx.Response:
    with client(url, who) as c:
        return c.post(f"/app/api/reviews/{thread}", json=body)


def test_the_routes_need_a_key(server: str):
    assert httpx.get(f"{server}/app/api/reviews").status_code == 401
    assert httpx.get(f"{server}/app/api/reviews",
                     headers={"x-api-key": "wrong-key-0123456789"}).status_code == 403
    r = httpx.post(f"{server}/app/api/reviews/{uuid.uuid4()}", json={"decision": "approve"})
    assert r.status_code == 401


def test_an_empty_queue_and_bad_paging(server: str):
    page = queue(server, "dave")
    assert page == {"items": [], "total": 0, "limit": 20, "offset": 0}
    with client(server, "dave") as c:
        for params, field in (({"limit": 0}, "limit"), ({"limit": 101}, "limit"),
                              ({"offset": -1}, "offset"), ({"limit": "x"}, "limit")):
            r = c.get("/app/api/reviews", params=params)
            assert r.status_code == 422 and r.json()["detail"].startswith(field), r.text


def test_a_missing_or_malformed_thread_id(server: str):
    missing = decide(server, "dave", str(uuid.uuid4()), {"decision": "approve", "reviewer": "d"})
    assert missing.status_code == 404 and "not found" in missing.json()["detail"]
    bad = decide(server, "dave", "not-a-uuid", {"decision": "approve", "reviewer": "d"})
    assert bad.status_code == 422 and bad.json()["detail"].startswith("thread_id")


def test_a_review_is_seen_and_decided_by_its_owner_and_team_only(server: str):
    alices = review_run(server, "alice")
    bobs = review_run(server, "bob", "Berlin is the capital of Germany.")
    assert alices in ids(queue(server, "alice")) and bobs not in ids(queue(server, "alice"))
    assert alices in ids(queue(server, "carol"))  # her team's queue
    assert alices not in ids(queue(server, "bob")) and bobs in ids(queue(server, "bob"))
    assert ids(queue(server, "dave")) == []

    item = next(i for i in queue(server, "alice")["items"] if i["thread_id"] == alices)
    assert item["claim"] == CLAIM and item["framework"] == "tool_mad" and item["owner"] == "alice"
    assert item["draft"]["label"] == "SUPPORTS" and item["error"] == ""
    assert set(item["draft"]) == {"label", "rationale", "evidence", "summary", "scores"}
    assert "SUPPORTS" in item["labels"] and item["draft"]["summary"]
    assert item["created_at"] and item["updated_at"]

    with client(server, "carol") as c:  # one entry, for the owner's team
        assert c.get(f"/app/api/reviews/{alices}").json() == item

    # bob gets the same answer as for a thread that does not exist: never 403
    approve = {"decision": "approve", "reviewer": "mallory"}
    for thread in (alices, str(uuid.uuid4())):
        r = decide(server, "bob", thread, approve)
        assert r.status_code == 404, r.text
        assert r.json() == {"detail": f"Thread {thread} not found"}
        with client(server, "bob") as c:
            r = c.get(f"/app/api/reviews/{thread}")
        assert r.status_code == 404 and r.json() == {"detail": f"Thread {thread} not found"}
    for other in ("bob", "carol"):  # a team shares the queue, not the server API's threads
        with client(server, other) as c:
            assert c.get(f"/threads/{alices}").status_code == 404
    assert alices in ids(queue(server, "alice"))  # still waiting: nothing was resumed

    done = decide(server, "carol", alices, {"decision": "approve", "reviewer": "Carol C."})
    assert done.status_code == 200, done.text
    out = done.json()
    assert out["status"] == "done" and out["label"] == "SUPPORTS"
    assert out["review"]["decision"] == "approve" and out["review"]["reviewer"] == "Carol C."
    assert alices not in ids(queue(server, "alice")) + ids(queue(server, "carol"))
    with client(server, "alice") as c:  # the thread stays alice's, its state has the review
        thread = c.get(f"/threads/{alices}").json()
        assert thread["status"] == "idle" and thread["metadata"]["owner"] == "alice"
        assert thread["values"]["review"]["decision"] == "approve"
        runs = c.get(f"/threads/{alices}/runs").json()
        assert any(r["metadata"].get("reviewed_by") == "carol" for r in runs)
    again = decide(server, "alice", alices, approve)
    assert again.status_code == 409 and "not waiting for review" in again.json()["detail"]
    with client(server, "alice") as c:
        assert c.get(f"/app/api/reviews/{alices}").status_code == 409
        assert c.get("/app/api/reviews/not-a-uuid").status_code == 422

    r = decide(server, "alice", bobs, approve)  # the other way round, outside the team
    assert r.status_code == 404 and r.json() == {"detail": f"Thread {bobs} not found"}


@pytest.mark.parametrize(("body", "field"), [
    ({"reviewer": "ana"}, "decision"),
    ({"decision": "publish", "reviewer": "ana"}, "decision"),
    ({"decision": "approve"}, "reviewer"),
    ({"decision": "approve", "reviewer": "   "}, "reviewer"),
    ({"decision": "approve", "reviewer": "a" * 201}, "reviewer"),
    ({"decision": "approve", "reviewer": 7}, "reviewer"),
    ({"decision": "approve", "reviewer": "ana", "note": "n" * 2001}, "note"),
    ({"decision": "approve", "reviewer": "ana", "owner": "bob"}, "owner"),
    ({"decision": "edit", "reviewer": "ana"}, "label"),
    ({"decision": "edit", "reviewer": "ana", "label": "TRUE-ISH"}, "label"),
    ({"decision": "edit", "reviewer": "ana", "label": "REFUTES", "rationale": "r" * 20001},
     "rationale"),
    ({"decision": "edit", "reviewer": "ana", "label": "REFUTES", "evidence_ids": "d1"},
     "evidence_ids"),
    ({"decision": "edit", "reviewer": "ana", "label": "REFUTES", "evidence_ids": ["x"] * 201},
     "evidence_ids"),
    ({"decision": "reject", "reviewer": "ana", "label": "REFUTES"}, "label"),
    ([{"decision": "approve"}], "body"),
])
def test_bad_bodies_are_422_naming_the_field(server: str, waiting: str, body: object,
                                              field: str):
    thread = waiting
    r = decide(server, "alice", thread, body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith(f"{field}:"), r.text
    assert thread in ids(queue(server, "alice", limit=100))  # still waiting


def test_a_body_that_is_not_json_or_too_large(server: str):
    thread = review_run(server, "dave")
    with client(server, "dave") as c:
        r = c.post(f"/app/api/reviews/{thread}", content=b"{not json",
                   headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"].startswith("body")
        r = c.post(f"/app/api/reviews/{thread}", json={
            "decision": "approve", "reviewer": "dave", "note": "n" * 2_000_000})
        assert r.status_code == 413, r.text
    assert thread in ids(queue(server, "dave"))


def test_edit_and_reject_end_the_run_as_specified(server: str):
    edited, rejected = review_run(server, "bob"), review_run(server, "bob")
    item = next(i for i in queue(server, "bob", limit=100)["items"] if i["thread_id"] == edited)
    cited = [p["id"] for p in item["draft"]["evidence"]]

    r = decide(server, "bob", edited, {"decision": "edit", "reviewer": "Bo",
                                       "label": "REFUTES", "rationale": "The source says so.",
                                       "evidence_ids": cited[:1], "note": "checked"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["status"] == "done" and out["label"] == "REFUTES"
    review = out["review"]
    assert review["decision"] == "edit" and review["reviewer"] == "Bo"
    assert review["note"] == "checked" and review["machine_label"] == "SUPPORTS"
    assert review["changed"]["label"] == ["SUPPORTS", "REFUTES"]
    assert review["changed"]["rationale"] is True and review["at"]

    r = decide(server, "bob", rejected, {"decision": "reject", "reviewer": "Bo", "note": "no"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["status"] == "done" and out["label"] == "SUPPORTS"  # the machine's, marked
    assert out["review"]["decision"] == "reject" and out["review"]["changed"]["label"] is None
    with client(server, "bob") as c:
        values = c.get(f"/threads/{edited}/state").json()["values"]
        assert values["label"] == "REFUTES" and values["rationale"] == "The source says so."
        assert values["review"]["decision"] == "edit"
    assert {edited, rejected}.isdisjoint(ids(queue(server, "bob", limit=100)))


def test_a_value_the_graph_refuses_keeps_the_item_with_its_error(server: str):
    thread = review_run(server, "dave")
    r = decide(server, "dave", thread, {"decision": "edit", "reviewer": "Dee",
                                        "label": "REFUTES", "evidence_ids": ["no-such-passage"]})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["status"] == "waiting" and "unknown evidence id" in out["error"]
    (item,) = [i for i in queue(server, "dave")["items"] if i["thread_id"] == thread]
    assert "no-such-passage" in item["error"]
    r = decide(server, "dave", thread, {"decision": "approve", "reviewer": "Dee"})
    assert r.json()["status"] == "done" and r.json()["review"]["decision"] == "approve"


def test_the_queue_is_oldest_first_and_paged(server: str):
    first, second = review_run(server, "dave"), review_run(server, "dave")
    page = queue(server, "dave")
    assert ids(page)[-2:] == [first, second] and page["total"] == len(page["items"])
    one = queue(server, "dave", limit=1, offset=page["total"] - 1)
    assert ids(one) == [second] and one["total"] == page["total"]


def test_a_text_checks_claims_are_reviewed_one_after_another(server: str):
    with client(server, "carol") as c:
        thread = c.post("/threads", json={}).json()["thread_id"]
        done = c.post(f"/threads/{thread}/runs/wait", json={
            "assistant_id": "check_text",
            "input": {"text": "The Eiffel Tower is in Paris. The Louvre is in Paris."},
            "context": {"debater_model": "scripted:check_text", "framework": "tool_mad",
                        "review": True, "scoring_mode": "none"}})
        assert done.status_code == 200, done.text
    (first,) = [i for i in queue(server, "carol")["items"] if i["thread_id"] == thread]
    assert first["framework"] == "tool_mad"
    r = decide(server, "alice", thread, {"decision": "approve", "reviewer": "Al"})  # teammate
    out = r.json()
    assert out["status"] == "next" and out["decision"] == "approve", r.text
    assert out["item"]["claim"] != first["claim"] and out["item"]["error"] == ""
    (second,) = [i for i in queue(server, "carol")["items"] if i["thread_id"] == thread]
    assert second["claim"] == out["item"]["claim"]
    out = decide(server, "carol", thread, {"decision": "reject", "reviewer": "Cy"}).json()
    assert out["status"] == "done" and out["reviewer"] == "Cy", out
    assert thread not in ids(queue(server, "carol"))
    with client(server, "carol") as c:
        claims = c.get(f"/threads/{thread}/state").json()["values"]["check"]["claims"]
    decisions = {cl["claim"]: cl["review"]["decision"] for cl in claims if cl.get("review")}
    assert decisions == {first["claim"]: "approve", second["claim"]: "reject"}


def test_two_decisions_at_once_one_is_applied(server: str):
    import concurrent.futures

    thread = review_run(server, "alice")
    bodies = [{"decision": "approve", "reviewer": "first"},
              {"decision": "reject", "reviewer": "second"}]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda b: decide(server, "carol", thread, b), bodies))
    codes = sorted(r.status_code for r in answers)
    assert codes == [200, 409], [r.text for r in answers]
    (won,) = [r.json() for r in answers if r.status_code == 200]
    (lost,) = [r.json() for r in answers if r.status_code == 409]
    assert "busy" in lost["detail"] or "not waiting for review" in lost["detail"]
    with client(server, "alice") as c:
        review = c.get(f"/threads/{thread}/state").json()["values"]["review"]
    assert review["reviewer"] == won["reviewer"] == won["review"]["reviewer"]
