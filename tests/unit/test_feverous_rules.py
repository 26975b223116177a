"""FEVEROUS scored as the FEVEROUS scorer defines it (Raldir/FEVEROUS ``feverous_scorer.py``), the
FEVER rule as a named option, and sentence coverage on the same page and on word boundaries.

The scorer's behaviour the cases follow: ``is_strictly_correct`` is true when the label is right
and one complete gold group is among the predictions - for every label, NOT ENOUGH INFO included;
``evidence_macro_precision`` counts every claim (1.0 with no prediction); ``evidence_macro_recall``
is 1.0 for a claim without gold groups, else 1.0 when a complete group is predicted, else 0.0.
"""

from __future__ import annotations

import pytest

from factdebate.evaluation.evidence_metrics import (
    SCORER_RULES,
    contains_words,
    evidence_summary,
    score_claim,
    score_row,
)

NEI = "NOT ENOUGH INFO"


def same(predicted: list, gold: list) -> bool:
    return predicted == gold


# -- the FEVEROUS scorer on (page, type, position) triples ------------------------------------
def test_feverous_nei_claim_needs_its_gold_group():
    gold = [[["Wolfgang Niedecken", "sentence", "1"]]]
    found = score_claim(NEI, NEI, gold, [["Wolfgang Niedecken", "sentence", "1"]], same,
                        rule="feverous")
    missing = score_claim(NEI, NEI, gold, [["Korean Air", "sentence", "0"]], same,
                          rule="feverous")
    assert (found.strict, found.precision, found.recall) == (True, 1.0, 1.0)
    assert (missing.strict, missing.precision, missing.recall) == (False, 0.0, 0.0)
    # FEVER's rule on the same claims: NEI needs no evidence and is left out of precision/recall
    fever = score_claim(NEI, NEI, gold, [["Korean Air", "sentence", "0"]], same, rule="fever")
    assert (fever.strict, fever.precision, fever.recall) == (True, None, None)


def test_feverous_claim_without_gold_groups_is_never_strictly_right():
    scored = score_claim(NEI, NEI, [], [], same, rule="feverous")
    assert (scored.label_correct, scored.strict) == (True, False)
    assert (scored.precision, scored.recall) == (1.0, 1.0)  # no prediction; nothing to recall


def test_feverous_wrong_label_is_never_strictly_right_but_counts_in_precision():
    gold = [[["A", "sentence", "0"], ["B", "sentence", "2"]]]
    scored = score_claim("SUPPORTS", "REFUTES", gold, [["A", "sentence", "0"],
                                                       ["B", "sentence", "2"]], same,
                         rule="feverous")
    assert (scored.strict, scored.precision, scored.recall) == (False, 1.0, 1.0)


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown scorer rule"):
        score_claim("SUPPORTS", "SUPPORTS", [], [], same, rule="lenient")
    assert set(SCORER_RULES) == {"feverous", "fever"}


# -- on our passages ---------------------------------------------------------------------------
def passage(title: str, text: str) -> dict:
    return {"id": title, "title": title, "text": text, "source": "milvus", "url": ""}


def row(label: str, predicted: str, sets: list, cited: list, rule: str | None = None) -> dict:
    gold = {"kind": "feverous", "level": "sentence", "sets": sets}
    if rule:
        gold["rule"] = rule
    return {"item_id": "x", "status": "ok", "gold": {"label": label, "evidence": gold},
            "prediction": {"label": predicted}, "evidence": cited, "retrieved": []}


BIT = [[{"page": "Bit Factory", "sent_id": None, "text": "It closed in 1959."}]]


def test_feverous_rows_default_to_the_feverous_rule_and_fever_is_an_option():
    cited = [passage("Other page", "Nothing relevant.")]
    official = score_row(row(NEI, NEI, BIT, cited))
    assert not official.fever.strict and official.fever.precision == 0.0
    option = score_row(row(NEI, NEI, BIT, cited, rule="fever"))
    assert option.fever.strict and option.fever.precision is None
    summary = evidence_summary([row(NEI, NEI, BIT, cited)])
    assert summary["fever"]["rule"] == "feverous" and summary["fever"]["score"] == 0.0
    assert any("FEVEROUS scorer" in note for note in summary["notes"])
    assert evidence_summary([row(NEI, NEI, BIT, cited, rule="fever")])["fever"]["score"] == 1.0


def test_a_gold_sentence_is_covered_only_on_word_boundaries():
    assert not contains_words("bit closed in 1959.", "it closed in 1959.")
    assert contains_words("the plant opened in 1920. it closed in 1959.", "it closed in 1959.")
    assert not contains_words("it closed in 19590 days", "it closed in 1959")
    assert contains_words("(it closed in 1959)", "it closed in 1959")
    bit = score_row(row("SUPPORTS", "SUPPORTS", BIT,
                        [passage("Bit Factory", "Bit closed in 1959.")]))
    assert not bit.fever.strict and bit.sentence_recall == 0.0 and bit.sentence_precision == 0.0
    right = score_row(row("SUPPORTS", "SUPPORTS", BIT,
                          [passage("Bit Factory", "It opened in 1920. It closed in 1959.")]))
    assert right.fever.strict and right.sentence_recall == 1.0


def test_a_gold_sentence_is_covered_only_by_a_passage_of_its_page():
    elsewhere = [passage("Other Factory", "It closed in 1959.")]
    scored = score_row(row("SUPPORTS", "SUPPORTS", BIT, elsewhere))
    assert not scored.fever.strict and scored.sentence_recall == 0.0
    assert not scored.gold_cited
    # the title matches after the usual page normalisation (underscores, -LRB-/-RRB-, NFC)
    sets = [[{"page": "Soul Food (film)", "sent_id": None, "text": "It was released in 1997."}]]
    decoded = score_row(row("SUPPORTS", "SUPPORTS", sets,
                            [passage("Soul_Food_-LRB-film-RRB-", "It was released in 1997.")]))
    assert decoded.fever.strict and decoded.sentence_recall == 1.0


# -- FEVEROUS element ids (the release's evidence, an imported FEVEROUS database) ------------
def element_passage(page: str, elements: list[str]) -> dict:
    return {"id": f"{page}#{elements[0]}", "title": page, "text": "", "source": "keyword",
            "url": "", "page": page, "sentences": elements, "pool": ""}


def test_feverous_ids_match_as_its_scorer_with_five_sentences_and_25_cells():
    from factdebate.evaluation.evidence_metrics import gold_evidence

    gold = gold_evidence({"id": 1, "label": "SUPPORTS", "claim": "c", "evidence": [
        {"content": ["Korean Air_sentence_0", "Korean Air_cell_1_19_0"], "context": {}}]})
    table = element_passage("Korean Air", [f"cell_1_{r}_0" for r in range(30)])  # 30 cells
    lead = element_passage("Korean Air", [f"sentence_{i}" for i in range(7)])
    cited = [table, lead]
    scored = score_row({"item_id": "x", "status": "ok", "evidence": cited, "retrieved": [],
                        "gold": {"label": "SUPPORTS", "evidence": gold},
                        "prediction": {"label": "SUPPORTS"}})
    # cell_1_19_0 is the 20th cell (within 25), sentence_0 the first sentence: a complete set
    assert (scored.level, scored.basis) == ("sentence", "ids")
    assert scored.fever.strict and scored.sentence_recall == 1.0
    assert scored.fever.precision == pytest.approx(2 / 30)  # 25 cells + 5 sentences scored
    late = element_passage("Korean Air", [f"cell_1_{r}_0" for r in range(20, 40)] + ["cell_1_19_0"])
    first = element_passage("Korean Air", [f"cell_1_{r}_0" for r in range(5)])
    scored = score_row({"item_id": "x", "status": "ok", "evidence": [first, late, lead],
                        "retrieved": [], "gold": {"label": "SUPPORTS", "evidence": gold},
                        "prediction": {"label": "SUPPORTS"}})
    assert not scored.fever.strict and scored.gold_cited  # the 26th cell is not scored
