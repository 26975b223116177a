"""Property-based tests (hypothesis) of every parser that reads model or server text.

Each parser gets arbitrary text - plus text built from the fragments real replies are made of
(labels, JSON braces, fences, ``[Yes]``, ``All Correct Answers:``) - and must never raise and
must stay inside its output domain.
"""

from __future__ import annotations

import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from pydantic import BaseModel, ValidationError

from factdebate.core.labels import LABEL_SETS, get_label_set, parse_label, verdict_schema
from factdebate.core.models.structured import json_structured_output
from factdebate.nodes.baselines.ask_answer import AnswersOut, clean_answers, parse_answers
from factdebate.nodes.llm import is_retryable, retry_after_s
from factdebate.nodes.madam_rag.aggregate import AggregateOut, parse_aggregate
from factdebate.nodes.madam_rag.answer_from_document import DocAnswer, parse_agent_reply
from factdebate.nodes.madke.judge_consensus import ConsensusOut, parse_consensus
from factdebate.nodes.madke.select_knowledge import MAX_SELECTED, KnowledgeChoice, parse_selection, pick
from factdebate.prompts.mermaid.schemas import Decomposition, ReactStep
from factdebate.testing.scripted import scripted
from factdebate.tools.scoring import _parse_raw
from factdebate.tools.tavily_search import parse_retry_after

FRAGMENTS = [
    "SUPPORTS", "REFUTES", "NOT ENOUGH INFO", "NEI", "CONFLICTING", "yes", "no", "maybe", "A", "D",
    "true", "False", "label:", "Verdict =", "answer -", "{", "}", "[", "]", '"label": ', '"', ",",
    "```json", "```", "\n", " ", "[Yes]", "[ no ]", "[No Found]", "[1, 2]", "[99]", "[0]",
    "All Correct Answers:", "Answer:", "Explanation:", "unknown", "\x00", "\u202e", "\ud800",
    '{"reasoning": "r", "label": "REFUTES"}', '{"label": null}', "'", "“", "”", "1963", "..",
]
texts = st.one_of(
    st.text(max_size=400),
    st.lists(st.sampled_from(FRAGMENTS) | st.text(string.printable, max_size=8), max_size=40)
    .map("".join),
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ADVERSARIAL = ["[" * 5000 + "]" * 5000, "{" * 5000, '{"a":' * 3000 + "1" + "}" * 3000,
               "x" * 200_000, "\x00" * 1000, "All Correct Answers: [" + "'a'," * 5000 + "]"]


@FAST
@given(texts, st.sampled_from(LABEL_SETS.names()))
def test_parse_label_stays_in_the_label_set(text: str, name: str) -> None:
    label_set = get_label_set(name)
    parsed = parse_label(text, label_set)
    assert parsed.how in ("structured", "explicit", "guessed", "failed")
    assert (parsed.label is None) == (parsed.how == "failed")
    assert parsed.label is None or parsed.label in label_set.labels
    assert label_set.normalise(text) in (None, *label_set.labels)


@FAST
@given(texts)
def test_parse_answers_gives_clean_distinct_answers(text: str) -> None:
    answers = parse_answers(text)
    assert answers is None or answers == clean_answers(answers)
    for answer in answers or []:
        assert answer and answer == " ".join(answer.split()) and answer.casefold() != "unknown"


@FAST
@given(texts)
def test_parse_consensus_is_yes_no_or_none(text: str) -> None:
    assert parse_consensus(text) in (True, False, None)


@FAST
@given(texts, st.integers(min_value=0, max_value=12))
def test_parse_selection_and_pick_stay_inside_the_pool(text: str, pool_size: int) -> None:
    reply = parse_selection(text)
    if reply is None:
        return
    numbers, no_found = reply
    assert all(isinstance(n, int) and n >= 0 for n in numbers)
    assert not (no_found and numbers)
    pool = [{"id": str(i)} for i in range(pool_size)]
    chosen, dropped = pick(pool, numbers)  # type: ignore[arg-type]
    assert len(chosen) <= MAX_SELECTED and all(c in pool for c in chosen)
    assert all(not 1 <= n <= pool_size for n in dropped)
    assert len({c["id"] for c in chosen}) == len(chosen)


@FAST
@given(texts)
def test_parse_aggregate_gives_non_empty_answers(text: str) -> None:
    reply = parse_aggregate(text)
    if reply is not None:
        answers, explanation = reply
        assert isinstance(explanation, str)
        assert all(a and a == a.strip() for a in answers)


@FAST
@given(texts)
def test_parse_agent_reply_gives_an_answer_or_none(text: str) -> None:
    reply = parse_agent_reply(text)
    assert reply is None or (reply[0] != "" and isinstance(reply[1], str))


SCHEMAS: list[type[BaseModel]] = [verdict_schema("fever"), verdict_schema("medqa"), AnswersOut,
                                  ConsensusOut, KnowledgeChoice, AggregateOut, DocAnswer,
                                  ReactStep, Decomposition]


@FAST
@given(texts, st.sampled_from(SCHEMAS))
def test_structured_output_parser_never_raises_with_include_raw(text: str, schema: type) -> None:
    """The JSON-schema parser behind the embedded and scripted models (MERMAID's action too)."""
    parse = json_structured_output(scripted(lambda c: ""), schema, include_raw=True).parse
    out = parse(AIMessage(content=text))
    assert out["parsed"] is None or isinstance(out["parsed"], schema)
    assert (out["parsed"] is None) == (out["parsing_error"] is not None)


@FAST
@given(texts, st.sampled_from(SCHEMAS))
def test_ragas_reply_parser_raises_only_validation_errors(text: str, schema: type) -> None:
    try:
        assert isinstance(_parse_raw(text, schema), schema)
    except (ValidationError, ValueError):
        pass


@FAST
@given(st.one_of(st.none(), st.text(max_size=60), st.floats(allow_nan=True).map(str)))
def test_retry_after_is_none_or_a_non_negative_number(value: str | None) -> None:
    seconds = parse_retry_after(value)
    assert seconds is None or seconds >= 0

    class Limited(Exception):
        response = type("R", (), {"headers": {"retry-after": value} if value else {}})()

    wait = retry_after_s(Limited())
    assert wait is None or wait >= 0
    assert is_retryable(Limited())


def test_adversarial_inputs_do_not_blow_up_any_parser() -> None:
    """Deep nesting (recursion limits), 200 KB, NULs: handled, not raised."""
    for text in ADVERSARIAL:
        for name in LABEL_SETS.names():
            assert parse_label(text, get_label_set(name)).how in ("explicit", "guessed", "failed")
        parse_answers(text), parse_consensus(text), parse_selection(text)
        parse_aggregate(text), parse_agent_reply(text)
        for schema in SCHEMAS:
            parse = json_structured_output(scripted(lambda c: ""), schema, include_raw=True).parse
            assert parse(AIMessage(content=text))["parsed"] is None


def test_the_properties_can_fail() -> None:
    """The domain checks above have teeth: known replies land where they should."""
    fever = get_label_set("fever")
    assert parse_label('{"label": "refuted"}', fever).label == "REFUTES"
    assert parse_label("PANTS ON FIRE", fever).how == "failed"
    assert parse_selection("[No Found] [1]") == ([], True)
    assert parse_answers("All Correct Answers: ['1963', '1963 ', 'unknown']") == ["1963"]
    assert parse_consensus("[No] ... [Yes]") is True
    assert json.loads(json.dumps(parse_agent_reply("Answer: 1963. Explanation: doc 1"))) == [
        "1963", "doc 1"]
