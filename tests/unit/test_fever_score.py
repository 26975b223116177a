"""The FEVER score (evaluation/evidence_metrics.py) against the FEVER scorer's documented examples.

The cases are the examples of sheffieldnlp/fever-scorer's README and test suite (``src/fever/
scorer.py`` re-implemented, not copied): first on ``(page, line)`` pairs exactly as the scorer
takes them, then our passage-level adaptation (a predicted evidence item is a cited passage).
"""

from __future__ import annotations

import pytest

from factdebate.evaluation.evidence_metrics import (
    evidence_macro_precision,
    evidence_macro_recall,
    fever_score,
    is_correct_label,
    is_strictly_correct,
    score_row,
)

N = None


def claim(label: str, predicted: str, evidence: list, predicted_evidence: list | None) -> dict:
    out = {"label": label, "predicted_label": predicted, "evidence": evidence}
    if predicted_evidence is not None:
        out["predicted_evidence"] = predicted_evidence
    return out


# -- README "Example 1" and "Example 2 (blind test set)" ----------------------------------------
GOLD_12 = [[[N, N, "page1", 1], [N, N, "page2", 2]]]


def test_readme_example_1():
    one = claim("REFUTES", "REFUTES", GOLD_12, [["page1", 1]])  # misses (page2, 2)
    two = claim("REFUTES", "REFUTES", GOLD_12, [["page1", 1], ["page2", 2], ["page3", 3]])
    strict, accuracy, precision, recall, f1 = fever_score([one, two])
    assert strict == 0.5 and accuracy == 1.0
    assert precision == pytest.approx(0.8333, abs=1e-3)  # 1 and 2/3
    assert recall == 0.5  # 0 and 1
    assert f1 == pytest.approx(0.625)


def test_readme_example_2_blind_mode_takes_gold_from_actual():
    predictions = [{"predicted_label": "REFUTES", "predicted_evidence": [["page1", 1]]},
                   {"predicted_label": "REFUTES",
                    "predicted_evidence": [["page1", 1], ["page2", 2], ["page3", 3]]}]
    actual = [{"label": "REFUTES", "evidence": GOLD_12}, {"label": "REFUTES", "evidence": GOLD_12}]
    assert fever_score(predictions, actual) == pytest.approx((0.5, 1.0, 5 / 6, 0.5, 0.625))
    assert "label" not in predictions[0]  # instances are not modified


# -- the scorer's test suite --------------------------------------------------------------------
def test_is_correct_label_ignores_case():
    assert is_correct_label({"label": "not enough info", "predicted_label": "NOT ENOUGH INFO"})
    assert is_correct_label({"label": "NOT ENOUGH INFO", "predicted_label": "not enough info"})
    assert not is_correct_label({"label": "supports", "predicted_label": "not enough info"})


@pytest.mark.parametrize(("evidence", "predicted", "expected"), [
    ([[[N, N, "page", 0], [N, N, "page", 1]]], [["page", 0]], False),  # subset of the set
    ([[[N, N, "page", 0]]], [["page", 2]], False),  # wrong line
    ([[[N, N, "page", 0]]], [["page1", 0]], False),  # wrong page
    ([[[N, N, "page", 0]]], [["page", 0]], True),  # correct single
    ([[[N, N, "page", 0]], [[N, N, "page1", 0]]], [["page", 0]], True),  # one of two sets
    ([[[N, N, "page2", 0], [N, N, "page1", 1]], [[N, N, "page2", 0]]], [["page2", 0]], True),
    ([[[N, N, "page1", 1]], [[N, N, "page2", 0]]], [["page1", 1], ["page2", 0]], True),
    ([[[N, N, "page1", 1], [N, N, "page2", 0]]], [["page1", 1], ["page2", 0], ["page3", 2]], True),
])
def test_is_strictly_correct(evidence, predicted, expected):
    assert is_strictly_correct(claim("supports", "supports", evidence, predicted)) is expected


def test_strict_nei_needs_no_evidence_and_verifiable_needs_predictions():
    assert is_strictly_correct({"label": "not enough info", "predicted_label": "not enough info"})
    with pytest.raises(ValueError, match="predicted evidence"):
        is_strictly_correct(claim("supports", "supports", [[[N, N, "page", 0]]], None))


@pytest.mark.parametrize(("evidence", "predicted", "expected"), [
    ([], [], 1.0),  # no predictions: perfect
    ([], [["page", 0]], 0.0),
    ([[[N, N, "other", 0]]], [["page", 0]], 0.0),  # wrong page
    ([[[N, N, "page", 1]]], [["page", 0]], 0.0),  # wrong line
    ([[[N, N, "page", 0]]], [["page", 0], ["page", 1]], 0.5),
    ([[[N, N, "page", 0]], [[N, N, "page", 1]]], [["page", 0], ["page", 1], ["page", 2]], 2 / 3),
])
def test_evidence_macro_precision(evidence, predicted, expected):
    value, hits = evidence_macro_precision(claim("supports", "supports", evidence, predicted))
    assert value == pytest.approx(expected) and hits == 1


def test_nei_contributes_nothing_to_precision_or_recall():
    nei = {"label": "not enough info", "predicted_label": "not enough info"}
    assert evidence_macro_precision(nei) == (0.0, 0.0)
    assert evidence_macro_recall(nei) == (0.0, 0.0)


@pytest.mark.parametrize(("evidence", "predicted", "expected"), [
    ([], [], 1.0),  # no gold evidence: perfect
    ([], [["page", 0]], 1.0),
    ([[[N, N, "other", 0]]], [], 0.0),
    ([[[N, N, "other", 0]]], [["page", 0]], 0.0),
    ([[[N, N, "page", 1]]], [["page", 0]], 0.0),
    ([[[N, N, "page", 0], [N, N, "page", 1]]], [["page", 0]], 0.0),  # incomplete set
    ([[[N, N, "page", 0], [N, N, "page", 1]]], [["page", 0], ["page", 2]], 0.0),
    ([[[N, N, "page", 0]]], [["page", 0]], 1.0),
    ([[[N, N, "page", 0], [N, N, "page", 1]]], [["page", 0], ["page", 1]], 1.0),
    ([[[N, N, "page", 0]], [[N, N, "page", 1]]], [["page", 0], ["page", 1]], 1.0),
    ([[[N, N, "page", 0]], [[N, N, "page", 1]]], [["page", 0]], 1.0),
    ([[[N, N, "page", 0]], [[N, N, "page", 1]]], [["page", 0], ["page", 2]], 1.0),
])
def test_evidence_macro_recall(evidence, predicted, expected):
    value, hits = evidence_macro_recall(claim("supports", "supports", evidence, predicted))
    assert value == expected and hits == 1


def test_max_evidence_counts_only_the_first_predictions():
    both = [[[N, N, "page", 0], [N, N, "page", 1]]]
    predicted = [["page", 0], ["page", 1]]
    inst = claim("supports", "supports", both, predicted)
    assert evidence_macro_recall(inst, max_evidence=1)[0] == 0
    assert evidence_macro_recall(inst, max_evidence=2)[0] == 1
    assert fever_score([inst], max_evidence=2)[0] == 1 and fever_score([inst], max_evidence=1)[0] == 0
    assert fever_score([inst], max_evidence=2)[3] == 1 and fever_score([inst], max_evidence=1)[3] == 0
    other = claim("supports", "supports", [[[N, N, "page", 0], [N, N, "page", 2]]], predicted)
    assert evidence_macro_precision(other, max_evidence=1)[0] == 1
    assert evidence_macro_precision(other, max_evidence=2)[0] == 0.5
    assert fever_score([other], max_evidence=1)[2] == 1 and fever_score([other], max_evidence=2)[2] == 0.5
    copy = dict(inst)
    fever_score([inst], max_evidence=0)
    assert inst == copy


def test_dataset_level_scores():
    nei = [[N, N, N, N]]
    perfect = [claim("not enough info", "not enough info", [], [])] * 2
    assert fever_score(perfect)[:2] == (1.0, 1.0)
    wrong = [claim("not enough info", "refutes", [], []), claim("not enough info", "supports", [], [])]
    assert fever_score(wrong)[:2] == (0.0, 0.0)
    half = [{"predicted_label": "not enough info", "predicted_evidence": []},
            {"predicted_label": "refutes", "predicted_evidence": []}]
    assert fever_score(half, [{"label": "not enough info", "evidence": [nei]}] * 2)[:2] == (0.5, 0.5)
    gold = [[[N, N, "page1", 1], [N, N, "page2", 0]]]
    blind = [{"predicted_label": "refutes", "predicted_evidence": [["page3", 2]]},
             {"predicted_label": "refutes",
              "predicted_evidence": [["page1", 1], ["page2", 0], ["page3", 2]]}]
    assert fever_score(blind, [{"label": "refutes", "evidence": gold}] * 2)[:2] == (0.5, 1.0)
    with pytest.raises(ValueError):  # blind mode without the gold data
        fever_score([{"predicted_label": "not enough info", "predicted_evidence": []}])
    with pytest.raises(ValueError):  # gold data of another length
        fever_score([{"predicted_label": "x", "predicted_evidence": []}] * 2, [{}])
    with pytest.raises(ValueError):  # gold without evidence
        fever_score([{"predicted_label": "x", "predicted_evidence": []}], [{"label": "x"}])


def test_predicted_evidence_must_be_page_line_pairs():
    for bad in (["line", "text"], [[["page", 0]]], [[0, 0]], [["page", "some text"]]):
        with pytest.raises(ValueError):
            is_strictly_correct(claim("supports", "supports", [[[N, N, "page", 0]]], bad))
    assert is_strictly_correct(claim("supports", "supports", [[]], []))  # an empty set is covered


# -- our passage-level adaptation --------------------------------------------------------------
def passage(title: str, text: str = "", pid: str = "") -> dict:
    return {"id": pid or title, "title": title, "text": text, "source": "milvus", "url": "",
            "score": 1.0}


def row(gold_label: str, predicted: str, gold: dict, cited: list[dict]) -> dict:
    return {"item_id": "x", "status": "ok", "gold": {"label": gold_label, "evidence": gold},
            "prediction": {"label": predicted}, "evidence": cited, "retrieved": []}


def test_readme_example_1_on_passages_at_page_level():
    """FEVER (page level): a gold (page, sentence) is covered when its page is cited."""
    gold = {"kind": "fever", "level": "page",
            "sets": [[{"page": "page1", "sent_id": 1}, {"page": "page2", "sent_id": 2}]]}
    one = score_row(row("REFUTES", "REFUTES", gold, [passage("page1")])).fever
    two = score_row(row("REFUTES", "REFUTES", gold,
                        [passage("page1"), passage("page2"), passage("page3")])).fever
    assert (one.strict, one.precision, one.recall) == (False, 1.0, 0.0)
    assert (two.strict, two.precision, two.recall) == (True, pytest.approx(2 / 3), 1.0)


def test_fever_page_ids_are_decoded_and_only_five_passages_count():
    gold = {"kind": "fever", "level": "page", "sets": [[{"page": "Soul Food (film)", "sent_id": 0}]]}
    cited = [passage(f"Other {i}") for i in range(5)] + [passage("Soul Food (film)")]
    late = score_row(row("SUPPORTS", "SUPPORTS", gold, cited)).fever
    assert not late.strict and late.precision == 0.0  # the sixth passage is not counted
    early = score_row(row("SUPPORTS", "SUPPORTS", gold, cited[-1:] + cited[:4])).fever
    assert early.strict and early.precision == pytest.approx(1 / 5)
    assert not score_row(row("SUPPORTS", "REFUTES", gold, cited[-1:])).fever.strict  # wrong label
    nei = {"kind": "fever", "level": "page", "sets": []}
    assert score_row(row("NOT ENOUGH INFO", "NOT ENOUGH INFO", nei, [])).fever.strict


def test_feverous_gold_set_covered_by_sentence_text_in_cited_passages():
    gold = {"kind": "feverous", "level": "sentence", "sets": [[
        {"page": "Bill Persky", "sent_id": None, "text": "Persky has been married three times."},
        {"page": "Bill Persky", "sent_id": None,
         "text": "His third wife is New York advertising executive, Joanna Patton."}]]}
    whole = passage("Bill Persky", "Bill Persky (born 1931) is a director.  Persky has been "
                                   "married three times. His third wife is New York advertising "
                                   "executive, Joanna  Patton.")
    scored = score_row(row("SUPPORTS", "SUPPORTS", gold, [whole]))
    assert scored.fever.strict and scored.sentence_recall == 1.0
    half = passage("Bill Persky", "Persky has been married three times.")
    scored = score_row(row("SUPPORTS", "SUPPORTS", gold, [half, passage("Joanna Patton")]))
    assert not scored.fever.strict  # one gold sentence is in no cited passage
    assert scored.fever.precision == 0.5 and scored.sentence_recall == 0.5
    assert scored.page_recall == 1.0  # the page is cited, the sentence is not


# -- sentence ids on passages: the scorer itself on the pairs the cited passages hold ----------
def dump_passage(page: str, sentences: list[int]) -> dict:
    return {"id": f"{page}#{sentences[0]}", "title": page.replace("_", " "), "text": "",
            "source": "keyword", "url": "", "score": 1.0, "page": page, "sentences": sentences,
            "pool": ""}


ID_CASES = [
    # (gold label, predicted, gold sets of (page, line), cited passages as (page, [lines]))
    ("REFUTES", "REFUTES", [[("page1", 1), ("page2", 2)]], [("page1", [1])]),
    ("REFUTES", "REFUTES", [[("page1", 1), ("page2", 2)]],
     [("page1", [1]), ("page2", [2]), ("page3", [3])]),
    ("SUPPORTS", "SUPPORTS", [[("A", 0)], [("B", 4), ("C", 1)]], [("B", [3, 4, 5]), ("C", [0, 1])]),
    ("SUPPORTS", "SUPPORTS", [[("A", 0)]], [("B", [0, 1, 2, 3, 4]), ("A", [0])]),  # A is 6th
    ("SUPPORTS", "REFUTES", [[("A", 0)]], [("A", [0])]),
    ("NOT ENOUGH INFO", "NOT ENOUGH INFO", [], [("A", [0, 1])]),
    ("REFUTES", "REFUTES", [[("A", 2)]], []),
]


def test_rows_with_sentence_ids_score_as_the_fever_scorer_on_their_first_five_pairs():
    """Each row, scored by :func:`score_row`, equals the scorer itself on ``(page, line)``
    predictions made of its cited passages' pairs in citation order (first five counted)."""
    rows, instances = [], []
    for label, predicted, sets, cited in ID_CASES:
        gold = {"kind": "fever", "level": "page", "sets": [
            [{"page": p, "sent_id": line} for p, line in s] for s in sets]}
        rows.append(row(label, predicted, gold, [dump_passage(p, lines) for p, lines in cited]))
        instances.append(claim(label, predicted, [[[N, N, p, line] for p, line in s] for s in sets],
                               [[p, line] for p, lines in cited for line in lines]))
    scored = [score_row(r).fever for r in rows]
    expected = [(is_strictly_correct(i, 5), evidence_macro_precision(i, 5),
                 evidence_macro_recall(i, 5)) for i in instances]
    for (strict, (precision, p_n), (recall, _)), got in zip(expected, scored, strict=True):
        assert got.strict == strict
        assert (got.precision, got.recall) == ((precision, recall) if p_n else (None, None))
    assert [s.strict for s in scored] == [False, True, True, False, False, True, False]
    assert all(score_row(r).level == "sentence" for r in rows
               if r["gold"]["evidence"]["sets"] and r["evidence"])
