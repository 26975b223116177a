"""A reviewed run end to end: ``verify --set review=true`` stops at the real ``review`` node, the
reviewer's decision resumes the thread (tracing on: the decision lands as LangSmith feedback on the
resumed run), and ``export claimreview`` publishes the verdict from the checkpoint file."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from factdebate.evaluation.claimreview import check_claim_review
from tests.integration.cli_process import one_error_line, run_cli
from tests.integration.langsmith_capture import langsmith_capture

CLAIM = "Paris is the capital of France."


def resume(db: Path, thread: str, decision: dict[str, Any], run_id: uuid.UUID) -> dict[str, Any]:
    """Resume ``thread`` with the reviewer's ``decision`` (as a client of the graph does)."""
    from langgraph.types import Command

    from factdebate.graphs.registry import context_class
    from factdebate.run.claims import compiled_graph, open_sqlite_saver
    from factdebate.run.setup import build_context

    ctx = build_context({"debater_model": "scripted:agree"}, ["review=true"],
                        context_class("standard"))

    async def go() -> dict[str, Any]:
        async with open_sqlite_saver(db) as saver:
            graph = compiled_graph("standard", saver, None)
            return await graph.ainvoke(Command(resume=decision),
                                       {"configurable": {"thread_id": thread}, "run_id": run_id},
                                       context=ctx)

    return asyncio.run(go())


def test_verify_review_approve_then_publish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home, db = tmp_path / "home", tmp_path / "checkpoints.sqlite"
    stopped = run_cli(["verify", CLAIM, "--framework", "standard", "--model", "scripted:agree",
                       "--set", "review=true", "--thread-id", "desk-1", "--checkpoint-db",
                       str(db), "--json"], home)
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    assert json.loads(stopped.stdout).get("review") is None  # waiting for the reviewer
    publish = ["export", "claimreview", "desk-1", "--checkpoint-db", str(db), "--org",
               "Fact Desk", "--url", "https://desk.example/paris"]
    assert "1 left out: 1 unreviewed" in one_error_line(run_cli(publish, home))

    from langsmith import utils

    with langsmith_capture() as (url, state):
        for name, value in (("LANGSMITH_TRACING", "true"), ("LANGSMITH_ENDPOINT", url),
                            ("LANGSMITH_API_KEY", "ls-test-key")):
            monkeypatch.setenv(name, value)
        utils.get_env_var.cache_clear()
        run_id = uuid.uuid4()
        final = resume(db, "desk-1", {"decision": "approve", "reviewer": "ana",
                                      "note": "checked the atlas"}, run_id)
        utils.get_env_var.cache_clear()
    assert final["review"]["decision"] == "approve" and final["label"] == "SUPPORTS"
    assert not [f for f in final["flags"] if f.startswith("review: feedback")], final["flags"]
    feedback = [f for f in state.feedback if f["key"] == "review"]
    assert [(f["run_id"], f["value"], f["comment"]) for f in feedback] == [
        (str(run_id), "SUPPORTS", "checked the atlas")]
    assert feedback[0]["feedback_source"]["metadata"]["reviewer"] == "ana"

    published = run_cli(publish, home)
    assert published.returncode == 0, published.stderr[-2000:]
    review = json.loads(published.stdout)
    assert review["claimReviewed"] == CLAIM
    assert review["reviewRating"]["alternateName"] == "True"
    assert check_claim_review(review) == []


def test_eval_with_review_then_reviewers_then_export(tmp_path: Path) -> None:
    """An eval run with ``review`` on records each verdict when it stops for the reviewer; the
    reviewers' decisions on its threads (in the run's checkpoint file) reach ``export
    reviewed``, whose file measures agreement with them."""
    data = tmp_path / "claims.jsonl"
    data.write_text("".join(json.dumps({"id": f"desk-{n}", "dataset": "fever", "claim": claim,
                                        "label": "SUPPORTS"}) + "\n"
                            for n, claim in enumerate((CLAIM, "The moon is made of cheese."))))
    home, out = tmp_path / "home", tmp_path / "run"
    done = run_cli(["eval", "--framework", "standard", "--dataset", str(data), "--model",
                    "scripted:agree", "--set", "review=true", "--out", str(out)], home)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {json.loads(line)["item_id"]: json.loads(line)
            for line in (out / "results.jsonl").read_text().splitlines()}
    assert all("review" not in r for r in rows.values())  # stopped for the reviewer
    resume(out / "checkpoints.sqlite", rows["desk-1"]["thread_id"],
           {"decision": "edit", "label": "REFUTES", "reviewer": "bo", "note": "no"}, uuid.uuid4())

    reviewed = tmp_path / "reviewed.jsonl"
    exported = run_cli(["export", "reviewed", str(out), "--out", str(reviewed)], home)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert "wrote 1 reviewed claim(s) of 2 row(s)" in exported.stderr
    assert "1 left out: 1 unreviewed" in exported.stderr
    record = json.loads(reviewed.read_text())
    assert (record["id"], record["label"], record["review"]["reviewer"]) == ("desk-1", "REFUTES",
                                                                             "bo")
    assert record["review"]["changed"]["label"] == ["SUPPORTS", "REFUTES"]


def test_cli_review_traced_then_claimreview(tmp_path: Path) -> None:
    """All through the installed command: ``verify --set review=true`` waits for the reviewer,
    ``verify --resume --review-decision edit`` records the decision (traced: LangSmith feedback
    from that process), ``export claimreview`` publishes the reviewer's verdict."""
    home, db = tmp_path / "home", tmp_path / "checkpoints.sqlite"
    base = ["verify", CLAIM, "--framework", "standard", "--model", "scripted:agree",
            "--set", "review=true", "--thread-id", "desk-2", "--checkpoint-db", str(db), "--json"]
    with langsmith_capture() as (url, state):
        traced = {"LANGSMITH_TRACING": "true", "LANGSMITH_ENDPOINT": url,
                  "LANGSMITH_API_KEY": "ls-test-key", "LANGSMITH_PROJECT": "fact-desk"}
        stopped = run_cli(base, home, unset=(), env=traced)
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        resumed = run_cli([*base, "--resume", "--review-decision", "edit", "--review-label",
                           "REFUTES", "--reviewer", "ana", "--review-note", "atlas says no"],
                          home, unset=(), env=traced)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    result = json.loads(resumed.stdout)
    assert result["label"] == "REFUTES" and result["review"]["decision"] == "edit"
    feedback = [f for f in state.feedback if f["key"] == "review"]
    assert [(f["value"], f["score"], f["comment"], f.get("correction")) for f in feedback] == [
        ("REFUTES", 0, "atlas says no", {"label": "REFUTES"})]
    assert feedback[0]["run_id"] in state.runs()  # a root run the resumed process traced
    assert state.runs()[feedback[0]["run_id"]].get("parent_run_id") is None

    published = run_cli(["export", "claimreview", "desk-2", "--checkpoint-db", str(db), "--org",
                         "Fact Desk", "--url", "https://desk.example/paris"], home)
    assert published.returncode == 0, published.stderr[-2000:]
    review = json.loads(published.stdout)
    assert (review["reviewRating"]["alternateName"], review["reviewRating"]["ratingValue"]) \
        == ("False", 1)
    assert check_claim_review(review) == []
