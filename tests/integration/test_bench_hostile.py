"""``bench hostile`` runs its cases against the installed CLI and judges each: two fast cases here
(a dump's first line nested 100,000 deep; an embedding provider answering NaN vectors), the whole
set in ``factdebate bench hostile`` (BENCHMARKS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from factdebate.core.errors import InputError
from factdebate.evaluation.bench_hostile import CASES, run_hostile


@pytest.mark.slow  # two cases, each a CLI process under measurement (~10-17 s): the slow tier;
# their errors in the default one: test_deep_json.py, tests/unit/test_embedding_output_checks.py
def test_fast_cases_are_measured_and_met(tmp_path: Path) -> None:
    record = run_hostile(tmp_path, ["dump-deep-json", "nan-vectors"])
    cases = {c["name"]: c for c in record["cases"]}
    assert set(cases) == {"dump-deep-json", "nan-vectors"}
    for case in cases.values():
        assert case["met"], case
        assert case["exit_code"] == case["expected_exit"] == 2
        assert 0 < case["peak_rss_mb"] < record["rss_budget_mb"]
    assert "nested deeper" in cases["dump-deep-json"]["line"]
    assert "NaN or infinite" in cases["nan-vectors"]["line"]
    assert [b["met"] for b in record["budgets"]] == [True, True]
    assert "| dump-deep-json |" in record["table"]
    # the large inputs are removed, the output kept
    assert sorted(p.name for p in (tmp_path / "cases" / "nan-vectors").iterdir()) == [
        "output.txt", "rusage.json"]


def test_every_case_is_named_and_an_unknown_one_refused(tmp_path: Path) -> None:
    assert len({c.name for c in CASES}) == len(CASES) == 10
    with pytest.raises(InputError, match="unknown hostile case"):
        run_hostile(tmp_path, ["no-such-case"])
