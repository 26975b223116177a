"""Excerpts cut at a word with an ellipsis, faults on one line, flags folded into notes by kind."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from factdebate.core.notes import summarise
from factdebate.core.readable import excerpt, one_line
from factdebate.tools.scoring import ScoringFault, fault_text

PASSAGE = ("The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, "
           "France. It is named after the engineer Gustave Eiffel, whose company designed it.")


def test_short_text_is_unchanged_but_for_whitespace():
    assert excerpt("Paris is the capital.", 100) == "Paris is the capital."
    assert excerpt("Paris  is\nthe capital.", 100) == "Paris is the capital."
    assert excerpt(PASSAGE, len(PASSAGE)) == PASSAGE
    assert excerpt(None, 10) == ""


@pytest.mark.parametrize("limit", range(8, len(PASSAGE)))
def test_a_cut_ends_after_a_whole_word_with_an_ellipsis(limit):
    cut = excerpt(PASSAGE, limit)
    assert len(cut) <= limit and cut.endswith("…")
    kept = cut[:-1]
    assert PASSAGE.startswith(kept) and kept == kept.rstrip(" ,;:")
    following = PASSAGE[len(kept):]
    assert following[0] in " ,.", f"cut mid-word: {cut!r}"


def test_a_cut_at_a_space_keeps_the_last_word():
    assert excerpt("alpha beta gamma", 11) == "alpha beta…"  # "alpha beta " fits: beta is whole
    assert excerpt("alpha beta gamma", 10) == "alpha…"


def test_one_overlong_word_is_cut_and_marked():
    assert excerpt("https://example.org/" + "a" * 50, 12) == "https://exa…"


class _Out(BaseModel):
    statements: list[str]
    count: int


def test_a_validation_dump_becomes_one_line():
    with pytest.raises(ValidationError) as info:
        _Out.model_validate({"count": "many"})
    line = one_line(str(info.value))
    assert "\n" not in line and "[type=" not in line and "errors.pydantic.dev" not in line
    assert line == "_Out: statements: Field required (and 1 more)"
    wrapped = one_line(f"_Out: unparsable reply 'x' ({info.value})")
    assert wrapped == "_Out: unparsable reply 'x' (_Out: statements: Field required (and 1 more))"


def test_score_faults_read_as_one_line():
    nan = ScoringFault(metric="faithfulness", error="NaN", message="the scorer found no statements")
    assert fault_text(nan) == "faithfulness could not be scored (the scorer found no statements)"
    with pytest.raises(ValidationError) as info:
        _Out.model_validate_json("not json")
    bad = ScoringFault(metric="answer_relevancy", error="ScoringError",
                       message=f"_Out: unparsable reply 'not json' ({info.value})")
    text = fault_text(bad)
    assert text.startswith("answer_relevancy could not be scored (the scorer's reply was "
                           "unreadable: _Out: unparsable reply 'not json' (_Out: Invalid JSON")
    assert "\n" not in text


def _score_flags() -> list[str]:
    flags = []
    for agent in ("rag", "search", "vanilla"):
        for round_ in (1, 2, 3, 4):
            reason = ("the scorer found no statements" if (agent, round_) != ("vanilla", 4)
                      else "the scorer's reply was unreadable: _Out: Invalid JSON")
            flags.append(f"score: agent {agent} round {round_}: faithfulness could not be scored "
                         f"({reason})")
    return flags


def test_score_faults_fold_into_one_line_per_metric_with_counts():
    notes = summarise(_score_flags(), turns=12)
    assert notes == ["faithfulness could not be scored in 12 of 12 turns: the scorer found no "
                     "statements (11), the scorer's reply was unreadable (1)"]
    assert summarise(_score_flags()[:5], turns=12) == [
        "faithfulness could not be scored in 5 of 12 turns: the scorer found no statements"]


def test_a_fault_recorded_as_a_dict_is_read_not_shown():
    flag = ("score: agent rag round 1: {'metric': 'faithfulness', 'error': 'NaN', 'message': "
            "'ragas returned NaN (no statements)'}")
    assert summarise([flag]) == [
        "faithfulness could not be scored in 1 turn: the scorer found no statements"]
    assert summarise(["odd: {'a': 'first', 'b': 2}"]) == ["odd: first, 2"]


def test_check_flags_count_each_claim():
    flags = ["score: agent rag round 1: faithfulness could not be scored (the scorer found no "
             "statements) (claims 1, 2)",
             "claim 3: score: agent rag round 1: faithfulness could not be scored (the scorer "
             "found no statements)"]
    assert summarise(flags, turns=6) == ["faithfulness could not be scored in 3 of 6 turns "
                                         "(claims 1, 2, 3): the scorer found no statements"]


def test_citation_and_parse_flags_are_counted():
    flags = [f"citation: {a} round {r} cited unshown [8] (dropped)" for a in ("rag", "search")
             for r in (1, 2)] + ["citation: judge uncited (SUPPORTS)",
                                 "parse: agent rag round 1 label guessed as SUPPORTS",
                                 "parse: agent search round 2 label guessed as REFUTES",
                                 "parse: judge reply unreadable; fell back to no label"]
    assert summarise(flags) == [
        "citation checks: 4 replies cited passages never shown to them (dropped); "
        "1 labelled reply cited no passage",
        "the label was guessed from free text in 2 replies, e.g. agent rag round 1 label guessed "
        "as SUPPORTS",
        "1 reply could not be read, e.g. judge reply unreadable; fell back to no label"]


def test_alike_flags_name_their_places_and_others_stay_as_they_are():
    flags = [f"claim {n}: extract: sentence {n}: 1 reply fragment(s) holding no claim were dropped"
             for n in (1, 2, 3)]
    flags.append("search: local_search stands in for web search (claims 1, 2, 3)")
    assert summarise(flags) == [
        "extract: 1 reply fragment(s) holding no claim were dropped (3 times: sentence 1, "
        "sentence 2, sentence 3) (claims 1, 2, 3)",
        "search: local_search stands in for web search (claims 1, 2, 3)"]


def test_a_note_is_one_line_however_the_flag_was_written():
    flag = "score: agent rag round 1 failed (ValidationError: 1 validation error for X\nfoo\n  bad"
    for note in summarise([flag, "tool: a\nb"]):
        assert "\n" not in note
