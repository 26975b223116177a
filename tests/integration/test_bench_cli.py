"""``factdebate bench corpus`` as a user runs it, a process of its own on a 200-page dump (seconds):
progress on stderr while it runs, one line per budget on stdout, and the exit code - 0 when the
budgets it can judge are met (a dump this small judges none: each says what it needs), 1 when a
judged budget is missed (``--budget`` makes one impossible)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.cli_process import run_cli


@pytest.mark.slow  # two bench processes (~15-25 s): the slow tier
def test_bench_corpus_small_run_states_its_budgets_and_exits_by_them(tmp_path: Path):
    out = tmp_path / "out"
    args = ["bench", "corpus", "--pages", "200", "--embed-sample", "0", "--out", str(out)]
    done = run_cli(args, tmp_path / "home", timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    budgets = [ln for ln in done.stdout.splitlines() if ln.startswith("bench corpus: ")]
    assert len(budgets) == 7, done.stdout  # six budgets and the summary
    assert "bench corpus: 6 budgets: 0 met, 0 missed, 6 not judged" in budgets[-1]
    assert all("not judged: " in ln for ln in budgets[:-1])
    assert "pages_per_s measured" in budgets[0] and "needs --pages >= 200,000 (this run: 200)" \
        in budgets[0]
    # the stages as they start and end, with how far and how fast
    assert "bench corpus: import, chunk passages (200 pages): started" in done.stderr
    assert "bench corpus: import, sentence passages: done in" in done.stderr
    saved = json.loads((out / "corpus.json").read_text())
    assert saved["pages"] == 200 and saved["budget_met"] == {
        "pages_per_s": None, "rss_under_2gb": None, "anon_rss_independent_of_size": None}

    missed = run_cli([*args, "--budget", "peak_rss_mb=1"], tmp_path / "home", timeout=240)
    assert missed.returncode == 1, missed.stderr[-3000:]
    assert "Traceback" not in missed.stderr
    line = next(ln for ln in missed.stdout.splitlines() if "peak_rss_mb" in ln)
    assert line.startswith("bench corpus: peak_rss_mb measured ") and \
        line.endswith("(limit < 1 MB): MISSED")
    saved = json.loads((out / "corpus.json").read_text())
    rss = next(b for b in saved["budgets"] if b["name"] == "peak_rss_mb")
    assert (rss["judged"], rss["met"], rss["limit"], rss["limit_default"]) == (True, False, 1, 2048)
    assert saved["budget_overrides"] == {"peak_rss_mb": 1.0}
