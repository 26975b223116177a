"""The soak benchmark's pure parts: percentiles, quarter growth, slope, budget verdicts, the summary,
and the /proc readings of a process tree (this process and a child it starts)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from factdebate.evaluation.bench_soak import (
    GROWTH_BUDGET,
    percentile,
    process_tree,
    quarter_growth,
    slope,
    summarize,
    summary_text,
    tree_cpu_s,
    tree_rss_mb,
    verdicts,
)


def samples(values: list[float], key: str = "rss_mb", step: float = 10.0) -> list[dict]:
    return [{"t_s": i * step, key: v, "runs_done": i * 5} for i, v in enumerate(values)]


def test_percentile_interpolates_and_handles_the_edges():
    assert percentile([], 0.5) is None
    assert percentile([3.0], 0.99) == 3.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5  # sorted first
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.0) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 1.0) == 5.0
    assert percentile(list(range(101)), 0.99) == pytest.approx(99.0)


def test_quarter_growth_compares_the_first_and_last_quarter_after_the_warm_up():
    # warm-up (t < 20) climbs steeply and is ignored; then first quarter ~100, last ~130
    rows = samples([10, 50, 100, 100, 110, 120, 130, 130], step=10.0)
    out = quarter_growth(rows, "rss_mb", start_s=20.0, end_s=70.0)
    # span 50 s: first quarter is t in [20, 32.5] -> 100, 100; last is t in [57.5, 70] -> 130, 130
    assert out["samples"] == [2, 2]
    assert out["first_quarter_mean"] == 100 and out["last_quarter_mean"] == 130
    assert out["growth"] == pytest.approx(0.30)


def test_quarter_growth_without_samples_in_a_quarter_is_not_measured():
    out = quarter_growth(samples([100]), "rss_mb", start_s=0.0, end_s=100.0)
    assert out["growth"] is None and out["samples"] == [1, 0]
    zero = quarter_growth(samples([0, 0, 0, 0]), "rss_mb", start_s=0.0, end_s=30.0)
    assert zero["growth"] is None  # growth from 0 is undefined, not 0 %


def test_slope_is_least_squares():
    rows = [{"x": x, "y": 2.0 * x + 1.0} for x in range(5)]
    assert slope(rows, "x", "y") == pytest.approx(2.0)
    assert slope([{"x": 1, "y": 3}, {"x": 1, "y": 4}], "x", "y") is None


def figures(rss: float | None, checkpoints: float | None, errors: int = 0, lost_runs: int = 0,
            lost_threads: int = 0) -> dict:
    return {"rss_growth": {"growth": rss}, "checkpoints_growth": {"growth": checkpoints},
            "errors": errors, "lost_runs": lost_runs, "lost_threads": lost_threads}


def test_verdicts_meet_each_budget_only_when_it_is_measured_and_within():
    assert verdicts(figures(0.02, -0.05)) == {"rss_flat": True, "checkpoints_flat": True,
                                              "no_errors": True, "no_lost_runs": True}
    assert verdicts(figures(GROWTH_BUDGET, 0.0))["rss_flat"]  # the boundary is within
    assert not verdicts(figures(0.11, 0.0))["rss_flat"]
    assert not verdicts(figures(0.0, 0.5))["checkpoints_flat"]
    assert not verdicts(figures(None, 0.0))["rss_flat"]  # not measured is not met
    assert not verdicts(figures(0.0, 0.0, errors=1))["no_errors"]
    assert not verdicts(figures(0.0, 0.0, lost_runs=1))["no_lost_runs"]
    assert not verdicts(figures(0.0, 0.0, lost_threads=2))["no_lost_runs"]


def soak_samples(rss: list[float], checkpoints: list[float]) -> list[dict]:
    return [{"t_s": 10.0 * i, "rss_mb": r, "checkpoints": c, "bytes": c * 1000, "runs_done": 8 * i,
             "cpu_s": 2.0 * i} for i, (r, c) in enumerate(zip(rss, checkpoints, strict=True))]


def test_summarize_a_flat_run_meets_its_budgets_and_a_growing_one_does_not():
    latencies = [(5.0 * i, 1.0 + (i % 10) / 10) for i in range(40)]  # t 0..195 s
    flat = summarize(soak_samples([400, 480, 500, 505, 498, 502, 500, 501, 499, 503],
                                  [10, 60, 70, 72, 69, 71, 70, 70, 71, 70]),
                     latencies, duration_s=100.0, warmup_s=20.0, errors=0, lost_runs=0,
                     lost_threads=0)
    assert flat["verdicts"] == {"rss_flat": True, "checkpoints_flat": True, "no_errors": True,
                                "no_lost_runs": True}
    assert flat["runs"] == 40
    assert flat["server_cpu_s_per_run_in_mix"] == pytest.approx(0.25)  # 2 CPU s per 8 runs
    assert flat["run_latency_p50_s"] == pytest.approx(1.5)  # the 36 runs after the warm-up
    assert flat["run_latency_p99_s_all"] <= 1.9
    growing = summarize(soak_samples([400, 480, 500, 530, 560, 590, 620, 650, 680, 710],
                                     [10, 60, 70, 72, 69, 71, 70, 70, 71, 70]),
                        latencies, duration_s=100.0, warmup_s=20.0, errors=2, lost_runs=1,
                        lost_threads=0)
    assert growing["verdicts"] == {"rss_flat": False, "checkpoints_flat": True,
                                   "no_errors": False, "no_lost_runs": False}
    # 30 MB per 10 s while 8 runs finish per 10 s: 375 MB per 100 runs
    assert growing["rss_mb_per_100_runs_after_warmup"] == pytest.approx(375.0, rel=0.01)


def test_summary_text_names_every_verdict():
    result = summarize(soak_samples([500] * 10, [70] * 9 + [140]), [(30.0, 2.0)],
                       duration_s=100.0, warmup_s=20.0, errors=1, lost_runs=0, lost_threads=0)
    result.update({"duration_s": 100.0, "users": 4, "sessions": 2, "jobs": 8,
                   "model": "scripted:agree?latency=1", "runs_per_s": 0.01, "episodes": 1,
                   "operations": {"runs.wait": 1}, "warmup_s": 20.0,
                   "server_cpu_s_per_claim": 0.5, "lean_cpu_s_per_claim": 0.25,
                   "server_cpu_over_lean": 2.0, "budget_met": False,
                   "error_messages": ["soak1 run r1: status error"]})
    text = summary_text(result)
    assert "stored checkpoints" in text and "NOT MET" in text
    assert "errors 1: NOT MET" in text and "lost runs 0, lost threads 0: met" in text
    assert "ratio 2.0" in text and "soak1 run r1: status error" in text
    assert len(text.splitlines()) <= 24  # one screen


def test_process_tree_readings_cover_a_child_process():
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nx = b'x' * (64 * 2**20)\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.3: pass\ntime.sleep(30)"])
    try:
        import os

        me = os.getpid()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and tree_cpu_s(child.pid) < 0.25:
            time.sleep(0.1)
        assert child.pid in process_tree(me)
        assert tree_rss_mb(child.pid) >= 60  # the child's 64 MiB buffer
        assert tree_rss_mb(me) >= tree_rss_mb(child.pid) + 10  # the tree includes this process
        assert tree_cpu_s(child.pid) >= 0.25
        assert tree_cpu_s(me) > tree_cpu_s(child.pid)
    finally:
        child.kill()
        child.wait()
    assert tree_rss_mb(child.pid) == 0.0  # gone: nothing to read
