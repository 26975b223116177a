"""A flag the user typed is never silently replaced by its default.

``eval --concurrency 0`` ran with 4, ``--workers 0`` with 1, ``--out ""`` wrote the run into the
current folder, ``check --rounds 0`` ran the verifier's default, ``check --out ""`` ended in an
``IsADirectoryError`` traceback, ``verify``/``index --index-dir ""`` used the default index, and
a ``run.yaml`` with ``workers: 0`` ran one worker. Each is now one line naming the flag and the
range (exit 2), and nothing is written. The real CLI, in-process (``CliRunner``) from an empty
working folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    (tmp_path / "mini.jsonl").write_text(
        json.dumps({"id": "a", "claim": "Paris is in France.", "label": "SUPPORTS"}) + "\n")
    return folder


def _eval(work: Path, *extra: str) -> list[str]:
    return ["eval", "--framework", "standard", "--dataset", str(work.parent / "mini.jsonl"),
            "--model", "scripted:agree", *extra]


CASES = {
    "eval --concurrency 0": (lambda w: _eval(w, "--out", "run", "--concurrency", "0"),
                             "--concurrency 0 is out of range. use an integer of 1 or more"),
    "eval --concurrency -3": (lambda w: _eval(w, "--out", "run", "--concurrency", "-3"),
                              "--concurrency -3 is out of range"),
    "eval --workers 0": (lambda w: _eval(w, "--out", "run", "--workers", "0"),
                         "--workers 0 is out of range. use an integer of 1 or more"),
    "eval --out ''": (lambda w: _eval(w, "--out", ""), "--out is empty"),
    "eval --out ' '": (lambda w: _eval(w, "--out", "  "), "--out is empty"),
    "eval --limit 0": (lambda w: _eval(w, "--out", "run", "--limit", "0"),
                       "--limit 0 is out of range"),
    "compare ''": (lambda w: ["compare", "", "elsewhere"], "FIRST is empty"),
    "bench --workers 0": (lambda w: ["bench", "scaling", "--workers", "0"],
                          "--workers 0 is out of range"),
    "bench --out ''": (lambda w: ["bench", "scaling", "--out", ""], "--out is empty"),
    "bench --latency -1": (lambda w: ["bench", "overhead", "--latency", "-1"],
                           "--latency -1.0 is out of range. use a number from 0.0 to 60.0"),
    "check --out ''": (lambda w: ["check", "-", "--framework", "standard", "--model",
                                  "scripted:agree", "--out", ""], "--out is empty"),
    "check --out <folder>": (lambda w: ["check", "-", "--framework", "standard", "--model",
                                        "scripted:agree", "--out", str(w)], "is a folder"),
    "check --rounds 0": (lambda w: ["check", "-", "--framework", "standard", "--model",
                                    "scripted:agree", "--rounds", "0"], "--rounds 0 is out of range"),
    "verify --index-dir ''": (lambda w: ["verify", "Paris is in France.", "--model",
                                         "scripted:agree", "--index-dir", ""],
                              "--index-dir is empty"),
    "index --index-dir ''": (lambda w: ["index", str(w.parent / "mini.jsonl"), "--index-dir", ""],
                             "--index-dir is empty"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_out_of_range_or_empty_flags_are_one_error_and_nothing_runs(work, case):
    args, message = CASES[case]
    result = CliRunner().invoke(app, args(work), input="Paris is in France.\n")
    assert result.exit_code == 2, (case, result.output)
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert list(work.iterdir()) == []  # nothing written into the working folder
    assert not (work.parent / "home" / "index").exists()  # no demo index built either


def test_a_run_yaml_with_workers_0_is_refused(work):
    config = work.parent / "run.yaml"
    config.write_text(f"out: {work.parent / 'runs'}\nworkers: 0\nruns:\n  - framework: standard\n"
                      f"    dataset: {work.parent / 'mini.jsonl'}\n")
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--model", "scripted:agree"])
    assert result.exit_code == 2 and "--workers 0 must be positive" in result.output, result.output
    assert not (work.parent / "runs").exists()


def test_the_defaults_still_apply_when_the_flags_are_left_out(work):
    result = CliRunner().invoke(app, _eval(work, "--out", "run"))
    assert result.exit_code == 0, result.output
    record = json.loads((work / "run" / "run.json").read_text())
    assert record["concurrency"] == 4
