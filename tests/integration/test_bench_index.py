"""``factdebate bench index`` end to end on a tiny size (structure only; no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.evaluation.milvus_standalone import milvus_unavailable


@pytest.mark.slow  # ~3 min on a busy 2-core machine: two demo builds, a server start, MiniLM
def test_bench_index_writes_its_figures_and_section(tmp_path: Path):
    if milvus_unavailable():
        pytest.skip(milvus_unavailable())
    (tmp_path / "BENCHMARKS.md").write_text("# Benchmarks\n\n## record\n\nkept\n")
    result = CliRunner().invoke(app, ["bench", "index", "--sizes", "300", "--out",
                                      str(tmp_path / "out"), "--markdown",
                                      str(tmp_path / "BENCHMARKS.md")])
    assert result.exit_code == 0, result.output
    figures = json.loads((tmp_path / "out" / "index.json").read_text())
    per = figures["sizes"]["300"]
    for target in ("lite", "server"):
        assert per[target]["passages"] == 300 and per[target]["passages_per_s"] > 0
        assert 0 < per[target]["search_p50_ms"] <= per[target]["search_p99_ms"]
        assert per[target]["passages_per_s_with_embedding"] > 0 and per[target]["peak_rss_mb"] > 0
    assert per["server_slower_because"]
    assert set(figures["demo_build_s"]) == {"lite", "server"} and figures["demo_build_ratio"] > 0
    assert isinstance(figures["budget_met"], bool)
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "## index" in text and "| demo_build_ratio |" in text
    assert "## record" not in text  # BENCHMARKS.md holds benchmark sections only


def test_bench_sizes_must_be_counts(tmp_path: Path):
    result = CliRunner().invoke(app, ["bench", "index", "--sizes", "10k", "--out",
                                      str(tmp_path / "out")])
    errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "--sizes '10k'" in errors[0]
