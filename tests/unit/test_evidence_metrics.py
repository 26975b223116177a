"""Evidence quality of the cited passages (evaluation/evidence_metrics.py) and its wiring: gold
evidence read from every format, page/sentence precision-recall-F1, HoVer EM, retrieval vs citation,
citation hygiene, summary.json / report.md / compare / report.html / the browser summary / the CLI
lines. Hand-made rows and records only (no shared data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factdebate.cli.eval import evidence_lines
from factdebate.evaluation.compare import compare_outputs, evidence_rows
from factdebate.evaluation.datasets import load_items
from factdebate.evaluation.evidence_metrics import (
    element_id,
    evidence_summary,
    gold_evidence,
    headline,
    normal_text,
    page_title,
    passage_elements,
    passage_pages,
    score_row,
    scorer_predictions,
    split_feverous_id,
)
from factdebate.evaluation.html_report import evidence_summary_html
from factdebate.evaluation.metrics import compute_metrics
from factdebate.evaluation.reports import render_report, summarize_run
from factdebate.evaluation.results import base_row, ok_row


def passage(title: str, text: str = "", pid: str = "", url: str = "") -> dict:
    return {"id": pid or title, "title": title, "text": text, "source": "milvus", "url": url,
            "score": 1.0}


def row(item_id: str, gold_label: str, predicted: str | None, gold: dict | None,
        cited: list[dict], retrieved: list[dict] = (), **extra) -> dict:
    out = {"item_id": item_id, "status": "ok", "task": "fever",
           "gold": {"label": gold_label, "answers": [], "wrong_answers": []},
           "prediction": {"label": predicted, "answers": []}, "evidence": list(cited),
           "retrieved": list(retrieved), "citations": [],
           "ledger": {"replies_cited": 1, "replies_uncited": 0, "citations_unshown": 0},
           "rounds": 1, "wall_time_s": 0.1, **extra}
    if gold is not None:
        out["gold"]["evidence"] = gold
    return out


# -- the worked example of docs/evaluation.md ("Evidence: citations and how they are scored") --
EIFFEL_S1 = ("The tower was built by the company of [[Gustave_Eiffel|Gustave Eiffel]] for the "
             "[[Exposition_Universelle_(1889)|1889 World's Fair]].")
EIFFEL_S2 = "It is 330 metres tall."
EIFFEL_GOLD = gold_evidence({"dataset": "feverous", "evidence": [
    {"title": "Eiffel Tower", "text": EIFFEL_S1}, {"title": "Eiffel Tower", "text": EIFFEL_S2}]})
EIFFEL_CITED = [
    passage("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris. The tower "
                            "was built by the company of Gustave Eiffel for the 1889 World's Fair.",
            pid="wiki-17#1"),
    passage("Gustave Eiffel", "Gustave Eiffel was a French civil engineer.", pid="wiki-18")]
EIFFEL_RETRIEVED = [passage("Eiffel Tower", "It is 330 metres tall. It was the tallest "
                                            "structure in the world until 1930.", pid="wiki-17#2")]


def test_readme_worked_example():
    r = row("feverous-1", "SUPPORTS", "SUPPORTS", EIFFEL_GOLD, EIFFEL_CITED, EIFFEL_RETRIEVED)
    s = score_row(r)
    assert (s.page_precision, s.page_recall, s.page_f1) == (0.5, 1.0, pytest.approx(2 / 3))
    assert (s.sentence_precision, s.sentence_recall, s.sentence_f1) == (0.5, 0.5, 0.5)
    assert (s.fever.label_correct, s.fever.strict, s.fever.precision, s.fever.recall) == (
        True, False, 0.5, 0.0)
    assert s.gold_retrieved and not s.gold_cited and s.recall_retrieved == 1.0
    # FEVER gold (page, sentence ids) on the same passages: the page is cited, so page level counts
    fever_gold = gold_evidence({"dataset": "fever", "evidence_sets": [
        [{"page": "Eiffel_Tower", "sent_id": 0}, {"page": "Eiffel_Tower", "sent_id": 4}]]})
    s = score_row(row("fever-1", "SUPPORTS", "SUPPORTS", fever_gold, EIFFEL_CITED))
    assert s.fever.strict and (s.page_precision, s.page_recall) == (0.5, 1.0)
    summary = evidence_summary([r])
    assert summary["fever"]["score"] == 0.0 and summary["retrieval"]["retrieved_not_cited"] == 1.0


# -- gold evidence from every format ------------------------------------------------------------
def test_page_ids_and_markup_are_normalised():
    assert page_title("Soul_Food_-LRB-film-RRB-") == "Soul Food (film)"
    assert page_title("Star_Trek-COLON-_Episode_-LSB-IV-RSB-") == "Star Trek: Episode [IV]"
    assert page_title("Beyonce\u0301") == "Beyonc\u00e9"  # NFD -> NFC
    assert normal_text("A [[Plantation_house|plantation  house]] near [[Pittsview]].") == \
        "a plantation house near pittsview."
    assert passage_pages(passage("Soul Food (film) - Wikipedia", pid="wiki-3#2")) == [
        "Soul Food (film)", "wiki-3"]
    assert "Soul Food (film)" in passage_pages(
        passage("x", url="https://en.wikipedia.org/wiki/Soul_Food_(film)"))


def test_gold_evidence_of_each_dataset_format():
    fever = gold_evidence({"dataset": "fever", "evidence_sets": [
        [{"page": "Soul_Food_-LRB-film-RRB-", "sent_id": 0}],
        [{"page": "Soul_Food_-LRB-film-RRB-", "sent_id": 0}]]})  # repeated set kept once
    assert fever == {"kind": "fever", "level": "page",
                     "sets": [[{"page": "Soul Food (film)", "sent_id": 0, "text": None,
                                "page_id": "Soul_Food_-LRB-film-RRB-"}]]}
    assert gold_evidence({"dataset": "fever", "evidence_sets": []})["sets"] == []  # NEI
    release = gold_evidence({"id": 1, "verifiable": "VERIFIABLE", "claim": "c", "evidence": [
        [[1, 2, "Page_-LRB-a-RRB-", 3], [1, 3, "Other", 0]], [[4, 5, None, None]]]})
    assert release["kind"] == "fever" and [[e["page"] for e in s] for s in release["sets"]] == [
        ["Page (a)", "Other"]]
    hover = gold_evidence({"dataset": "hover", "evidence_sets": [
        [{"page": "A", "sent_id": 1}, {"page": "B", "sent_id": 0}], [{"page": "C", "sent_id": 0}]]})
    assert hover["kind"] == "hover" and len(hover["sets"]) == 1  # the supporting facts only
    assert gold_evidence({"uid": "u", "supporting_facts": [["A", 0], ["B", 2]]})["sets"][0][1] == {
        "page": "B", "sent_id": 2, "text": None, "page_id": "B"}
    feverous = gold_evidence({"dataset": "feverous", "evidence": [{"title": "T", "text": "[[a|b]] c"}]})
    assert feverous == {"kind": "feverous", "level": "sentence",
                        "sets": [[{"page": "T", "sent_id": None, "text": "b c", "page_id": "T"}]]}
    release = gold_evidence({"id": 7, "label": "SUPPORTS", "claim": "c", "evidence": [
        {"content": ["Korean Air_cell_1_19_0", "Korean Air_sentence_0"], "context": {}},
        {"content": ["Aramais Yepiskoposyan_header_cell_0_0_1"], "context": {}}]})
    assert release["kind"] == "feverous" and [[(e["page"], e["sent_id"]) for e in s]
                                              for s in release["sets"]] == [
        [("Korean Air", "cell_1_19_0"), ("Korean Air", "sentence_0")],
        [("Aramais Yepiskoposyan", "header_cell_0_0_1")]]
    programfc = gold_evidence({"id": 1, "claim": "c", "evidence": "T\t[[x|y]] z\nU\tw"})
    assert [e["text"] for e in programfc["sets"][0]] == ["y z", "w"]
    scifact = gold_evidence({"dataset": "scifact", "evidence": [
        {"doc_id": "14717500", "sentences": [2, 5], "label": "SUPPORT"}]})
    assert scifact["kind"] == "scifact" and {e["page"] for e in scifact["sets"][0]} == {"14717500"}
    assert gold_evidence({"id": 3, "claim": "c", "evidence": {"99": [{"sentences": [1]}]}})[
        "sets"][0][0]["page"] == "99"
    assert gold_evidence({"dataset": "scifact", "evidence": []}) == {
        "kind": "scifact", "level": "page", "sets": []}
    assert gold_evidence({"dataset": "averitec", "evidence": [{"question": "q", "answer": "a"}]}) \
        is None
    assert gold_evidence({"dataset": "bingcheck", "claim": "c"}) is None


def test_gold_evidence_reaches_the_item_and_the_row_but_not_the_input(tmp_path: Path):
    (tmp_path / "feverous").mkdir()
    (tmp_path / "feverous" / "dev.jsonl").write_text(json.dumps({
        "id": "feverous-1", "dataset": "feverous", "task": "claim_verification", "claim": "c",
        "label": "SUPPORTS", "evidence": [{"title": "T", "text": "s"}]}) + "\n")
    [item] = load_items("feverous", tmp_path)
    assert item.meta["gold_evidence"]["sets"] == [[{"page": "T", "sent_id": None, "text": "s",
                                                    "page_id": "T"}]]
    assert item.input == {"claim": "c", "task": "binary"}  # never shown to the model
    base = base_row(item, framework="tool_mad", run_id="r", thread_id="t")
    assert base["gold"]["evidence"]["kind"] == "feverous"
    result = {"label": "SUPPORTS", "evidence": [passage("T", "s")], "retrieved": [],
              "citations": [{"by": "judge", "passages": [passage("T", "s" * 500)], "unshown": ["9"]}]}
    done = ok_row(base, result, wall_time_s=1.0, attempts=1, trace_id="x", cost_usd=None)
    assert done["evidence"] == result["evidence"] and done["retrieved"] == []
    assert done["citations"][0]["passages"] == [{"id": "T", "title": "T", "source": "milvus"}]
    assert done["citations"][0]["unshown"] == ["9"]
    assert "evidence" not in ok_row(base, {"label": "SUPPORTS"}, wall_time_s=1.0, attempts=1,
                                     trace_id="x", cost_usd=None)


# -- metrics of rows ----------------------------------------------------------------------------
HOVER = {"kind": "hover", "level": "page",
         "sets": [[{"page": "A", "sent_id": 0}, {"page": "B", "sent_id": 1}]]}


def test_page_level_precision_recall_f1_and_em():
    exact = score_row(row("h1", "SUPPORTS", "SUPPORTS", HOVER, [passage("A"), passage("B")]))
    assert (exact.page_precision, exact.page_recall, exact.page_f1, exact.page_em) == (1, 1, 1, 1)
    extra = score_row(row("h2", "SUPPORTS", "REFUTES", HOVER,
                          [passage("A", pid="a#1"), passage("A", pid="a#2"), passage("C")]))
    assert extra.page_precision == 0.5 and extra.page_recall == 0.5 and extra.page_em == 0
    none = score_row(row("h3", "SUPPORTS", "SUPPORTS", HOVER, []))
    assert (none.page_precision, none.page_recall, none.page_f1) == (0.0, 0.0, 0.0)
    assert none.sentence_recall is None and none.fever is None  # HoVer: page level, no FEVER score
    # alternatives: recall is the best-covered set's
    alt = {"kind": "fever", "level": "page",
           "sets": [[{"page": "A", "sent_id": 0}, {"page": "B", "sent_id": 0}],
                    [{"page": "C", "sent_id": 3}]]}
    best = score_row(row("f1", "SUPPORTS", "SUPPORTS", alt, [passage("C")]))
    assert best.page_recall == 1.0 and best.page_precision == 1.0 and best.fever.strict
    scifact = {"kind": "scifact", "level": "page", "sets": [[{"page": "123", "sent_id": 2}]]}
    assert score_row(row("s1", "SUPPORTS", "SUPPORTS", scifact,
                         [passage("An abstract", pid="123#2")])).page_f1 == 1.0


def test_rows_without_gold_or_citation_data_are_left_out_and_counted():
    nei = {"kind": "fever", "level": "page", "sets": []}
    rows = [row("f1", "SUPPORTS", "SUPPORTS", {"kind": "fever", "level": "page",
                                               "sets": [[{"page": "A", "sent_id": 0}]]},
                [passage("A")]),
            row("f2", "NOT ENOUGH INFO", "NOT ENOUGH INFO", nei, [], [passage("Z")]),
            row("f3", "SUPPORTS", "REFUTES", {"kind": "fever", "level": "page",
                                              "sets": [[{"page": "B", "sent_id": 0}]]}, []),
            {"item_id": "f4", "status": "error", "gold": {"label": "SUPPORTS"}}]
    old = row("f5", "SUPPORTS", "SUPPORTS", nei, [])
    del old["evidence"]
    rows.append(old)
    summary = evidence_summary(rows)
    assert (summary["n_finished"], summary["n_scored"], summary["n_with_gold"],
            summary["n_without_gold"], summary["n_no_citation_data"]) == (4, 3, 2, 1, 1)
    assert summary["page"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "em": 0.5, "n": 2}
    assert summary["sentence"] is None and summary["level"] == "page"
    fever = summary["fever"]
    assert (fever["score"], fever["n"], fever["n_verifiable"]) == (pytest.approx(2 / 3), 3, 2)
    assert fever["precision"] == pytest.approx((1.0 + 1.0) / 2)  # nothing predicted: 1.0
    assert fever["recall"] == 0.5 and fever["level"] == "page"
    assert headline(summary) == {"name": "FEVER score (page level)", "key": "fever_score",
                                 "value": pytest.approx(2 / 3), "n": 3}
    assert any("page (title/document) level only" in n for n in summary["notes"])
    assert any("1 finished item(s) have no gold evidence" in n for n in summary["notes"])
    metrics = compute_metrics(rows)
    assert metrics["evidence_f1"] == 0.5 and metrics["fever_score"] == pytest.approx(2 / 3)
    assert metrics["evidence_sentence_f1"] is None


def test_retrieval_vs_citation_and_citation_hygiene():
    gold = {"kind": "hover", "level": "page", "sets": [[{"page": "A", "sent_id": 0}]]}
    rows = [row("1", "SUPPORTS", "SUPPORTS", gold, [passage("A")]),  # cited
            row("2", "SUPPORTS", "SUPPORTS", gold, [passage("B")], [passage("A")]),  # model's miss
            row("3", "SUPPORTS", "SUPPORTS", gold, [], [passage("C")]),  # retriever's miss
            row("4", "SUPPORTS", None, gold, [], []),  # no verdict, nothing seen
            row("5", "SUPPORTS", "REFUTES", None, [passage("Q")],
                citations=[{"by": "judge", "passages": [], "unshown": ["8"]}],
                ledger={"replies_cited": 1, "replies_uncited": 3, "citations_unshown": 1})]
    summary = evidence_summary(rows)
    x = summary["retrieval"]
    assert (x["n"], x["gold_retrieved"], x["gold_cited"]) == (4, 0.5, 0.25)
    assert (x["retrieved_not_cited"], x["not_retrieved"]) == (0.25, 0.5)
    c = summary["citations"]
    assert (c["uncited_verdicts"], c["n_verdicts"]) == (0.25, 4)  # row 3 only; row 4 excluded
    assert (c["hallucinated"], c["n_rows"], c["unshown_total"]) == (0.2, 5, 1)
    assert (c["uncited_replies"], c["n_replies"]) == (3 / 8, 8)
    assert summary["hover"] == {"em": 0.25, "f1": 0.25, "n": 4, "level": "page", "page_em": 0.25,
                                "page_f1": 0.25}
    assert evidence_summary([{"item_id": "x", "status": "ok", "gold": {}}]) is None


# -- wiring: summary.json, report.md, compare, report.html, browser, CLI --------------------------
def write_run(folder: Path, rows: list[dict], dataset: str = "feverous") -> Path:
    folder.mkdir(parents=True)
    record = {"run_id": folder.name, "framework": "tool_mad", "dataset": dataset,
              "dataset_version": "v", "task": "binary", "item_ids": [r["item_id"] for r in rows],
              "models": {"debater": "scripted:agree"}, "prompt_version": "p", "context": {},
              "seed": 0}
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                          encoding="utf-8")
    return folder


def feverous_rows(cite_all: bool) -> list[dict]:
    cited = EIFFEL_CITED + (EIFFEL_RETRIEVED if cite_all else [])
    return [row(f"feverous-{i}", "SUPPORTS", "SUPPORTS", EIFFEL_GOLD, cited, EIFFEL_RETRIEVED)
            for i in range(4)]


def test_summary_report_compare_html_browser_and_cli(tmp_path: Path, monkeypatch):
    a = write_run(tmp_path / "a", feverous_rows(False))
    b = write_run(tmp_path / "b", feverous_rows(True))
    run = summarize_run(b)
    ev = run["evidence"]
    assert ev["fever"]["score"] == 1.0 and ev["sentence"]["recall"] == 1.0
    assert run["metrics"]["fever_score"] == 1.0 and run["metrics"]["evidence_sentence_f1"] < 1
    report = render_report([summarize_run(a), run], {})
    assert ("| Framework (model) | feverous | feverous: FEVER score | feverous: ceiling (gold in "
            "index) | Average") in report
    assert "| 0.0 (n=4) |" in report and "| 100.0 (n=4) |" in report
    for heading in ("## Evidence: cited passages vs gold evidence", "### FEVER score",
                    "### Retrieval vs citation", "### Citations (every dataset)"):
        assert heading in report
    assert "| b | feverous | sentence | 4 |" in report
    [result] = compare_outputs(a, b)
    fever = next(e for e in result["evidence"] if e["metric"] == "fever_score")
    assert (fever["n"], fever["a"], fever["b"], fever["delta"]) == (4, 0.0, 1.0, 1.0)
    assert fever["b_only_correct"] == 4 and fever["mcnemar_p"] == pytest.approx(0.125)
    assert [r[2] for r in evidence_rows([result])] == [
        "FEVER score", "evidence F1 (page level)", "evidence F1 (sentence level)"]
    html = evidence_summary_html(feverous_rows(False))
    assert "FEVER score</td><td>0.0% (n=4)" in html and "Gold evidence retrieved" in html
    lines = evidence_lines(run)
    assert any(line.startswith("evidence b (tool_mad / feverous), sentence level by text: "
                               "precision")
               and "(n=4 items with gold evidence)" in line for line in lines)
    assert any(line.startswith("FEVER score b") and "1.000 (n=4;" in line for line in lines)
    # the browser's run list carries the evidence block beside the metrics
    from factdebate.server import evals_browser

    (b / "summary.json").write_text(json.dumps({"runs": [run]}), encoding="utf-8")
    monkeypatch.setenv(evals_browser.RUNS_DIR_ENV, str(tmp_path))
    listed = {r["run"]: r for r in evals_browser._list(tmp_path.resolve())["runs"]}
    assert listed["b"]["evidence"]["headline"]["key"] == "fever_score"
    assert listed["b"]["evidence"]["fever"]["n"] == 4 and listed["a"]["evidence"] is None


# -- sentence level by ids: passages of an imported dump carry page and sentence ids ----------
def dump_passage(page: str, sentences: list, title: str = "", pid: str = "") -> dict:
    """A passage as a dump importer writes it (the passage contract: page, sentences, pool)."""
    return {"id": pid or f"{page}#{sentences[0] if sentences else 0}", "title": title or page,
            "text": "...", "source": "keyword", "url": "", "score": 1.0, "page": page,
            "sentences": list(sentences), "pool": ""}


FEVER_IDS = gold_evidence({"dataset": "fever", "evidence_sets": [
    [{"page": "Soul_Food_-LRB-film-RRB-", "sent_id": 0}, {"page": "George_Tillman_Jr.",
                                                          "sent_id": 2}],
    [{"page": "Soul_Food_-LRB-film-RRB-", "sent_id": 3}]]})


def test_passage_elements_and_element_ids():
    p = dump_passage("Soul_Food_-LRB-film-RRB-", [0, "1", 2])
    assert passage_elements(p) == [("Soul Food (film)", 0), ("Soul Food (film)", 1),
                                   ("Soul Food (film)", 2)]
    assert passage_pages(p)[0] == "Soul Food (film)"  # the contract's page comes first
    assert passage_elements(passage("Soul Food (film)")) == []  # a JSONL corpus passage
    assert (element_id("3"), element_id(3), element_id("cell_0_1_2"), element_id(True),
            element_id("")) == (3, 3, "cell_0_1_2", None, None)
    assert split_feverous_id("Korean Air_cell_1_19_0") == ("Korean Air", "cell_1_19_0")
    assert split_feverous_id("A_b_sentence_12") == ("A_b", "sentence_12")
    assert split_feverous_id("Something else") == ("Something else", None)


def test_fever_gold_with_sentence_ids_is_scored_at_sentence_level():
    cited = [dump_passage("Soul_Food_-LRB-film-RRB-", [0, 1]),
             dump_passage("George_Tillman_Jr.", [2])]
    s = score_row(row("fever-1", "SUPPORTS", "SUPPORTS", FEVER_IDS, cited))
    assert (s.level, s.basis) == ("sentence", "ids")
    # predicted pairs (Soul Food, 0), (Soul Food, 1), (Tillman, 2): two are gold, set 1 complete
    assert s.sentence_precision == pytest.approx(2 / 3) and s.sentence_recall == 1.0
    assert s.sentence_em == 0.0 and s.gold_cited and s.fever.strict
    assert (s.fever.precision, s.fever.recall) == (pytest.approx(2 / 3), 1.0)
    # the same page cited, the wrong sentence: page level would call it covered, ids do not
    wrong = score_row(row("fever-2", "SUPPORTS", "SUPPORTS", FEVER_IDS, [
        dump_passage("Soul_Food_-LRB-film-RRB-", [1, 2]), dump_passage("George_Tillman_Jr.", [0])]))
    assert wrong.page_recall == 1.0 and wrong.sentence_recall == 0.0
    assert not wrong.fever.strict and wrong.fever.precision == 0.0 and not wrong.gold_cited
    exact = score_row(row("fever-3", "SUPPORTS", "SUPPORTS", FEVER_IDS, [
        dump_passage("Soul_Food_-LRB-film-RRB-", [3])]))
    assert exact.sentence_em == 1.0 and exact.sentence_f1 == 1.0 and exact.fever.strict


def test_a_multi_sentence_passage_fills_the_scorers_first_five():
    """Each cited passage contributes its pairs in order; the scorer sees the first five."""
    long_first = [dump_passage("Soul_Food_-LRB-film-RRB-", [4, 5, 6, 7, 8, 0]),
                  dump_passage("George_Tillman_Jr.", [2])]
    pairs = [pair for p in long_first for pair in passage_elements(p)]
    assert scorer_predictions(pairs, "fever") == pairs[:5]
    s = score_row(row("fever-4", "SUPPORTS", "SUPPORTS", FEVER_IDS, long_first))
    # (Soul Food, 0) is the 6th pair and Tillman's the 7th: neither reaches the scorer
    assert s.sentence_recall == 1.0 and not s.fever.strict and s.fever.precision == 0.0
    short_first = [dump_passage("George_Tillman_Jr.", [2]),
                   dump_passage("Soul_Food_-LRB-film-RRB-", [0, 4, 5, 6, 7, 8])]
    assert score_row(row("fever-5", "SUPPORTS", "SUPPORTS", FEVER_IDS, short_first)).fever.strict


def test_passages_without_ids_keep_page_level_and_the_run_says_which():
    with_ids = row("fever-1", "SUPPORTS", "SUPPORTS", FEVER_IDS,
                   [dump_passage("Soul_Food_-LRB-film-RRB-", [3])])
    without = row("fever-2", "SUPPORTS", "SUPPORTS", FEVER_IDS, [passage("Soul Food (film)")])
    assert score_row(without).level == "page" and score_row(without).fever.strict
    assert score_row(with_ids).level == "sentence"
    only_ids = evidence_summary([with_ids])
    assert (only_ids["level"], only_ids["basis"], only_ids["n_page_level"]) == ("sentence", "ids", 0)
    assert only_ids["sentence"]["em"] == 1.0 and only_ids["fever"]["level"] == "sentence"
    assert headline(only_ids)["name"] == "FEVER score"
    assert any("Sentence level by ids" in n for n in only_ids["notes"])
    mixed = evidence_summary([with_ids, without])
    assert (mixed["level"], mixed["n_page_level"], mixed["sentence"]) == ("page", 1, None)
    assert headline(mixed)["name"] == "FEVER score (page level)"
    assert any("1 item(s) saw passages without sentence ids" in n for n in mixed["notes"])
    # a row that saw nothing takes its level from its index (the ceiling's ``ids``)
    blind = row("fever-3", "SUPPORTS", "SUPPORTS", FEVER_IDS, [], gold_in_index={
        "page": True, "sentence": True, "level": "sentence", "ids": True})
    assert score_row(blind).level == "sentence"
    assert score_row({**blind, "gold_in_index": None}).level == "page"


def test_hover_supporting_fact_em_f1_at_sentence_level():
    gold = gold_evidence({"dataset": "hover", "evidence_sets": [
        [{"page": "Alpha", "sent_id": 0}, {"page": "Beta", "sent_id": 1}]]})
    exact = row("hover-1", "SUPPORTS", "SUPPORTS", gold,
                [dump_passage("Alpha", [0]), dump_passage("Beta", [1])])
    extra = row("hover-2", "SUPPORTS", "SUPPORTS", gold,
                [dump_passage("Alpha", [0, 1]), dump_passage("Beta", [1])])
    summary = evidence_summary([exact, extra])
    hover = summary["hover"]
    assert hover["level"] == "sentence" and hover["em"] == 0.5  # extra predicts (Alpha, 1) too
    assert hover["f1"] == pytest.approx((1.0 + 0.8) / 2)  # P 2/3 R 1 -> F1 0.8
    assert hover["page_em"] == 1.0 and hover["page_f1"] == 1.0
    lines = evidence_lines({"framework": "tool_mad", "dataset": "hover", "evidence": summary})
    assert any("HoVer supporting facts" in ln and "sentence level: EM 0.500" in ln for ln in lines)
    assert any("sentence level by ids: precision" in ln and "EM 0.500" in ln for ln in lines)
