"""``factdebate eval --workers N``: items in worker processes (``evaluation/workers.py``).

Real components: worker processes forked from a multiprocessing fork server, the Milvus Lite index
of ``wiki_index`` served by the coordinating process over loopback gRPC, tantivy opened by every
worker, one SQLite checkpoint database written by several processes. The model is the scripted
double (deterministic), so a run with workers must give exactly the rows of a run without.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from factdebate.evaluation.runner import RunSpec, run_eval
from factdebate.evaluation.workers import WorkerPool

REPO = Path(__file__).resolve().parents[2]
FACTDEBATE = Path(sys.executable).parent / "factdebate"
DATA = os.environ.get("FACTDEBATE_DATA_DIR")

pytestmark = pytest.mark.skipif(
    not DATA, reason="FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")

SAME = ("item_id", "status", "prediction", "rounds", "stopped_by", "final_labels", "turn_labels",
        "scores", "ledger", "flags", "contexts", "thread_id")


def spec(out: Path, index: Path, *, workers: int, latency: float = 0.0, limit: int = 12,
         concurrency: int = 4, **extra) -> RunSpec:
    return RunSpec(framework="tool_mad", dataset="fever", out=out, limit=limit, seed=3,
                   concurrency=concurrency, model=f"scripted:disagree?latency={latency}",
                   data_dir=DATA, workers=workers, sets=[f"index_dir={index}"], **extra)


def rows_of(out: Path) -> dict[str, dict]:
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == len({r["item_id"] for r in rows}), "duplicate rows"
    return {r["item_id"]: r for r in rows}


def strip_run_id(row: dict) -> dict:
    kept = {k: row.get(k) for k in SAME}
    kept["thread_id"] = kept["thread_id"].split(":", 1)[1]  # the run id part is random
    return kept


@pytest.fixture(scope="module")
def one_process(wiki_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("w1") / "run"
    asyncio.run(run_eval(spec(out, wiki_index, workers=1)))
    return out


async def _pooled(run: RunSpec, pool: WorkerPool) -> None:
    await run_eval(run, pool=pool)


def test_workers_give_the_rows_of_one_process_and_share_the_items(
        wiki_index: Path, one_process: Path, tmp_path: Path):
    out = tmp_path / "w2"

    async def main() -> list[int]:
        async with WorkerPool(2) as pool:
            await run_eval(spec(out, wiki_index, workers=2), pool=pool)
            assert all(rss and rss > 50 for rss in pool.peak_rss_mb())
            return [w.items_done for w in pool.workers]

    done = asyncio.run(main())
    assert sum(done) == 12 and min(done) >= 2, f"items per worker: {done}"
    mine, theirs = rows_of(out), rows_of(one_process)
    assert set(mine) == set(theirs)
    assert all(r["status"] == "ok" for r in mine.values())
    # the rag debater searched Milvus Lite through the coordinator's server
    assert all(r["ledger"]["tool_calls"].get("milvus") == 3 for r in mine.values())
    for item_id, row in mine.items():
        assert strip_run_id(row) == strip_run_id(theirs[item_id])


def test_a_killed_worker_costs_only_its_items_and_they_resume(wiki_index: Path, one_process: Path,
                                                              tmp_path: Path):
    out = tmp_path / "crash"
    run = spec(out, wiki_index, workers=2, latency=0.05)

    async def main() -> None:
        async with WorkerPool(2) as pool:
            task = asyncio.create_task(run_eval(run, pool=pool))
            victim = pool.workers[0]
            deadline = time.monotonic() + 120
            while not victim.in_flight and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)  # mid-debate
            os.kill(victim.process.pid, signal.SIGKILL)
            await task
            rows = rows_of(out)
            errors = [r for r in rows.values() if r["status"] == "error"]
            assert len(rows) == 12 and errors, "the killed worker's items must be error rows"
            assert all(r["error"]["type"] == "WorkerCrashed" for r in errors)
            # the survivor reruns them from their checkpoints
            await run_eval(spec(out, wiki_index, workers=2, latency=0.05, resume=True,
                                retry_errors=True), pool=pool)

    asyncio.run(main())
    rows, reference = rows_of(out), rows_of(one_process)
    assert set(rows) == set(reference) and all(r["status"] == "ok" for r in rows.values())
    for item_id, row in rows.items():
        assert strip_run_id(row) == strip_run_id(reference[item_id])


def _marked_processes(mark: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if mark.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.slow  # 20-50 s: `make test-slow` (.ci/run runs both tiers)
def test_workers_exit_when_the_coordinator_is_killed_and_the_run_resumes(
        wiki_index: Path, one_process: Path, tmp_path: Path):
    from factdebate.tools.base import clear_retriever_cache

    clear_retriever_cache()  # this process's runs above hold the Milvus Lite folder
    out = tmp_path / "killed"
    mark = f"FD_TEST_MARK={uuid.uuid4().hex}"
    args = [str(FACTDEBATE), "eval", "--framework", "tool_mad", "--dataset", "fever", "--limit",
            "12", "--seed", "3", "--concurrency", "4", "--workers", "2", "--model",
            "scripted:disagree?latency=0.05", "--out", str(out), "--set",
            f"index_dir={wiki_index}"]
    env = {**os.environ, "FACTDEBATE_HOME": str(tmp_path / "home"), "FACTDEBATE_DATA_DIR": DATA,
           mark.split("=")[0]: mark.split("=")[1]}
    env.pop("LANGSMITH_TRACING", None)
    proc = subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and len(results.read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        assert len(_marked_processes(mark)) >= 3  # coordinator, fork server, workers
        proc.send_signal(signal.SIGKILL)  # the coordinator only: the workers must notice
        proc.wait()
        deadline = time.monotonic() + 30
        while _marked_processes(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _marked_processes(mark), "worker processes outlived their coordinator"
    finally:
        for pid in _marked_processes(mark):
            os.kill(pid, signal.SIGKILL)
    before = len(results.read_text().splitlines())
    assert 3 <= before < 12, f"kill landed at {before} rows"
    resumed = subprocess.run([*args, "--resume"], env=env, cwd=REPO, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    rows, reference = rows_of(out), rows_of(one_process)
    assert set(rows) == set(reference)
    for item_id, row in rows.items():
        assert strip_run_id(row) == strip_run_id(reference[item_id])


def test_workers_refuse_server_runs_and_bad_counts(tmp_path: Path):
    from factdebate.core.errors import InputError

    with pytest.raises(InputError, match="--workers"):
        asyncio.run(run_eval(RunSpec(framework="tool_mad", dataset="fever", out=tmp_path / "a",
                                     workers=0, data_dir=DATA)))
    with pytest.raises(InputError, match="--server"):
        asyncio.run(run_eval(RunSpec(framework="tool_mad", dataset="fever", out=tmp_path / "b",
                                     workers=2, server="http://127.0.0.1:9", data_dir=DATA)))
