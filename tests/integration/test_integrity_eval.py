"""An evaluation's ``--out`` folder is never silently wrong.

Real components: the ``factdebate`` CLI in subprocesses (two at once for the lock), SQLite
checkpoints, results files damaged the way a user's tools would (random bytes, truncation,
deletion), a real tmpfs mount filled up (root only; skipped otherwise). The model is the scripted
double and the framework ``standard`` (no index): bookkeeping is tested, never verdicts.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.testing.scenarios import answer_role, claim_of
from factdebate.testing.scripted import ScriptCall, ScriptFault
from tests.integration.cli_process import FACTDEBATE, one_error_line, run_cli

CLAIMS = [("a", "The Eiffel Tower is in Paris.", "SUPPORTS"),
          ("b", "Mount Everest is the highest mountain.", "SUPPORTS"),
          ("c", "Marie Curie won two Nobel Prizes.", "REFUTES"),
          ("d", "Paris is the capital of France.", "REFUTES"),
          ("e", "The Moon orbits the Earth.", "SUPPORTS"),
          ("f", "Water boils at 50 degrees at sea level.", "REFUTES")]


def _data(folder: Path, claims: list[tuple[str, str, str]] = CLAIMS) -> Path:
    path = folder / "mini.jsonl"
    path.write_text("".join(json.dumps({"id": i, "claim": c, "label": lab}) + "\n"
                            for i, c, lab in claims), encoding="utf-8")
    return path


def _args(data: Path, out: Path, *extra: str, model: str = "scripted:disagree") -> list[str]:
    return ["eval", "--framework", "standard", "--dataset", str(data), "--model", model,
            "--out", str(out), "--concurrency", "2", *extra]


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def finished_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One finished 4-item run for the module: (data file, out folder); tests damage copies."""
    work = tmp_path_factory.mktemp("finished")
    data, out = _data(work), work / "out"
    done = run_cli(_args(data, out, "--limit", "4"), work / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    return data, out


@pytest.fixture
def finished(finished_once: tuple[Path, Path], tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A finished 4-item run of this test's own: (data file, out folder), copies of
    ``finished_once`` (a resume compares the data file by its SHA-256, not by its path)."""
    data, out = tmp_path / "mini.jsonl", tmp_path / "out"
    shutil.copyfile(finished_once[0], data)
    shutil.copytree(finished_once[1], out)
    yield data, out


# -- 3 and 15: resume refuses incompatible changes, extends with a larger --limit ----------------
@pytest.mark.slow  # seven CLI processes one after another (~25 s): the slow tier; refused changes on
# resume in the default one: test_eval_memory.py, test_eval_tool_faults.py, test_eval_index_identity.py
def test_resume_refuses_changes_naming_them_and_extends_a_larger_limit(finished, tmp_path):
    data, out = finished
    home = tmp_path / "home"
    before = (out / "run.json").read_text()
    for extra, named in ((["--limit", "4", "--seed", "1"], "--seed 0 -> 1"),
                         (["--limit", "2"], "--limit 4 -> 2"),
                         (["--limit", "4", "--metrics", "llm_judge"], "--metrics"),
                         (["--limit", "4", "--set", "temperature=0.5"], "settings temperature")):
        done = run_cli([*_args(data, out, *extra), "--resume"], home)
        assert done.returncode == 2 and named in one_error_line(done), (extra, done.stderr)
    other = run_cli(["eval", "--framework", "cot", "--dataset", str(data), "--model",
                  "scripted:disagree", "--out", str(out), "--limit", "4", "--resume"], home)
    assert other.returncode == 2 and "--framework 'standard' -> 'cot'" in one_error_line(other)
    assert (out / "run.json").read_text() == before and len(_rows(out)) == 4
    # the data file changes under the run (one claim edited): refused, naming the file
    data.write_text(data.read_text().replace("Paris.", "Lyon."), encoding="utf-8")
    changed = run_cli([*_args(data, out, "--limit", "4"), "--resume"], home)
    assert changed.returncode == 2 and "the data file changed" in one_error_line(changed)
    data.write_text(data.read_text().replace("Lyon.", "Paris."), encoding="utf-8")
    # a larger --limit extends the run: the 4 rows are kept, only 2 new items run
    extended = run_cli([*_args(data, out, "--limit", "6"), "--resume"], home)
    assert extended.returncode == 0, extended.stderr[-2000:]
    rows = _rows(out)
    assert len(rows) == 6 and len({r["item_id"] for r in rows}) == 6
    record = json.loads((out / "run.json").read_text())
    assert record["limit"] == 6 and record["extensions"][0]["from_limit"] == 4


# -- 5: one writer per folder --------------------------------------------------------------------
@pytest.mark.slow  # a run held and killed, 24 items resumed (~15 s): the slow tier; the lock in the
# default one: tests/unit/test_integrity_files.py
def test_second_writer_is_refused_and_a_killed_runs_lock_is_taken_over(tmp_path):
    claims = [(f"i{n}", f"Claim number {n} is true.", "SUPPORTS") for n in range(24)]
    data, out, home = _data(tmp_path, claims), tmp_path / "out", tmp_path / "home"
    env = {**os.environ, "FACTDEBATE_HOME": str(home)}
    # 12 s of model latency: the first run is still under way when it holds the lock and has
    # written its first row; then it is stopped (SIGSTOP), holding the lock however long the
    # two refused commands take
    slow = _args(data, out, "--concurrency", "1", model="scripted:disagree?latency=0.5")
    first = subprocess.Popen([str(FACTDEBATE), *slow], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)

    def under_way() -> bool:
        lock, results = out / ".lock", out / "results.jsonl"
        return (out / "run.json").exists() and lock.exists() and bool(lock.read_text().strip()) \
            and results.exists() and results.read_bytes().endswith(b"\n")

    try:
        deadline = time.monotonic() + 60
        while not under_way():
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        first.send_signal(signal.SIGSTOP)
        second = run_cli([*slow, "--resume"], home)
        assert second.returncode == 6
        assert f"in use by process {first.pid}" in one_error_line(second)
        again = run_cli(slow, home)  # a fresh run into the same folder: refused the same way
        assert again.returncode == 6 and "in use" in one_error_line(again)
    finally:
        first.send_signal(signal.SIGKILL)  # a killed run: its lock file keeps its pid
        first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL and len(_rows(out)) < len(claims)
    assert (out / ".lock").read_text().strip() == str(first.pid)
    resumed = run_cli([*slow, "--resume", "--concurrency", "8"], home)  # concurrency may change
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"took over the lock of process {first.pid}" in resumed.stderr
    rows = _rows(out)
    assert len(rows) == len(claims) == len({r["item_id"] for r in rows})
    assert (out / ".lock").read_text() == ""  # a clean end leaves no pid behind


# -- 6: error rows count, and the exit code says so ---------------------------------------------
def test_errors_count_as_wrong_in_all_items_accuracy_and_exit_4(scenario, tmp_path, monkeypatch):
    def respond(call: ScriptCall):
        if "Curie" in claim_of(call):
            raise ScriptFault("provider exploded")
        return answer_role(call, debater_label=0)  # SUPPORTS: right on a, b; wrong on d

    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    data, out = _data(tmp_path, CLAIMS[:4]), tmp_path / "out"
    result = CliRunner().invoke(app, _args(data, out, model=scenario(respond)))
    assert result.exit_code == 4, result.output
    assert "1 of 4 item(s) ended in an error (first: ScriptFault: provider exploded" in " ".join(
        result.output.split())
    run = json.loads((out / "summary.json").read_text())["runs"][0]
    assert run["metrics"]["accuracy"] == pytest.approx(2 / 3)  # over the 3 finished items
    assert run["accuracy_all"] == pytest.approx(2 / 4)  # the error counts as wrong
    assert run["n_errors"] == 1 and run["n_items"] == 4


# -- 7: damaged result files ---------------------------------------------------------------------
def test_bad_results_line_is_one_error_and_repair_reruns_that_item(finished, tmp_path):
    data, out = finished
    lines = (out / "results.jsonl").read_bytes().splitlines(keepends=True)
    lost = json.loads(lines[1])["item_id"]
    lines[1] = os.urandom(40).replace(b"\n", b"x") + b"\n"
    (out / "results.jsonl").write_bytes(b"".join(lines))
    done = run_cli([*_args(data, out, "--limit", "4"), "--resume"], tmp_path / "home")
    line = one_error_line(done)
    assert done.returncode == 2 and "results.jsonl is damaged: line(s) 2" in line
    assert "--resume --repair" in line
    repaired = run_cli([*_args(data, out, "--limit", "4"), "--resume", "--repair"], tmp_path / "home")
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    rows = _rows(out)
    assert sorted(r["item_id"] for r in rows) == sorted({r["item_id"] for r in rows})
    assert lost in {r["item_id"] for r in rows} and len(rows) == 4
    aside = list(out.glob("results.jsonl.damaged-*"))
    assert len(aside) == 1 and aside[0].read_bytes().count(b"\n") == 1  # (random bytes may hold \r)


def test_rows_not_of_the_run_are_set_aside_with_a_warning_and_never_counted(finished, tmp_path):
    """A row of an item outside the run's sample (pasted from another run) and
    an earlier row of a repeated item are moved aside, named in one warning; the progress line,
    summary.json and the kept rows then count the same items."""
    data, out = finished
    results = out / "results.jsonl"
    sample = json.loads((out / "run.json").read_text())["item_ids"]
    rows = _rows(out)
    stranger_id = next(f"mini-{i}" for i, _, _ in CLAIMS if f"mini-{i}" not in sample)
    stranger = dict(rows[0], item_id=stranger_id,
                    prediction=dict(rows[0]["prediction"], label="NOT ENOUGH INFO"))
    pending = rows[-1]["item_id"]  # one sampled item still to run
    lines = results.read_text().splitlines()[:-1]
    results.write_text("\n".join([*lines, json.dumps(stranger), lines[0]]) + "\n")
    done = run_cli([*_args(data, out, "--limit", "4"), "--resume"], tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    flat = " ".join(done.stderr.split())
    aside = list(out.glob("results.jsonl.set-aside-*"))
    assert len(aside) == 1, flat
    assert (f"warning: {results}: set aside 2 row(s) into {aside[0].name} - item(s) "
            f"{stranger_id!r} not in this run's sample") in flat, flat
    assert f"earlier row(s) of item(s) {rows[0]['item_id']!r}" in flat, flat
    kept = _rows(out)
    assert sorted(r["item_id"] for r in kept) == sorted(sample) and pending in sample
    assert [json.loads(x)["item_id"] for x in aside[0].read_text().splitlines()] == [
        rows[0]["item_id"], stranger_id]
    run = json.loads((out / "summary.json").read_text())["runs"][0]
    assert run["n_done"] == 4 and run["n_items"] == 4
    progress = [ln for ln in done.stderr.splitlines() if "standard / mini" in ln][-1]
    assert " 4/4 " in progress, progress  # the final state of the bar, not a redraw
    assert f"acc {run['metrics']['accuracy']:.3f}" in progress, (progress, run["metrics"])


@pytest.mark.parametrize("damage", ["empty", "truncated", "deleted"])
def test_damaged_run_json_is_one_error_and_repair_rebuilds_it(finished, tmp_path, damage):
    data, out = finished
    record = json.loads((out / "run.json").read_text())
    if damage == "empty":
        (out / "run.json").write_text("")
    elif damage == "truncated":
        os.truncate(out / "run.json", 100)
    else:
        (out / "run.json").unlink()
    done = run_cli([*_args(data, out, "--limit", "4"), "--resume"], tmp_path / "home")
    assert done.returncode == 2 and "--repair" in one_error_line(done)
    repaired = run_cli([*_args(data, out, "--limit", "4"), "--resume", "--repair"], tmp_path / "home")
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    rebuilt = json.loads((out / "run.json").read_text())
    assert rebuilt["run_id"] == record["run_id"] and rebuilt["item_ids"] == record["item_ids"]
    assert len(_rows(out)) == 4  # nothing ran twice


def test_corrupt_checkpoint_database_is_one_error_and_repair_sets_it_aside(tmp_path):
    data, out, home = _data(tmp_path), tmp_path / "out", tmp_path / "home"
    assert run_cli(_args(data, out, "--limit", "2"), home).returncode == 0
    db = out / "checkpoints.sqlite"
    db.write_bytes(os.urandom(db.stat().st_size))
    done = run_cli([*_args(data, out, "--limit", "4"), "--resume"], home)
    line = one_error_line(done)
    assert done.returncode == 2 and "checkpoints.sqlite is damaged" in line
    assert "--resume --repair" in line
    repaired = run_cli([*_args(data, out, "--limit", "4"), "--resume", "--repair"], home)
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    assert list(out.glob("checkpoints.sqlite.damaged-*")) and len(_rows(out)) == 4


# -- 8: places that cannot be written ------------------------------------------------------------
def test_out_that_is_a_file_or_dev_null_is_one_error(tmp_path):
    data, home = _data(tmp_path), tmp_path / "home"
    a_file = tmp_path / "taken.txt"
    a_file.write_text("keep me")
    for place in (a_file, Path("/dev/null")):
        done = run_cli(_args(data, place, "--limit", "2"), home)
        assert done.returncode == 5 and "is not a folder" in one_error_line(done)
    assert a_file.read_text() == "keep me"


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 200 KB tmpfs mounted for the test (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_stops_the_run_keeps_no_disk_error_row_and_resume_finishes(tmp_path, tmpfs):
    many = [(f"i{n}", f"Claim number {n} is true.", "SUPPORTS") for n in range(40)]
    data, out, home = _data(tmp_path, many), tmpfs / "run", tmp_path / "home"
    done = run_cli(_args(data, out), home)
    line = one_error_line(done)
    assert done.returncode == 5 and "disk is full" in line and "--resume" in line
    rows = _rows(out) if (out / "results.jsonl").exists() else []
    assert all(r["status"] == "ok" for r in rows)  # the fault never became a kept error row
    assert json.loads((out / "run.json").read_text())["item_ids"]  # whole, or never written
    subprocess.run(["mount", "-o", "remount,size=16m", str(tmpfs)], check=True)
    resumed = run_cli([*_args(data, out), "--resume"], home)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    rows = _rows(out)
    assert len(rows) == 40 == len({r["item_id"] for r in rows})
    assert all(r["status"] == "ok" for r in rows)


def test_read_only_out_is_one_error(tmp_path, tmpfs):
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    done = run_cli(_args(_data(tmp_path), tmpfs / "run", "--limit", "2"), tmp_path / "home")
    assert done.returncode == 5 and "Read-only file system" in one_error_line(done)


# -- 4 and 8: verify --resume with another claim/framework; unusable checkpoint places -----------
def test_verify_resume_refuses_another_claim_or_framework(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    db = tmp_path / "ck" / "c.sqlite"
    base = ["--model", "scripted:agree", "--thread-id", "t1", "--checkpoint-db", str(db)]
    runner = CliRunner()
    first = runner.invoke(app, ["verify", "Paris is in France", "--framework", "standard", *base,
                                "--json"])
    assert first.exit_code == 0, first.output
    claim = runner.invoke(app, ["verify", "The Moon is cheese", "--framework", "standard", *base,
                                "--resume"])
    assert claim.exit_code == 2
    assert "thread 't1' verifies another claim ('Paris is in France')" in claim.output
    framework = runner.invoke(app, ["verify", "Paris is in France", "--framework", "cot", *base,
                                    "--resume"])
    assert framework.exit_code == 2 and "thread 't1' is a standard run, not cot" in framework.output
    same = runner.invoke(app, ["verify", "Paris is in France", "--framework", "standard", *base,
                               "--resume", "--json"])
    assert same.exit_code == 0 and json.loads(same.stdout)["label"] == json.loads(
        first.stdout)["label"]


def test_verify_home_a_file_or_checkpoint_db_a_folder_is_one_error(tmp_path, monkeypatch):
    a_file = tmp_path / "home-file"
    a_file.write_text("not a folder")
    monkeypatch.setenv("FACTDEBATE_HOME", str(a_file))
    args = ["verify", "Paris is in France", "--framework", "standard", "--model", "scripted:agree"]
    home = CliRunner().invoke(app, args)
    assert home.exit_code == 5 and f"{a_file} is a file" in home.output
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "a-folder"
    folder.mkdir()
    db = CliRunner().invoke(app, [*args, "--checkpoint-db", str(folder)])
    assert db.exit_code == 5 and f"--checkpoint-db {folder} is a folder" in db.output
    assert a_file.read_text() == "not a folder" and not list(folder.iterdir())
