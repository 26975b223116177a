"""``factdebate bench index`` end to end on a tiny size (structure only; no timing assertions)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.evaluation.bench_index import TARGET_PROCESS, Limits, run_target
from factdebate.evaluation.milvus_standalone import milvus_unavailable


@pytest.mark.slow  # ~3 min on a busy 2-core machine: two demo builds, a server start, MiniLM
def test_bench_index_writes_its_figures_and_section(tmp_path: Path):
    if milvus_unavailable():
        pytest.skip(milvus_unavailable())
    (tmp_path / "BENCHMARKS.md").write_text("# Benchmarks\n\n## record\n\nkept\n")
    # structure only: the timing budgets get limits no machine misses (bench exits 1 on a miss)
    result = CliRunner().invoke(app, ["bench", "index", "--sizes", "300", "--out",
                                      str(tmp_path / "out"), "--markdown",
                                      str(tmp_path / "BENCHMARKS.md"),
                                      "--budget", "demo_build_ratio=1000",
                                      "--budget", "search_p50_ms=100000",
                                      "--budget", "search_p99_ms=100000"])
    assert result.exit_code == 0, result.output
    figures = json.loads((tmp_path / "out" / "index.json").read_text())
    per = figures["sizes"]["300"]
    for target in ("lite", "server"):
        assert "failed" not in per[target], (target, per[target]["failed"])
        assert per[target]["passages"] == 300 and per[target]["passages_per_s"] > 0
        assert 0 < per[target]["search_p50_ms"] <= per[target]["search_p99_ms"]
        assert per[target]["peak_rss_mb"] > 0 and len(per[target]["load_1m"]) == 2
        measured = per[target]["with_embedding"]  # the smallest size: embedded inside the build
        assert measured["embed_s"] > 0 and measured["passages"] == 300
        assert per[target]["passages_per_s_with_embedding"] == \
            measured["passages_per_s_with_embedding"] > 0
    assert per["server_slower_because"]
    assert "pending_index_rows" in per["server"]["at_search_start"]  # the server's background work
    assert "at_search_start" not in per["lite"]
    assert figures["embedding"]["passages"] == 300 and figures["embedding"]["ms_per_passage"] > 0
    assert len(figures["load_avg"]["start"]) == len(figures["load_avg"]["end"]) == 3
    assert set(figures["demo_build_s"]) == {"lite", "server"} and figures["demo_build_ratio"] > 0
    # nothing missed (generous limits above); the server-vs-Lite budget needs a size >= 100,000
    assert figures["budget_met"] is None and len(figures["budgets"]) == 4
    assert [b["name"] for b in figures["budgets"] if not b["judged"]] == ["server_build_vs_lite"]
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "## index" in text and "| 300 | lite |" in text and "| 300 | server |" in text
    assert '{"' not in text  # a table, not a JSON blob
    assert "## record" not in text  # BENCHMARKS.md holds benchmark sections only


def test_a_target_past_its_memory_limit_is_recorded_not_raised(tmp_path: Path):
    limits = Limits(memory_mb=40, timeout_s=600)  # the Lite process passes 40 MB while importing
    figures = run_target(str(tmp_path / "lite" / "milvus.db"), "bench", 1_000_000, limits=limits)
    assert figures["failed"].startswith("stopped: the Lite process passed the 40 MB memory limit")
    assert figures["passages"] == 1_000_000 and "passages_per_s" not in figures
    assert figures["peak_rss_mb"] > 40 and len(figures["load_1m"]) == 2


def test_a_target_killed_like_the_oom_killer_does_is_recorded(tmp_path: Path):
    def kill_on_first_progress(stage: str, done: int, total: int) -> None:
        for child in multiprocessing.active_children():
            if child.name == TARGET_PROCESS:
                os.kill(child.pid, signal.SIGKILL)

    figures = run_target(str(tmp_path / "lite" / "milvus.db"), "bench", 1_000_000,
                         limits=Limits(timeout_s=600), on_progress=kill_on_first_progress)
    assert figures["failed"].startswith("the target's process killed by SIGKILL during insert")


def test_a_target_that_raises_is_recorded_with_its_error(tmp_path: Path):
    figures = run_target(str(tmp_path / "lite" / "milvus.sqlite"), "bench", 300,
                         limits=Limits(timeout_s=600))
    assert figures["failed"].startswith("ConfigError: Milvus Lite path")
    assert "must end in '.db'" in figures["failed"]


def test_bench_sizes_must_be_counts(tmp_path: Path):
    result = CliRunner().invoke(app, ["bench", "index", "--sizes", "10k", "--out",
                                      str(tmp_path / "out")])
    errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "--sizes '10k'" in errors[0]
