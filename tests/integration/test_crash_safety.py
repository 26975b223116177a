"""Crash safety (issue #6.1): ``kill -9`` an evaluation at seeded random points and resume it.

A reduced run of ``evaluation/crash_trials.py`` (the documented command runs 10 trials): the
reference run and every killed-and-resumed trial are real ``factdebate eval`` processes, with the
SQLite checkpointer and with the PostgreSQL checkpointer against a real local server started here
(``evaluation/local_postgres.py``; the binaries come from Debian's ``postgresql`` package, which
``.ci/run`` installs when missing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factdebate.evaluation.crash_trials import parse_args, run_trials
from factdebate.evaluation.local_postgres import postgres_bin


def check(figures: dict, out: Path) -> None:
    assert figures["results_lost"] == 0 and figures["results_duplicated"] == 0
    assert figures["summaries_identical"] == figures["trials"], figures["per_trial"]
    assert figures["kills_mid_run"] >= 1, "no kill landed mid-run: the trial proved nothing"
    for t in figures["per_trial"]:
        assert t["resume_exit_code"] == 0, t
    assert json.loads((out / "crash_trials.json").read_text())["trials"] == figures["trials"]


def test_sqlite_kill_and_resume_loses_and_duplicates_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("FACTDEBATE_POSTGRES_URI", raising=False)
    out = tmp_path / "sqlite"
    check(run_trials(parse_args(["--trials", "2", "--checkpointer", "sqlite", "--out", str(out),
                                 "--seed", "1"])), out)


@pytest.mark.skipif(postgres_bin() is None, reason="PostgreSQL server binaries are not installed "
                    "(apt-get install -y postgresql; .ci/run does it)")
def test_postgres_kill_and_resume_loses_and_duplicates_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("FACTDEBATE_POSTGRES_URI", raising=False)  # a fresh local server
    out = tmp_path / "postgres"
    check(run_trials(parse_args(["--trials", "3", "--checkpointer", "postgres", "--out", str(out),
                                 "--seed", "2"])), out)


def test_postgres_checkpointer_errors_are_one_line_with_the_password_masked(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from factdebate.cli.main import app

    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "c1", "claim": "A claim.", "label": "SUPPORTS"}) + "\n")
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FACTDEBATE_POSTGRES_URI", "postgresql://fd:s3cret-pw@127.0.0.1:1/db")
    args = ["eval", "--framework", "standard", "--dataset", str(items), "--model",
            "scripted:agree", "--out", str(tmp_path / "out"), "--checkpointer"]
    down = CliRunner().invoke(app, [*args, "postgres"])
    assert down.exit_code == 3 and "cannot open the PostgreSQL checkpointer" in down.stderr
    assert "s3cret-pw" not in down.output and "fd:***@" in down.stderr
    unknown = CliRunner().invoke(app, [*args, "mysql", "--out", str(tmp_path / "out2")])
    assert unknown.exit_code == 2 and "unknown --checkpointer" in unknown.stderr
    assert not (tmp_path / "out2").exists()


async def test_a_thread_killed_before_its_input_was_written_starts_over():
    """The window the Postgres trials found: the input checkpoint is saved, the input (its pending
    writes) is not. Resuming must run the item, not return an empty result."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.memory import InMemorySaver

    from factdebate.nodes.baselines.context import BaselineContext
    from factdebate.run.engine import run_graph

    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    await saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {})
    ctx = BaselineContext(debater_model="scripted:agree")
    out = await run_graph("standard", {"claim": "The tower is in Paris."}, ctx,
                          checkpointer=saver, thread_id="t", resume="auto")
    assert out["label"] == "SUPPORTS" and out["ledger"]["llm_calls"] == 1
    again = await run_graph("standard", {"claim": "The tower is in Paris."}, ctx,
                            checkpointer=saver, thread_id="t", resume="auto")
    assert again["label"] == "SUPPORTS" and again["ledger"]["llm_calls"] == 1  # not rerun
