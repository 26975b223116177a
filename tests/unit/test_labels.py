"""Verdict parsing onto label sets, and the structured verdict schema."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from factdebate.core.errors import ConfigError
from factdebate.core.labels import LABEL_SETS, get_label_set, parse_label, verdict_schema

FEVER = get_label_set("fever")


@pytest.mark.parametrize(
    ("text", "label", "how"),
    [
        ("reason: the documents list her.\nSUPPORTS", "SUPPORTS", "explicit"),
        ("**reason**: no mention.\n\n**REFUTES**", "REFUTES", "explicit"),
        ('{"reasoning": "x", "label": "Refuted"}', "REFUTES", "explicit"),
        ("Label: Not enough info", "NOT ENOUGH INFO", "explicit"),
        ("Final answer: NEI.", "NOT ENOUGH INFO", "explicit"),
        ("I think the claim is supported by document 2, so overall true", "SUPPORTS", "guessed"),
        ("It is NOT SUPPORTED by the evidence, as far as I can see", "REFUTES", "guessed"),
        ("The weather is nice today.", None, "failed"),
        ("", None, "failed"),
    ],
)
def test_parse_label_fever(text, label, how):
    parsed = parse_label(text, FEVER)
    assert (parsed.label, parsed.how) == (label, how)


def test_not_supported_is_not_read_as_supports():
    assert parse_label("The claim is not supported.", get_label_set("binary")).label == "REFUTES"


def test_averitec_and_qa_sets():
    assert parse_label("verdict: Conflicting Evidence/Cherrypicking",
                       get_label_set("averitec")).label == "CONFLICTING"
    assert parse_label("Answer: (C)", get_label_set("medqa")).label == "C"
    assert parse_label("answer: Maybe", get_label_set("pubmedqa")).label == "maybe"


def test_binary_set_never_returns_nei():
    parsed = parse_label("NOT ENOUGH INFO", get_label_set("binary"))
    assert parsed.label is None and parsed.how == "failed"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.sampled_from(["fever", "binary", "averitec", "medqa", "pubmedqa"]))
def test_parser_never_raises_and_stays_in_the_label_set(text, name):
    label_set = get_label_set(name)
    parsed = parse_label(text, label_set)
    assert parsed.label is None or parsed.label in label_set.labels
    assert (parsed.label is None) == (parsed.how == "failed")


def test_verdict_schema_constrains_the_label():
    schema = verdict_schema("fever")
    assert schema(reasoning="r", label="SUPPORTS").label == "SUPPORTS"
    with pytest.raises(ValidationError):
        schema(reasoning="r", label="MAYBE")
    enum = schema.model_json_schema()["properties"]["label"]["enum"]
    assert enum == ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]


def test_unknown_label_set_suggests_close_names():
    with pytest.raises(ConfigError, match="did you mean 'fever'"):
        get_label_set("fevr")
    assert "feverous" in LABEL_SETS  # alias of binary
