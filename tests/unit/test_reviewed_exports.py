"""Reviewed verdicts as a dataset (``evaluation/reviewed.py``) and as ClaimReview JSON-LD
(``evaluation/claimreview.py``), from rows and states built by the review step's contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factdebate.core.errors import InputError
from factdebate.evaluation import claimreview as cr
from factdebate.evaluation.datasets import load_items
from factdebate.evaluation.results import base_row, ok_row
from factdebate.evaluation.reviewed import export_reviewed, select_reviewed

AT = "2026-11-28T12:00:00+00:00"
EVIDENCE = [{"id": "e1", "title": "Census", "text": "...", "source": "tavily",
             "url": "https://stats.example/census"},
            {"id": "e2", "title": "Blog", "text": "...", "source": "tavily",
             "url": "https://blog.example/post"},
            {"id": "e3", "title": "Wiki", "text": "...", "source": "milvus", "url": ""}]


def review(decision: str, machine: str = "SUPPORTS", new: str | None = None,
           evidence_ids: list[str] | None = None) -> dict[str, Any]:
    return {"decision": decision, "reviewer": "ana", "at": AT, "note": f"{decision} note",
            "machine_label": machine,
            "changed": {"label": [machine, new] if new else None, "rationale": bool(new),
                        "evidence_ids": evidence_ids}}


def row(item: str, label: str, rev: dict[str, Any] | None, *, status: str = "ok",
        dataset: str = "fever", task: str = "fever", gold: str = "SUPPORTS") -> dict[str, Any]:
    data: dict[str, Any] = {
        "item_id": item, "dataset": dataset, "framework": "tool_mad", "run_id": "run-1",
        "thread_id": f"run-1:{item}", "task": task, "claim": f"claim {item}",
        "gold": {"label": gold}, "status": status,
        "prediction": {"label": label, "answers": [], "rationale": f"because {item}"},
        "evidence": EVIDENCE}
    if rev is not None:
        data["review"] = rev
    return data


ROWS = [
    row("fever-1", "SUPPORTS", review("approve")),
    row("fever-2", "REFUTES", review("edit", "SUPPORTS", "REFUTES")),
    row("fever-3", "SUPPORTS", review("reject")),
    row("fever-4", "SUPPORTS", None),
    row("fever-5", "SUPPORTS", None, status="error"),
]


def run_folder(tmp_path: Path, rows: list[dict[str, Any]], task: str = "fever") -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(
        {"run_id": "run-1", "framework": "tool_mad", "task": task,
         "item_ids": [r["item_id"] for r in rows]}))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_ok_row_keeps_the_review() -> None:
    from factdebate.evaluation.formats import Item

    item = Item(id="fever-1", dataset="fever", input={"claim": "c", "task": "fever"},
                gold_label="SUPPORTS")
    base = base_row(item, framework="tool_mad", run_id="r", thread_id="t")
    result = {"label": "REFUTES", "review": review("edit", "SUPPORTS", "REFUTES")}
    done = ok_row(base, result, wall_time_s=1.0, attempts=1, trace_id="x", cost_usd=None)
    assert done["review"]["changed"]["label"] == ["SUPPORTS", "REFUTES"]
    assert "review" not in ok_row(base, {"label": "SUPPORTS"}, wall_time_s=1.0, attempts=1,
                                  trace_id="x", cost_usd=None)


def test_selection_counts_what_it_leaves_out() -> None:
    chosen = select_reviewed(ROWS)
    assert [(r["item_id"], rev["label"]) for r, rev in chosen.kept] == [
        ("fever-1", "SUPPORTS"), ("fever-2", "REFUTES")]
    assert dict(chosen.left_out) == {"rejected": 1, "unreviewed": 1, "error": 1}
    assert chosen.left_out_line() == "3 left out: 1 error, 1 rejected, 1 unreviewed"


def test_exported_dataset_loads_with_the_reviewers_gold(tmp_path: Path) -> None:
    out = tmp_path / "reviewed.jsonl"
    export_reviewed(run_folder(tmp_path, ROWS), out)
    items = load_items(str(out))
    assert [(i.id, i.gold_label, i.input["claim"]) for i in items] == [
        ("fever-1", "SUPPORTS", "claim fever-1"), ("fever-2", "REFUTES", "claim fever-2")]
    record = json.loads(out.read_text().splitlines()[1])
    assert record["review"]["decision"] == "edit" and record["source"]["gold_label"] == "SUPPORTS"


def test_an_ad_hoc_averitec_run_keeps_its_label_set(tmp_path: Path) -> None:
    rows = [row("mine-1", "CONFLICTING", review("edit", "SUPPORTS", "CONFLICTING"),
                dataset="my_claims", task="averitec")]
    out = tmp_path / "reviewed.jsonl"
    export_reviewed(run_folder(tmp_path, rows, task="averitec"), out)
    record = json.loads(out.read_text())
    assert record["dataset"] == "averitec" and record["source"]["dataset"] == "my_claims"
    assert [i.gold_label for i in load_items(str(out))] == ["CONFLICTING"]


def test_a_reviewer_label_off_the_label_set_is_left_out() -> None:
    chosen = select_reviewed([row("fever-9", "X", review("edit", "SUPPORTS", "MAYBE"),
                                  task="binary")])
    assert not chosen.kept and dict(chosen.left_out) == {"off_label_set": 1}


def test_nothing_reviewed_is_one_error_and_no_file(tmp_path: Path) -> None:
    out = tmp_path / "reviewed.jsonl"
    with pytest.raises(InputError, match=r"no reviewed claim to export \(2 row\(s\); "
                                         r"2 left out: 1 rejected, 1 unreviewed\)"):
        export_reviewed(run_folder(tmp_path, ROWS[2:4]), out)
    assert not out.exists()


def test_not_a_run_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a run folder \\(no run.json\\)"):
        export_reviewed(tmp_path, tmp_path / "x.jsonl")


PUB = cr.Publisher("Fact Desk", "https://desk.example/checks/7")


def test_claimreviews_publish_only_reviewed_verdicts() -> None:
    reviews, chosen = cr.claim_reviews(cr.verdicts_of_rows(ROWS, "fever"), PUB)
    assert [r["claimReviewed"] for r in reviews] == ["claim fever-1", "claim fever-2"]
    assert dict(chosen.left_out) == {"rejected": 1, "unreviewed": 1}  # the error row has none
    first, second = reviews
    assert first["reviewRating"] == {"@type": "Rating", "ratingValue": 5, "bestRating": 5,
                                     "worstRating": 1, "alternateName": "True",
                                     "ratingExplanation": "because fever-1"}
    assert second["reviewRating"]["alternateName"] == "False"
    assert second["reviewRating"]["ratingValue"] == 1
    assert first["url"] == "https://desk.example/checks/7#claim-1"
    assert first["author"] == {"@type": "Organization", "name": "Fact Desk",
                               "url": "https://desk.example/"}
    assert first["datePublished"] == "2026-11-28"
    assert first["citation"] == ["https://stats.example/census", "https://blog.example/post"]
    for obj in reviews:
        assert cr.check_claim_review(obj) == []


def test_the_reviewers_evidence_is_cited() -> None:
    rows = [row("fever-1", "REFUTES", review("edit", "SUPPORTS", "REFUTES", ["e1", "e3"]))]
    (only,), _ = cr.claim_reviews(cr.verdicts_of_rows(rows, "fever"), PUB)
    assert only["citation"] == ["https://stats.example/census"]  # e3 has no URL
    assert only["url"] == PUB.url  # one review: the page itself


@pytest.mark.parametrize(("task", "label", "text", "value"), [
    ("fever", "NOT ENOUGH INFO", "Unproven", 3), ("averitec", "CONFLICTING", "Mixed", 3),
    ("binary", "SUPPORTS", "True", 5), ("averitec", "REFUTES", "False", 1)])
def test_rating_scale(task: str, label: str, text: str, value: int) -> None:
    rows = [row("x-1", label, review("approve", label), task=task)]
    (only,), _ = cr.claim_reviews(cr.verdicts_of_rows(rows, task), PUB)
    assert (only["reviewRating"]["alternateName"], only["reviewRating"]["ratingValue"]) \
        == (text, value)


def test_a_question_answer_has_no_rating() -> None:
    rows = [row("pubmedqa-1", "yes", review("approve", "yes"), task="pubmedqa")]
    with pytest.raises(InputError, match="1 no rating"):
        cr.claim_reviews(cr.verdicts_of_rows(rows, "pubmedqa"), PUB)


def test_claim_appearance_and_author_where_known() -> None:
    pub = cr.publisher("Fact Desk", "https://desk.example/c", ["https://news.example/a",
                                                               "https://tv.example/b"], "A. Mayor")
    (only,), _ = cr.claim_reviews(cr.verdicts_of_rows(ROWS[:1], "fever"), pub)
    item = only["itemReviewed"]
    assert item["firstAppearance"] == {"@type": "CreativeWork", "url": "https://news.example/a"}
    assert [a["url"] for a in item["appearance"]] == ["https://news.example/a",
                                                      "https://tv.example/b"]
    assert item["author"] == {"@type": "Person", "name": "A. Mayor"}


def test_a_checked_texts_claims_each_carry_their_review() -> None:
    values = {"task": "fever", "claim": "the text", "label": "REFUTES", "check": {"claims": [
        {"key": "k1", "claim": "one", "status": "verify", "label": "SUPPORTS",
         "rationale": "r1", "evidence": EVIDENCE[:1], "review": review("approve")},
        {"key": "k2", "claim": "two", "status": "verify", "label": "SUPPORTS",
         "rationale": "r2", "evidence": [], "review": review("reject")},
        {"key": "k3", "claim": "three", "status": "not_check_worthy"}]}}
    reviews, chosen = cr.claim_reviews(cr.verdicts_of_state(values, "t1"), PUB)
    assert [r["claimReviewed"] for r in reviews] == ["one"]
    assert dict(chosen.left_out) == {"rejected": 1}


def test_the_check_finds_missing_and_malformed_properties() -> None:
    (good,), _ = cr.claim_reviews(cr.verdicts_of_rows(ROWS[:1], "fever"), PUB)
    bad = {**good, "@type": "Review", "reviewRating": {"@type": "Rating", "ratingValue": 9,
                                                        "bestRating": 5, "worstRating": 1}}
    del bad["url"]
    problems = cr.check_claim_review(bad)
    assert "missing url" in problems and "@type is 'Review', not 'ClaimReview'" in problems
    assert "reviewRating: missing alternateName" in problems
    assert "reviewRating: ratingValue is outside worstRating..bestRating" in problems


@pytest.mark.parametrize(("org", "url", "message"), [
    (None, "https://x.example/", "needs --org"), ("Desk", None, "needs --url"),
    ("Desk", "desk.example/page", r"an http\(s\) URL")])
def test_publisher_needs_org_and_url(org: str | None, url: str | None, message: str) -> None:
    with pytest.raises(InputError, match=message):
        cr.publisher(org, url)


def test_jsonld_text_has_no_raw_control_character() -> None:
    rows = [{**row("fever-1", "SUPPORTS", review("approve")), "claim": "a\x1b[31m b\x9b c"}]
    reviews, _ = cr.claim_reviews(cr.verdicts_of_rows(rows, "fever"), PUB)
    text = cr.dumps(reviews)
    assert "\x1b" not in text and "\x9b" not in text
    assert json.loads(text)["claimReviewed"] == "a\x1b[31m b\x9b c"  # the same value
