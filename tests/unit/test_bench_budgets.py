"""The budgets every benchmark states: the verdict of one budget (met, missed, not judged), the
benches' own budget lists on short and long runs, and ``factdebate bench``'s exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.core.registry import Entry
from factdebate.evaluation.bench_budgets import (
    BUDGET_MISSED_EXIT,
    budget,
    budget_line,
    exit_code,
    legacy_met,
    missed,
    overall,
    override_limits,
    parse_overrides,
    summary_line,
)

# --- one budget ----------------------------------------------------------------------------------


def test_a_budget_is_met_missed_or_not_judged():
    met = budget("pages_per_s", "import >= 10,000 pages/s", 12_000, ">=", 10_000, unit="pages/s")
    assert (met["judged"], met["met"]) == (True, True)
    bad = budget("pages_per_s", "import >= 10,000 pages/s", 9_000, ">=", 10_000, unit="pages/s")
    assert (bad["judged"], bad["met"]) == (True, False)
    short = budget("rss_growth", "flat", 0.5, "<=", 0.1, why_not_judged="needs >= 600 s")
    assert (short["judged"], short["met"]) == (False, None)  # neither met nor missed
    assert short["measured"] == 0.5  # the figure is still reported
    unmeasured = budget("cut", "prompt cut", None, ">=", 0.3)
    assert (unmeasured["judged"], unmeasured["met"], unmeasured["why_not_judged"]) == \
        (False, None, "not measured")
    boundary = budget("growth", "flat", 0.1, "<=", 0.1)
    assert boundary["met"] is True  # the limit itself is within


def test_a_budget_that_judges_a_miss_judges_only_the_miss_on_a_small_run():
    small = "needs --pages >= 200,000"
    passing = budget("peak_rss_mb", "< 2 GB", 90.0, "<", 2048, why_not_judged=small,
                     judged_when_missed=True)
    assert (passing["judged"], passing["met"]) == (False, None)
    over = budget("peak_rss_mb", "< 2 GB", 3000.0, "<", 2048, why_not_judged=small,
                  judged_when_missed=True)
    assert (over["judged"], over["met"]) == (True, False)


def test_a_composite_budget_takes_its_verdict_from_the_caller():
    entry = budget("server_build_vs_lite", ">= Lite at every size", "1,000,000: server 900/s",
                   met=False)
    assert (entry["judged"], entry["met"]) == (True, False)
    with pytest.raises(ValueError, match="neither op nor met"):
        budget("x", "y", 1.0)
    with pytest.raises(ValueError, match="unknown budget operator"):
        budget("x", "y", 1.0, "~", 1.0)


def test_budget_lines_name_the_figure_the_limit_and_the_verdict():
    assert budget_line("corpus", budget("pages_per_s", "t", 12_345, ">=", 10_000,
                                        unit="pages/s")) == \
        "bench corpus: pages_per_s measured 12,345 pages/s (limit >= 10,000 pages/s): met"
    assert budget_line("soak", budget("errors", "no errors", 3, "<=", 0)) == \
        "bench soak: errors measured 3 (limit <= 0): MISSED"
    assert budget_line("soak", budget("rss_growth", "t", 0.0321, "<=", 0.1,
                                      why_not_judged="needs --duration >= 600 s")) == \
        "bench soak: rss_growth measured 0.0321 (limit <= 0.1): not judged: needs --duration >= 600 s"
    entries = [budget("a", "t", 1, "<=", 2), budget("b", "t", 3, "<=", 2),
               budget("c", "t", None, "<=", 2)]
    assert summary_line("x", entries) == "bench x: 3 budgets: 1 met, 1 missed, 1 not judged"


# --- verdicts of a run and the exit code ---------------------------------------------------------

MET = budget("a", "t", 1, "<=", 2)
MISSED = budget("b", "t", 3, "<=", 2)
NOT_JUDGED = budget("c", "t", 3, "<=", 2, why_not_judged="too short")


@pytest.mark.parametrize(("entries", "verdict", "code"), [
    ([MET], True, 0),
    ([MET, MISSED], False, BUDGET_MISSED_EXIT),
    ([MET, NOT_JUDGED], None, 0),  # nothing missed, but not everything judged
    ([NOT_JUDGED, MISSED], False, BUDGET_MISSED_EXIT),
    ([], None, 0),
])
def test_overall_verdict_and_exit_code(entries: list[dict[str, Any]], verdict: bool | None,
                                       code: int):
    assert overall(entries) is verdict
    assert exit_code([{"budgets": entries}]) == code
    assert exit_code([{"budgets": [MET]}, {"budgets": entries}]) == code  # any bench of a command
    assert [b["name"] for b in missed(entries)] == [b["name"] for b in entries if b is MISSED]


def test_index_budgets_written_before_judged_existed_still_count():
    """``met`` None without ``judged`` (an index result of an earlier commit) is not judged."""
    assert overall([{"budget": "x", "measured": "not measured", "met": None}]) is None
    assert exit_code([{"budgets": [{"budget": "x", "met": False}]}]) == BUDGET_MISSED_EXIT


def test_overrides_parse_and_rejudge_numeric_budgets_only():
    assert parse_overrides(["peak_rss_mb=1", " errors = 2.5"]) == {"peak_rss_mb": 1.0,
                                                                   "errors": 2.5}
    for bad in ("peak_rss_mb", "=1", "x=fast", "x=nan"):
        with pytest.raises(ValueError, match="is not NAME=NUMBER"):
            parse_overrides([bad])
    result = {"budget_met": {"pages_per_s": None, "rss_under_2gb": None},
              "budgets": [
                  {**budget("pages_per_s", "t", 300, ">=", 10_000, why_not_judged="small"),
                   "legacy": "pages_per_s"},
                  {**budget("peak_rss_mb", "t", 91.0, "<", 2048, why_not_judged="small",
                            judged_when_missed=True), "legacy": "rss_under_2gb"},
                  budget("shape", "same calls", "composite", met=True)]}
    applied, refused = override_limits(result, {"peak_rss_mb": 1, "pages_per_s": 1, "shape": 2})
    assert applied == {"peak_rss_mb", "pages_per_s"} and refused == {"shape"}
    rss, rate = result["budgets"][1], result["budgets"][0]
    assert (rss["limit"], rss["limit_default"], rss["judged"], rss["met"]) == (1, 2048, True, False)
    assert (rate["judged"], rate["met"]) == (False, None)  # a small run stays not judged
    assert result["budget_met"] == {"pages_per_s": None, "rss_under_2gb": False}
    assert exit_code([result]) == BUDGET_MISSED_EXIT


def test_legacy_budget_met_keeps_each_bench_s_shape():
    entries = [budget("hybrid_recall.hover_dev", "t", 0.05, ">=", 0.03),
               budget("dense_p50", "t", 30.0, "<=", 20.0),
               budget("keyword_p50", "t", 1.0, "<=", 5.0, why_not_judged="small")]
    assert legacy_met({"hybrid_recall": {"hover_dev": None}, "dense_p50": None,
                       "keyword_p50": None}, entries) == \
        {"hybrid_recall": {"hover_dev": True}, "dense_p50": False, "keyword_p50": None}
    assert legacy_met(True, entries) is False


# --- each bench's budgets ------------------------------------------------------------------------

def _import(pages: int, pps: int, rss: float, anon: float) -> dict[str, Any]:
    return {"pages": pages, "pages_per_s": pps, "peak_rss_mb": rss, "peak_rss_anon_mb": anon}


def test_corpus_budgets_are_judged_from_a_fever_size_dump_only():
    from factdebate.evaluation.bench_corpus import JUDGED_FROM_PAGES, corpus_budgets

    tiny = {"pages": 200, "smaller_pages": 200, "embedding": {"skipped": "no sample asked for"},
            "imports": {"200_chunk": _import(200, 250, 91.0, 70.0)}}
    entries = {b["name"]: b for b in corpus_budgets(tiny)}
    assert not any(b["judged"] for b in entries.values())
    assert f"needs --pages >= {JUDGED_FROM_PAGES:,} (this run: 200)" in \
        entries["pages_per_s"]["why_not_judged"]
    assert set(entries) == {"pages_per_s", "peak_rss_mb", "anon_rss_ratio", "embedding.speedup",
                            "embedding.ours_agreement", "embedding.int8_agreement"}
    full = {"pages": 1_000_000, "smaller_pages": 250_000,
            "imports": {"250000_chunk": _import(250_000, 23_000, 171.0, 146.0),
                        "1000000_chunk": _import(1_000_000, 9_000, 595.0, 250.0)},
            "embedding": {"budgets": [budget("speedup", "t", 2.6, ">=", 3.0)]}}
    entries = {b["name"]: b for b in corpus_budgets(full)}
    assert entries["pages_per_s"]["met"] is False  # 9,000 < 10,000
    assert entries["peak_rss_mb"]["met"] is True
    assert entries["anon_rss_ratio"]["measured"] == round(250 / 146, 3)
    assert entries["anon_rss_ratio"]["met"] is False  # 1.71x > 1.5x
    # 200,000 pages judge the import's rate, not memory growth over a quarter still filling
    mid = {"pages": 200_000, "smaller_pages": 50_000, "embedding": {"skipped": "x"},
           "imports": {"50000_chunk": _import(50_000, 10_000, 123.0, 97.0),
                       "200000_chunk": _import(200_000, 21_500, 172.0, 146.0)}}
    judged = {b["name"]: b for b in corpus_budgets(mid)}
    assert judged["pages_per_s"]["met"] is True and judged["peak_rss_mb"]["met"] is True
    assert judged["anon_rss_ratio"]["judged"] is False
    assert "--pages >= 800,000 (this run: 50,000 of 200,000)" in \
        judged["anon_rss_ratio"]["why_not_judged"]
    assert entries["embedding.speedup"]["met"] is False
    over = {**tiny, "imports": {"200_chunk": _import(200, 250, 3000.0, 2900.0)}}
    assert {b["name"]: b for b in corpus_budgets(over)}["peak_rss_mb"]["met"] is False


def test_soak_growth_is_not_judged_on_a_short_soak_but_errors_are():
    from factdebate.evaluation.bench_soak import GROWTH_JUDGED_FROM_S, soak_budgets, summary_text

    quarters = {"first_quarter_mean": 100.0, "last_quarter_mean": 140.0}
    figures = {"rss_growth": {**quarters, "growth": 0.4, "samples": [4, 4]},
               "checkpoints_growth": {**quarters, "growth": 0.0, "samples": [4, 4]},
               "errors": 1, "lost_runs": 0, "lost_threads": 0}
    short = {b["name"]: b for b in soak_budgets(figures, duration_s=60.0)}
    assert short["rss_growth"]["judged"] is False and short["rss_growth"]["met"] is None
    assert f"needs --duration >= {GROWTH_JUDGED_FROM_S:.0f} s (this run: 60 s)" in \
        short["rss_growth"]["why_not_judged"]
    assert short["errors"]["met"] is False and short["lost"]["met"] is True
    long = {b["name"]: b for b in soak_budgets(figures, duration_s=1800.0)}
    assert long["rss_growth"]["met"] is False and long["checkpoints_growth"]["met"] is True
    few = {**figures, "rss_growth": {**quarters, "growth": 0.0, "samples": [1, 2]}}
    assert "samples in the first and the last quarter" in \
        {b["name"]: b for b in soak_budgets(few, 1800.0)}["rss_growth"]["why_not_judged"]
    result = {"duration_s": 60.0, "users": 1, "sessions": 1, "jobs": 1, "model": "m", "runs": 3,
              "runs_per_s": 0.1, "episodes": 1, "operations": {}, "warmup_s": 6.0,
              "run_latency_p50_s": 1.0, "run_latency_p99_s": 1.0,
              "rss_growth": figures["rss_growth"], "checkpoints_growth": figures["checkpoints_growth"],
              "bytes_growth": {"first_quarter_mean": 1, "last_quarter_mean": 1, "growth": 0.0},
              "rss_mb_per_100_runs_after_warmup": 1.0, "errors": 0, "lost_runs": 0,
              "lost_threads": 0, "server_cpu_s_per_claim": 0.1, "lean_cpu_s_per_claim": 0.1,
              "server_cpu_over_lean": 1.0, "server_cpu_s_per_run_in_mix": 0.1,
              "error_messages": [], "verdicts": {"rss_flat": False, "checkpoints_flat": True,
                                                 "no_errors": True, "no_lost_runs": True}}
    result["budgets"] = soak_budgets({**figures, "errors": 0}, 60.0)
    result["budget_met"] = overall(result["budgets"])
    text = summary_text(result)
    assert "NOT MET" not in text and "not judged: needs --duration" in text
    assert "budget: nothing missed, some budgets not judged" in text


def test_retrieval_tokens_and_embedding_budgets_say_what_they_need():
    from factdebate.evaluation.bench import retrieval_budgets
    from factdebate.evaluation.bench_embedding import embedding_budgets
    from factdebate.evaluation.bench_tokens import tokens_budget

    per = {"milvus": {"recall@3": 0.5}, "keyword": {"recall@3": 0.6}, "hybrid": {"recall@3": 0.7}}
    result = {"quality": {"feverous_dev": per, "hover_dev": per},
              "sets": {"feverous_dev": 300, "hover_dev": 12},
              "latency_at_pad": {"passages": 40, "milvus": {"p50_ms": 3.0},
                                 "keyword": {"p50_ms": 1.0}}}
    entries = {b["name"]: b for b in retrieval_budgets(result)}
    assert entries["hybrid_recall.feverous_dev"]["met"] is True
    assert "needs >= 100 claims" in entries["hybrid_recall.hover_dev"]["why_not_judged"]
    assert not entries["dense_p50"]["judged"] and "--pad-to" in entries["dense_p50"]["why_not_judged"]
    assert tokens_budget(0.35, 3, ran_tool_mad=True)["met"] is True
    assert tokens_budget(0.35, 1, ran_tool_mad=True)["judged"] is False
    assert tokens_budget(None, 3, ran_tool_mad=False)["why_not_judged"] == \
        "Tool-MAD was not among the frameworks run"
    no_st = embedding_budgets({"ours": {"passages_per_s": 50.0},
                               "sentence_transformers": {"skipped": "not installed"},
                               "int8_compute": {"passages_per_s": 80.0}})
    assert [b["judged"] for b in no_st] == [False, False, False]
    assert no_st[0]["why_not_judged"] == "not installed"
    agree = {"queries_top10_agreement": 0.97}
    measured = {"ours": {"speedup": 9.4, **agree}, "int8_compute": agree}
    small = embedding_budgets({**measured, "passages": 100})
    assert [b["judged"] for b in small] == [False, True, True]  # agreement: texts of its own
    assert small[0]["why_not_judged"] == "needs >= 1,000 passages timed (this run: 100)"
    assert [b["met"] for b in embedding_budgets({**measured, "passages": 2000})] == [True] * 3


def test_index_budgets_carry_the_uniform_fields():
    from factdebate.evaluation.bench_index import index_budgets

    entries = index_budgets({"sizes": {}, "demo_build_ratio": 3.0})
    assert [b["name"] for b in entries] == ["demo_build_ratio", "server_build_vs_lite",
                                            "search_p50_ms", "search_p99_ms"]
    demo = entries[0]
    assert demo["measured"] == "3.0x" and demo["value"] == 3.0 and demo["met"] is False
    assert all(not b["judged"] for b in entries[1:])
    assert "no size >= " in entries[1]["why_not_judged"]


# --- the CLI -------------------------------------------------------------------------------------

@pytest.fixture
def fake_bench(monkeypatch: pytest.MonkeyPatch):
    """Register bench ``fake`` whose budgets are the ones given to it."""
    from factdebate.evaluation.bench import BENCHES

    holder: dict[str, Any] = {}

    def fake(work_dir: Path, **_: Any) -> dict[str, Any]:
        entries = [dict(b) for b in holder["budgets"]]
        return {"budget": "test budgets", "budget_met": overall(entries), "budgets": entries}

    monkeypatch.setitem(BENCHES._entries, "fake", Entry("fake", fake, {}))

    def give(*entries: dict[str, Any]) -> None:
        holder["budgets"] = entries

    return give


def _bench(tmp_path: Path, *args: str):
    from factdebate.cli.main import app

    return CliRunner().invoke(app, ["bench", "fake", "--out", str(tmp_path / "o"), *args])


def test_cli_exits_0_when_met_or_not_judged_and_1_when_a_judged_budget_is_missed(
        tmp_path: Path, fake_bench):
    fake_bench(MET, NOT_JUDGED)
    done = _bench(tmp_path)
    assert done.exit_code == 0, done.output
    assert "bench fake: a measured 1 (limit <= 2): met" in done.output
    assert "bench fake: c measured 3 (limit <= 2): not judged: too short" in done.output
    assert "bench fake: 2 budgets: 1 met, 0 missed, 1 not judged" in done.output
    fake_bench(MET, MISSED, NOT_JUDGED)
    done = _bench(tmp_path)
    assert done.exit_code == BUDGET_MISSED_EXIT == 1, done.output
    assert "bench fake: b measured 3 (limit <= 2): MISSED" in done.output
    saved = json.loads((tmp_path / "o" / "fake.json").read_text())
    assert [b["met"] for b in saved["budgets"]] == [True, False, None]  # written all the same


def test_cli_budget_flag_rejudges_and_refuses_bad_names_with_exit_2(tmp_path: Path, fake_bench):
    fake_bench(MET)
    done = _bench(tmp_path, "--budget", "a=0.5")
    assert done.exit_code == 1, done.output
    assert "bench fake: a measured 1 (limit <= 0.5): MISSED" in done.output
    assert json.loads((tmp_path / "o" / "fake.json").read_text())["budget_overrides"] == \
        {"a": 0.5}
    done = _bench(tmp_path, "--budget", "nope=1")
    assert done.exit_code == 2 and "--budget nope: names no budget of fake" in done.output
    done = _bench(tmp_path, "--budget", "a")
    assert done.exit_code == 2 and "is not NAME=NUMBER" in done.output
    done = _bench(tmp_path, "--pages", "0")
    assert done.exit_code == 2 and "--pages 0 is out of range" in done.output


def test_markdown_lists_each_budget_with_its_verdict(tmp_path: Path):
    from factdebate.evaluation.bench_report import write_markdown

    (tmp_path / "corpus.json").write_text(json.dumps({
        "benchmark": "corpus", "command": "factdebate bench corpus --pages 200", "git_sha": "abc",
        "seconds": 2.0, "budget": "words", "budget_met": None, "pages": 200,
        "budgets": [MET, NOT_JUDGED], "budget_overrides": {"a": 2.0}}))
    write_markdown(tmp_path, tmp_path / "B.md")
    text = (tmp_path / "B.md").read_text()
    assert "met: **nothing missed, some budgets not judged**" in text
    assert "Budgets (limits given on the command line: a=2):" in text
    assert "- c measured 3 (limit <= 2): not judged: too short" in text
    assert "| pages | 200 |" in text and "| budgets |" not in text


# --- progress lines ------------------------------------------------------------------------------

def test_progress_lines_name_the_stage_how_far_and_the_rate():
    import io

    from factdebate.evaluation.bench_progress import StageProgress

    stream = io.StringIO()
    progress = StageProgress("corpus", every=3600, stream=stream)  # no periodic thread lines
    progress.stage("import, chunk passages", 1000, "pages")
    progress.update(250, "reading wiki-001.jsonl")
    line = progress.line()
    assert line.startswith("import, chunk passages: 250/1,000 pages (25%), ")
    assert " pages/s, " in line and line.endswith("s (reading wiki-001.jsonl)")
    progress.update(1000)
    progress.end("1,000 passages")
    assert progress.line() == ""  # between stages
    shown = stream.getvalue().splitlines()
    assert shown[0] == "bench corpus: import, chunk passages (1,000 pages): started"
    assert shown[1].startswith("bench corpus: import, chunk passages: done in ")
    assert shown[1].endswith(" pages/s; 1,000 passages")


def test_progress_thread_prints_a_stage_stuck_in_one_call_and_reads_its_probe():
    import io
    import time

    from factdebate.evaluation.bench_progress import StageProgress

    stream = io.StringIO()
    with StageProgress("soak", every=0.05, stream=stream) as progress:
        progress.stage("mixed load", 60, "s", rate=False, probe=lambda: (12, "30 runs, 0 errors"))
        time.sleep(0.3)  # the stage's work blocks; the thread still reports it
        progress.end()
    periodic = [ln for ln in stream.getvalue().splitlines() if "12/60 s (20%)" in ln]
    assert periodic and periodic[0].startswith("bench soak: mixed load: 12/60 s (20%), ")
    assert "s/s" not in periodic[0] and periodic[0].endswith("(30 runs, 0 errors)")


def test_reading_position_finds_the_dump_file_a_process_reads_and_its_offset(tmp_path: Path):
    """How far an import is: the ``wiki-*.jsonl`` file the process has open and its offset."""
    import os

    from factdebate.evaluation.bench_corpus import reading_position

    if not Path(f"/proc/{os.getpid()}/fdinfo").is_dir():
        pytest.skip("no /proc on this system")
    dump = tmp_path / "wiki-007.jsonl"
    dump.write_bytes(b'{"id": "x"}\n' * 1000)
    (tmp_path / "notes.txt").write_text("not a dump")
    other = (tmp_path / "notes.txt").open("rb")  # another open file is not mistaken for it
    try:
        with dump.open("rb", buffering=0) as f:
            f.read(3000)
            assert reading_position(os.getpid()) == ("wiki-007.jsonl", 3000)
    finally:
        other.close()
    assert reading_position(os.getpid()) is None  # nothing of a dump open any more
    assert reading_position(2**22 + 12345) is None  # above Linux's largest pid: no such process
