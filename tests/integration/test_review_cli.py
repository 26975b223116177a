"""``verify --review`` and ``check --review`` on the command line (cli/review.py): the installed
CLI without a terminal stops at the review and prints how to resume; the scripted flags resume it;
on a terminal the reviewer is asked. Frameworks without an index (``cot``) keep each run fast."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from tests.integration.cli_process import one_error_line, run_cli

CLAIM = "The Eiffel Tower is located in Paris."
BASE = ["--framework", "cot", "--model", "scripted:agree"]
runner = CliRunner()
pytestmark = pytest.mark.usefixtures("cli_home")


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(list(args), home, stdin=subprocess.DEVNULL, env={"USER": "desk"})


def test_installed_cli_without_a_terminal_waits_then_the_printed_command_resumes(tmp_path: Path):
    home = tmp_path / "home"
    db = str(tmp_path / "cp.sqlite")
    done = cli(home, "verify", CLAIM, *BASE, "--review", "--thread-id", "t1",
               "--checkpoint-db", db)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "waiting for review: thread t1" in done.stdout
    assert "draft label: SUPPORTS" in done.stdout and "summary: The run took" in done.stdout
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("resume it: "))
    command = shlex.split(line.removeprefix("resume it: "))
    assert command[:2] == ["factdebate", "verify"] and CLAIM not in command
    assert command[-7:] == ["--resume", "--thread-id", "t1", "--review-decision", "approve",
                            "--reviewer", "desk"]
    assert "--checkpoint-db" in command and "--review" not in command
    resumed = cli(home, *command[1:], "--review-note", "checked", "--json")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    out = json.loads(resumed.stdout)
    assert out["label"] == "SUPPORTS" and "pending_review" not in out
    assert out["review"]["decision"] == "approve" and out["review"]["reviewer"] == "desk"
    assert out["review"]["note"] == "checked"


def test_scripted_edit_in_one_go_prints_the_review_line(tmp_path: Path):
    done = cli(tmp_path / "home", "verify", CLAIM, *BASE, "--review-decision", "edit",
               "--review-label", "REFUTES", "--reviewer", "ana", "--review-note", "see census")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "review: edit by ana at " in done.stdout
    assert "label SUPPORTS -> REFUTES" in done.stdout and "note: see census" in done.stdout


def test_a_refused_scripted_decision_leaves_the_run_waiting_with_the_reason(tmp_path: Path):
    done = cli(tmp_path / "home", "verify", CLAIM, *BASE, "--review-decision", "edit",
               "--review-label", "MAYBE", "--reviewer", "ana", "--thread-id", "t2")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: label 'MAYBE' is not in the label set" in done.stdout
    assert "waiting for review: thread t2" in done.stdout


def test_review_flags_without_a_decision_are_one_error(tmp_path: Path):
    done = cli(tmp_path / "home", "verify", CLAIM, *BASE, "--review-label", "REFUTES")
    assert done.returncode != 0
    assert "--review-label needs --review-decision" in one_error_line(done)
    unknown = cli(tmp_path / "home", "verify", CLAIM, *BASE, "--review-decision", "publish")
    assert "is not a decision" in one_error_line(unknown)


def test_a_decision_for_a_thread_not_waiting_is_one_error(tmp_path: Path):
    home = tmp_path / "home"
    assert cli(home, "verify", CLAIM, *BASE, "--thread-id", "t3").returncode == 0
    done = cli(home, "verify", *BASE, "--resume", "--thread-id", "t3", "--review-decision",
               "approve")
    assert "is not waiting for a review" in one_error_line(done)


def test_on_a_terminal_the_reviewer_is_asked(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("factdebate.cli.review.interactive", lambda: True)
    monkeypatch.setenv("USER", "desk")
    # decision, reviewer (default $USER), label, rationale, note
    result = runner.invoke(app, ["verify", CLAIM, *BASE, "--review"],
                           input="edit\n\nNOT ENOUGH INFO\nNo source says so.\nchecked\n")
    assert result.exit_code == 0, result.output
    assert "draft label: SUPPORTS" in result.output
    assert "review: edit by desk at" in result.output
    assert "label SUPPORTS -> NOT ENOUGH INFO" in result.output
    assert "rationale edited" in result.output


def test_on_a_terminal_a_refused_answer_is_asked_again(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("factdebate.cli.review.interactive", lambda: True)
    result = runner.invoke(app, ["verify", CLAIM, *BASE, "--review"],
                           input="edit\nana\nMAYBE\n\n\napprove\nana\n\n")
    assert result.exit_code == 0, result.output
    assert "refused: label 'MAYBE' is not in the label set" in result.output
    assert "review: approve by ana" in result.output


def test_check_review_with_the_scripted_flags_reviews_each_claim(tmp_path: Path,
                                                                 demo_head_index: Any):
    source = tmp_path / "t.txt"
    source.write_text("The Eiffel Tower is in Paris. Mount Everest is 9,999 metres high.")
    args = ["check", str(source), "--model", "scripted:check_text", "--index-dir",
            str(demo_head_index), "--rag-backend", "keyword", "--search-backend", "local_search",
            "--set", "scoring_mode=none", "--thread-id", "c1"]
    waiting = runner.invoke(app, [*args, "--review"])
    assert waiting.exit_code == 0, waiting.output
    assert "waiting for review: thread c1" in waiting.output
    done = runner.invoke(app, [*args, "--resume", "--review-decision", "reject",
                               "--reviewer", "ana", "--json"])
    assert done.exit_code == 0, done.output
    claims = [c for c in json.loads(done.stdout)["check"]["claims"] if c.get("review")]
    assert len(claims) >= 2 and {c["review"]["decision"] for c in claims} == {"reject"}
