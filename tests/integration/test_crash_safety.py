"""Crash safety: ``kill -9`` an evaluation at seeded random points and resume it.

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


@pytest.mark.slow  # three killed-and-resumed trials on a real PostgreSQL (~35 s): the slow tier;
# the SQLite trials above stay in the default one
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


# -- the Postgres checkpointer reads checkpoints as data, as the SQLite one does ---------
def _pg_eval(data: Path, out: Path, uri: str, home: Path, *extra: str):
    import os
    import subprocess
    import sys

    env = {**os.environ, "FACTDEBATE_HOME": str(home)}
    for name in ("LANGSMITH_TRACING", "LANGGRAPH_STRICT_MSGPACK", "FACTDEBATE_POSTGRES_URI"):
        env.pop(name, None)
    return subprocess.run(
        [str(Path(sys.executable).parent / "factdebate"), "eval", "--framework", "standard",
         "--dataset", str(data), "--model", "scripted:agree", "--out", str(out),
         "--checkpointer", uri, *extra], capture_output=True, text=True, env=env, timeout=180)


def _pg_eval_in_process(data: Path, out: Path, uri: str, home: Path, monkeypatch) -> None:
    """The run the crafted values are planted into: the same ``eval`` in this process (what is
    tested is the ``--resume`` process that reads them)."""
    from typer.testing import CliRunner

    from factdebate.cli.main import app

    monkeypatch.setenv("FACTDEBATE_HOME", str(home))
    for name in ("LANGSMITH_TRACING", "FACTDEBATE_POSTGRES_URI"):
        monkeypatch.delenv(name, raising=False)
    done = CliRunner().invoke(app, ["eval", "--framework", "standard", "--dataset", str(data),
                                    "--model", "scripted:agree", "--out", str(out),
                                    "--checkpointer", uri])
    assert done.exit_code == 0, done.output[-2000:]


def _os_system_blob(marker: Path) -> bytes:
    import ormsgpack

    # a msgpack extension as LangGraph's serializer writes an object: module, name, argument
    return ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(["os", "system", f"touch {marker}"])))


PG_CRAFTED = {
    # name: (SQL run on the run's rows, its parameters given the marker file, what the error names)
    "a blob naming os.system": (
        "UPDATE checkpoint_blobs SET type = 'msgpack', blob = %s WHERE thread_id LIKE %s",
        lambda marker: [_os_system_blob(marker)], "a value naming os.system"),
    "a checkpoint that is a list": (
        "UPDATE checkpoints SET checkpoint = '[1, 2]'::jsonb WHERE thread_id LIKE %s",
        lambda marker: [], "a checkpoint that does not load (TypeError)"),
    "metadata that is a number": (
        "UPDATE checkpoints SET metadata = '5'::jsonb WHERE thread_id LIKE %s",
        lambda marker: [], "checkpoint metadata that is int, not a mapping"),
    "channel_values that are a list": (
        "UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, '{channel_values}', '[1]')"
        " WHERE thread_id LIKE %s", lambda marker: [], "a checkpoint that does not load"),
}


@pytest.mark.slow  # four runs and resumes on a real PostgreSQL (~25 s): the slow tier; the SQLite
# checkpointer's: test_integrity_checkpoints.py; a real PostgreSQL in the default tier:
# test_eval_memory.py::test_postgres_store_and_runs_do_not_share_memory
@pytest.mark.skipif(postgres_bin() is None, reason="PostgreSQL server binaries are not installed "
                    "(apt-get install -y postgresql; .ci/run does it)")
def test_postgres_checkpoints_are_read_as_data(tmp_path, monkeypatch):
    """A crafted value planted in a real local PostgreSQL server's checkpoint tables: ``eval
    --resume`` of the unfinished item stops with one line "unsupported data in the PostgreSQL
    checkpointer at URI (...)", exit 3, runs nothing the value names and keeps no error row."""
    import psycopg

    from factdebate.core.secrets_filter import mask_url
    from factdebate.evaluation.local_postgres import local_postgres

    data, home = tmp_path / "mini.jsonl", tmp_path / "home"
    data.write_text("".join(json.dumps({"id": i, "claim": c, "label": "SUPPORTS"}) + "\n" for i, c in
                            [("a", "Paris is in France."), ("b", "The Moon orbits the Earth.")]))
    with local_postgres() as uri:  # in the system temp folder, which the server user can reach
        for n, (shape, (sql, params, named)) in enumerate(PG_CRAFTED.items()):
            out, marker = tmp_path / f"run{n}", tmp_path / f"marker{n}"
            _pg_eval_in_process(data, out, uri, home, monkeypatch)
            run_id = json.loads((out / "run.json").read_text())["run_id"]
            first = (out / "results.jsonl").read_text().splitlines()[0]
            (out / "results.jsonl").write_text(first + "\n")
            with psycopg.connect(uri, autocommit=True) as conn:
                changed = conn.execute(sql, [*params(marker), f"{run_id}:%"]).rowcount
            assert changed, shape
            done = _pg_eval(data, out, uri, home, "--resume")
            assert not marker.exists(), f"{shape}: the planted command ran"
            lines = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
            assert len(lines) == 1 and "Traceback" not in done.stderr, (shape, done.stderr[-3000:])
            line = " ".join(lines[0].split())
            assert done.returncode == 3, (shape, done.stderr[-2000:])
            assert f"unsupported data in the PostgreSQL checkpointer at {mask_url(uri)} (" in line, \
                (shape, line)
            assert named in line, (shape, line)
            assert (out / "results.jsonl").read_text() == first + "\n", shape
