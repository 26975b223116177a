"""Building blocks on real files: run-folder lock, resume comparison, results damage,
storage-fault classification, atomic run.json, stale temp files of killed exports."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys

import pytest

from factdebate.core.errors import InputError, InUseError, storage_problem
from factdebate.evaluation.checkpointers import sqlite_damage
from factdebate.evaluation.results import read_results, repair_results
from factdebate.evaluation.run_folder import (
    RunLock,
    check_resume,
    read_run_record,
    run_store_fault,
    write_json_atomic,
)
from factdebate.tools.embeddings_onnx import remove_dead_exports

RECORD = {"run_id": "r1", "framework": "standard", "dataset": "d", "dataset_version": "v",
          "task": "fever", "data_sha256": "abc", "seed": 0, "context": {"top_k": 3},
          "prompt_version": "p1", "metrics": [], "metric_model": "m", "limit": 2,
          "item_ids": ["a", "b"], "data_file": "/x/d.jsonl"}


def test_run_lock_refuses_a_second_holder_in_another_process(tmp_path):
    with RunLock(tmp_path):
        other = subprocess.run(
            [sys.executable, "-c", "import sys; from pathlib import Path; "
             "from factdebate.evaluation.run_folder import RunLock; "
             f"RunLock(Path({str(tmp_path)!r})).__enter__()"], capture_output=True, text=True)
        assert other.returncode != 0 and "InUseError" in other.stderr
        assert f"in use by process {os.getpid()}" in other.stderr
    (tmp_path / ".lock").write_text("424242\n")  # a killed holder's pid, no flock held
    with RunLock(tmp_path) as lock:
        assert lock.taken_over == "424242"


def test_check_resume_names_differences_and_extends_only_upwards(tmp_path):
    same = dict(RECORD)
    assert check_resume(RECORD, same, tmp_path) is RECORD
    with pytest.raises(InputError, match=r"--seed 0 -> 3"):
        check_resume(RECORD, dict(RECORD, seed=3), tmp_path)
    with pytest.raises(InputError, match="data file changed"):
        check_resume(RECORD, dict(RECORD, data_sha256="def"), tmp_path)
    with pytest.raises(InputError, match="settings top_k"):
        check_resume(RECORD, dict(RECORD, context={"top_k": 5}), tmp_path)
    with pytest.raises(InputError, match="smaller sample"):
        check_resume(RECORD, dict(RECORD, limit=1, item_ids=["a"]), tmp_path)
    grown = check_resume(RECORD, dict(RECORD, limit=3, item_ids=["a", "b", "c"]), tmp_path)
    assert grown["item_ids"] == ["a", "b", "c"] and grown["extensions"][0]["from_limit"] == 2


def test_results_damage_is_named_and_repair_sets_it_aside(tmp_path):
    path = tmp_path / "results.jsonl"
    good = [json.dumps({"item_id": i, "status": "ok"}) for i in "abc"]
    path.write_bytes((good[0] + "\n").encode() + b"\xff\xfe{not json\n" + (good[1] + "\n").encode()
                     + b'["a list"]\n' + (good[2] + "\n").encode() + b'{"item_id": "d", "sta')
    with pytest.raises(InputError, match=r"line\(s\) 2, 4 are not readable"):
        read_results(path)
    assert repair_results(path) == 2
    assert [r["item_id"] for r in read_results(path)] == ["a", "b", "c"]
    aside = list(tmp_path.glob("results.jsonl.damaged-*"))
    assert len(aside) == 1 and aside[0].read_bytes().count(b"\n") == 2


@pytest.mark.parametrize("content,why", [("", "empty file"), ("{", "invalid JSON"),
                                         ('{"run_id": "x"}', "not a run record")])
def test_damaged_run_json_is_named(tmp_path, content, why):
    (tmp_path / "run.json").write_text(content)
    with pytest.raises(InputError, match=why):
        read_run_record(tmp_path)


def test_write_json_atomic_leaves_no_temp_and_whole_file(tmp_path):
    write_json_atomic(tmp_path / "run.json", RECORD)
    assert json.loads((tmp_path / "run.json").read_text()) == RECORD
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_storage_faults_stop_the_run_item_faults_do_not():
    full = sqlite3.OperationalError("database or disk is full")
    assert storage_problem(full) == "database or disk is full"
    assert run_store_fault(RuntimeError("wrapped")) is None
    chained = RuntimeError("graph failed")
    chained.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert "No space left" in str(run_store_fault(chained))
    assert "damaged" in str(run_store_fault(sqlite3.DatabaseError("file is not a database")))
    assert run_store_fault(TimeoutError("model timed out")) is None


def test_sqlite_damage_detects_random_bytes(tmp_path):
    db = tmp_path / "c.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("create table t (x)")
        conn.executemany("insert into t values (?)", [(i,) for i in range(500)])
    conn.close()
    assert sqlite_damage(db) == ""
    db.write_bytes(os.urandom(db.stat().st_size))
    assert "not a database" in sqlite_damage(db)


def test_killed_export_temp_files_are_removed_live_ones_kept(tmp_path):
    dead = tmp_path / "minilm-abc-opset17.99999999.tmp"
    live = tmp_path / f"minilm-abc-opset17.{os.getppid()}.tmp"
    dead.write_bytes(b"half")
    live.write_bytes(b"half")
    assert remove_dead_exports(tmp_path) == [dead]
    assert live.exists() and not dead.exists()


def test_in_use_error_exit_code():
    assert InUseError("x").exit_code == 6
