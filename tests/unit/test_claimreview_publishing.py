"""ClaimReview JSON-LD against a real JSON-LD processor and schema.org's vocabulary
(tests/schema_org.py), ``--unreviewed`` marking, and the server route's module
(``server/claimreview_route.py``) with a stand-in for the server's own client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from factdebate.evaluation import claimreview as cr
from factdebate.server import claimreview_route as route
from factdebate.server.review_queue import Refused
from tests.schema_org import schema_problems

AT = "2026-11-28T12:00:00+00:00"
TID = "0b6c5c1e-8a34-4a4e-9d4f-2f1f0f7d1a11"
ENV = {route.ORG_ENV: "Desk", route.URL_ENV: "https://desk.example/checks/{thread_id}"}
EVIDENCE = [{"id": "e1", "url": "https://stats.example/census"}]


def reviewed(decision: str, new: str | None = None) -> dict[str, Any]:
    return {"decision": decision, "reviewer": "ana", "at": AT, "note": "", "machine_label":
            "SUPPORTS", "changed": {"label": ["SUPPORTS", new] if new else None}}


def state(review: dict[str, Any] | None) -> dict[str, Any]:
    return {"task": "fever", "claim": "The tower is in Paris.", "label": "SUPPORTS",
            "rationale": "the census says so", "verdict_evidence": EVIDENCE, "review": review,
            "appearance": "https://news.example/a", "claim_author": "A. Speaker"}


def text_state() -> dict[str, Any]:
    return {"task": "fever", "claim": "the text", "label": "REFUTES", "check": {"claims": [
        {"claim": "one", "label": "SUPPORTS", "status": "verify", "review": reviewed("approve")},
        {"claim": "two", "label": "SUPPORTS", "status": "verify",
         "review": reviewed("edit", "REFUTES")},
        {"claim": "three", "label": "SUPPORTS", "status": "verify",
         "review": reviewed("reject")}]}}


PUB = cr.publisher("Desk", "https://desk.example/checks/1")


@pytest.mark.parametrize("values", [state(reviewed("approve")), state(reviewed("edit", "REFUTES")),
                                    text_state()])
def test_the_markup_expands_to_schema_org_terms_only(values: dict[str, Any]) -> None:
    reviews, _ = cr.claim_reviews(cr.verdicts_of_state(values, "t"), PUB)
    assert schema_problems(reviews if len(reviews) > 1 else reviews[0]) == []
    assert all(cr.check_claim_review(r) == [] for r in reviews)


def test_the_check_catches_a_misspelt_property_and_type() -> None:
    (good,), _ = cr.claim_reviews(cr.verdicts_of_state(state(reviewed("approve")), "t"), PUB)
    bad = {**good, "claimReveiwed": good["claimReviewed"],
           "reviewRating": {**good["reviewRating"], "@type": "Ratng"}}
    problems = schema_problems(bad)
    assert any("claimReveiwed" in p for p in problems)
    assert any("Ratng" in p for p in problems)


def test_unreviewed_is_refused_unless_asked_and_then_marked() -> None:
    verdicts = cr.verdicts_of_state(state(None), "t")
    with pytest.raises(cr.InputError, match="1 unreviewed"):
        cr.claim_reviews(verdicts, PUB)
    (markup,), _ = cr.claim_reviews(verdicts, PUB, unreviewed=True)
    assert markup["reviewBody"] == cr.UNREVIEWED_NOTE
    assert markup["reviewRating"]["ratingExplanation"].startswith(cr.UNREVIEWED_NOTE)
    assert markup["author"] == {"@type": "Organization", "name": "Desk",
                                "url": "https://desk.example/"}
    assert schema_problems(markup) == [] and cr.check_claim_review(markup) == []


def test_a_rejected_verdict_is_never_exported() -> None:
    verdicts = cr.verdicts_of_state(state(reviewed("reject")), "t")
    with pytest.raises(cr.InputError, match="1 rejected"):
        cr.claim_reviews(verdicts, PUB, unreviewed=True)


class Threads:
    def __init__(self, thread: dict[str, Any]) -> None:
        self.thread = thread

    async def get(self, thread_id: str) -> dict[str, Any]:
        if thread_id != TID:
            raise LookupError(thread_id)
        return self.thread


class Client:
    def __init__(self, thread: dict[str, Any]) -> None:
        self.threads = Threads(thread)


def serve(values: Any, *, owner: str = "alice", status: str = "idle", interrupts: Any = None,
          who: frozenset[str] = frozenset({"alice"}), query: dict[str, str] | None = None,
          env: dict[str, str] | None = None, thread_id: str = TID) -> list[dict[str, Any]]:
    thread = {"thread_id": TID, "metadata": {"owner": owner}, "status": status,
              "values": values, "interrupts": interrupts or {}}
    return asyncio.run(route.claim_reviews_of(Client(thread), thread_id, who, query or {},
                                              ENV if env is None else env))


def refused(**kwargs: Any) -> Refused:
    with pytest.raises(Refused) as caught:
        serve(**kwargs)
    return caught.value


def test_route_serves_the_operators_publisher() -> None:
    (markup,) = serve(state(reviewed("edit", "REFUTES")))
    assert markup["url"] == f"https://desk.example/checks/{TID}"
    assert markup["author"]["name"] == "Desk"
    assert markup["reviewRating"]["alternateName"] == "False"
    assert schema_problems(markup) == []


def test_route_a_text_check_is_one_review_per_reviewed_claim() -> None:
    reviews = serve(text_state())
    assert [r["claimReviewed"] for r in reviews] == ["one", "two"]
    assert schema_problems(reviews) == []


@pytest.mark.parametrize("kwargs,status,words", [
    ({"owner": "bob"}, 404, "not found"),
    ({"thread_id": "0b6c5c1e-8a34-4a4e-9d4f-2f1f0f7d1a12"}, 404, "not found"),
    ({"thread_id": "../other"}, 422, "thread_id"),
    ({"query": {"org": "Evil"}}, 422, "no query parameter"),
    ({"env": {}}, 503, "FACTDEBATE_CLAIMREVIEW_ORG"),
    ({"env": {route.ORG_ENV: "D", route.URL_ENV: "javascript:x"}}, 503, "not an http"),
])
def test_route_refusals(kwargs: dict[str, Any], status: int, words: str) -> None:
    exc = refused(values=state(reviewed("approve")), **kwargs)
    assert exc.status == status and words in exc.detail


@pytest.mark.parametrize("values,extra,words", [
    (state(None), {}, "not reviewed"),
    (state(reviewed("reject")), {}, "rejected"),
    (state(None), {"status": "interrupted", "interrupts": {"t": [{"value": {"kind": "review"}}]}},
     "waiting for review"),
    (state(reviewed("approve")), {"status": "busy"}, "run is under way"),
    ({}, {}, "holds no verdict"),
])
def test_route_409_says_why(values: Any, extra: dict[str, Any], words: str) -> None:
    exc = refused(values=values, **extra)
    assert exc.status == 409 and words in exc.detail and "\n" not in exc.detail
