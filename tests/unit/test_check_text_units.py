"""check_text's pure parts: sentence spans, claim keys, verdict rules, settings, verifier lookup."""

from __future__ import annotations

import pytest

from factdebate.core.errors import ConfigError
from factdebate.graphs.registry import FRAMEWORKS, build_framework
from factdebate.graphs.verifiers import verifier_builder, verifier_key, verifier_names
from factdebate.nodes.check_text.extract_claims import claim_key, grounded
from factdebate.nodes.check_text.split_text import split_sentences
from factdebate.nodes.check_text.state import CheckTextContext, parse_settings, text_label, text_verdict


def test_sentences_keep_abbreviations_initials_and_numbers_and_exact_spans():
    text = ("Dr. J. K. Rowling wrote 7 books, e.g. Harry Potter. The U.S. has 50 states! "
            "Pi is 3.14? Yes.\n- A list item\n\nNext paragraph")
    got = split_sentences(text)
    assert [s["text"] for s in got] == [
        "Dr. J. K. Rowling wrote 7 books, e.g. Harry Potter.", "The U.S. has 50 states!",
        "Pi is 3.14?", "Yes.", "- A list item", "Next paragraph"]
    assert all(text[s["start"]:s["end"]] == s["text"] for s in got)
    assert split_sentences("... !!! ...") == []


def test_identical_claims_share_a_key():
    assert claim_key("Paris is big.") == claim_key("  paris IS  big ")
    assert claim_key("Paris is big.") != claim_key("Paris is small.")


def test_grounded_drops_claims_not_drawn_from_the_text():
    assert grounded("Paris is the capital.", "Paris is the capital of France.")
    assert not grounded("<one self-contained fact>", "Paris is the capital of France.")
    assert not grounded("   ", "anything")


@pytest.mark.parametrize(("counts", "verdict", "fever", "binary"), [
    ({"supported": 2, "refuted": 1}, "contains refuted claims", "REFUTES", "REFUTES"),
    ({"supported": 2}, "all supported", "SUPPORTS", "SUPPORTS"),
    ({"supported": 1, "unverifiable": 1}, "unverifiable parts", "NOT ENOUGH INFO", "SUPPORTS"),
    ({"supported": 1, "skipped": 1}, "unverifiable parts", "NOT ENOUGH INFO", "SUPPORTS"),
    ({"no_verdict": 1}, "unverifiable parts", None, None),
    ({}, "no check-worthy claims", "NOT ENOUGH INFO", "SUPPORTS"),
])
def test_text_verdict_and_label(counts, verdict, fever, binary):
    assert text_verdict(counts) == verdict
    assert text_label(verdict, "fever", counts) == fever
    assert text_label(verdict, "binary", counts) == binary


def test_verifier_settings_parse():
    assert parse_settings('{"max_rounds": 1}') == {"max_rounds": 1}
    assert parse_settings("max_rounds=1; scoring_mode=none") == {"max_rounds": "1",
                                                                 "scoring_mode": "none"}
    with pytest.raises(ConfigError, match="not a mapping"):
        parse_settings("max_rounds")


def test_graph_layer_lookup_finds_exactly_the_registered_frameworks():
    registered = [n for n in FRAMEWORKS.names() if n != "check_text"]
    assert verifier_names() == registered  # one registry
    for name in registered:
        assert type(verifier_builder(name)) is type(build_framework(name))
        assert verifier_builder(name).context_schema is build_framework(name).context_schema
    with pytest.raises(ConfigError, match="unknown verifier framework 'nope'"):
        verifier_builder("nope")


def test_check_text_accepts_every_name_and_alias_verify_accepts():
    """``verify --framework toolmad`` worked while check_text refused it."""
    names = {alias: FRAMEWORKS.resolve(alias) for entry in FRAMEWORKS
             for alias in (entry.name, *FRAMEWORKS.aliases_of(entry.name))
             if entry.name != "check_text"}
    assert {"toolmad", "tool-mad", "madam-rag", "madamrag"} <= set(names)
    for alias, name in names.items():
        assert verifier_key(alias) == name, alias
        assert CheckTextContext(framework=alias).framework == alias  # validation passes
        assert verifier_builder(alias).context_schema is build_framework(name).context_schema
    for own in ("check_text", "check-text", "CHECK_TEXT"):
        with pytest.raises(ConfigError, match="cannot verify its own claims"):
            CheckTextContext(framework=own)
