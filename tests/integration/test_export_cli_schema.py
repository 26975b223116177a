"""``factdebate export claimreview`` as a user runs it, its output checked by a JSON-LD processor
against schema.org's vocabulary (tests/schema_org.py); ``--unreviewed`` exports machine verdicts
marked as such in the markup and on stderr, never rejected ones."""

from __future__ import annotations

import json
from pathlib import Path

from factdebate.evaluation.claimreview import UNREVIEWED_NOTE, check_claim_review
from tests.integration.cli_process import one_error_line, run_cli
from tests.integration.test_export_cli import EVIDENCE, review, run_folder, write_thread
from tests.schema_org import schema_problems

ORG = ["--org", "Fact Desk", "--url", "https://desk.example/checks/1"]


def test_a_run_folders_markup_is_schema_org(tmp_path: Path) -> None:
    done = run_cli(["export", "claimreview", str(run_folder(tmp_path)), *ORG], tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    reviews = json.loads(done.stdout)
    assert len(reviews) == 2 and schema_problems(reviews) == []
    assert "UNREVIEWED" not in done.stderr and UNREVIEWED_NOTE not in done.stdout


def test_unreviewed_verdicts_only_when_asked_and_marked(tmp_path: Path) -> None:
    done = run_cli(["export", "claimreview", str(run_folder(tmp_path)), *ORG, "--unreviewed"],
                   tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    reviews = json.loads(done.stdout)
    assert [r["claimReviewed"] for r in reviews] == ["Claim number 1.", "Claim number 2.",
                                                     "Claim number 4."]  # 3 was rejected
    assert [r.get("reviewBody") for r in reviews] == [None, None, UNREVIEWED_NOTE]
    assert "1 of the ClaimReview(s) are UNREVIEWED machine verdicts" in done.stderr
    assert "1 rejected" in done.stderr
    assert schema_problems(reviews) == []
    assert all(check_claim_review(r) == [] for r in reviews)


def test_a_rejected_thread_stays_unpublished_with_unreviewed(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    write_thread(db, "desk-1", {"claim": "Rejected.", "task": "fever", "label": "SUPPORTS",
                                "verdict_evidence": EVIDENCE, "review": review("reject")})
    done = run_cli(["export", "claimreview", "desk-1", "--checkpoint-db", str(db), *ORG,
                    "--unreviewed"], tmp_path / "home")
    assert done.returncode != 0 and done.stdout == ""
    assert "1 rejected" in one_error_line(done)
