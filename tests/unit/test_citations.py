"""Citations: reading cited numbers, checking them against what was shown, and the
evidence a verdict rests on."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from factdebate.core.citations import (
    citations_in_text,
    evidence_behind_verdict,
    normalise_numbers,
    passage_key,
    stance_of,
    uncited_passages,
    with_citations,
)
from factdebate.core.labels import verdict_schema
from factdebate.nodes.citations import Shown, cite
from factdebate.nodes.llm import CallLog


def _p(i: str, title: str = "") -> dict:
    return {"id": i, "title": title or i.upper(), "text": f"text {i}", "source": "t", "url": "",
            "score": 1.0}


@pytest.mark.parametrize(("text", "expected"), [
    ('{"reasoning": "x", "label": "SUPPORTS", "citations": [2, 1]}', ["2", "1"]),
    ('I quote {"citations": [9]} then {"label": "REFUTES", "citations": [3]}', ["3"]),
    ("The tower is in Paris [1], built 1889 [2, 3]. Label: SUPPORTS", ["1", "2", "3"]),
    ("See [doc 4] and [Document 5]; [1][1]", ["4", "5", "1"]),
    ("No citation here. SUPPORTS", []),
    ('{"citations": ["[2]", "7", "x"]}', ["2", "7", "x"]),
])
def test_citations_are_read_from_free_text(text, expected):
    assert citations_in_text(text) == expected


def test_numbers_are_normalised_and_deduplicated():
    assert normalise_numbers([3, "3", " 04 ", "doc 2", None, ""]) == ["3", "4", "2", "None"]
    assert normalise_numbers(5) == ["5"]
    assert normalise_numbers(None) == []


def test_schema_offers_only_shown_numbers_but_reads_any_number():
    schema = with_citations(verdict_schema("fever"), 3)
    assert schema.__name__ == verdict_schema("fever").__name__  # scripts know replies by name
    items = schema.model_json_schema()["properties"]["citations"]["items"]
    assert items["enum"] == [1, 2, 3]  # a grammar / strict schema can write only shown ids
    reply = schema.model_validate_json('{"reasoning": "r", "label": "SUPPORTS", "citations": [9]}')
    assert reply.citations == [9]  # read, then dropped and flagged by the node, not a lost reply
    assert with_citations(verdict_schema("fever"), 0) is verdict_schema("fever")
    assert with_citations(schema, 3) is schema


def test_custom_schemas_get_the_field_too():
    class DocAnswer(BaseModel):
        answer: str

    schema = with_citations(DocAnswer, 1)
    assert "citations" in schema.model_fields and issubclass(schema, DocAnswer)


def test_shown_numbers_each_passage_once_and_resolves_citations():
    a, b, c = _p("a"), _p("b"), _p("c")
    shown = Shown([a, b], [b, c])
    assert len(shown) == 3 and shown.number(c) == 3
    assert 'n="3"' in shown.render() and shown.render().count("<document") == 3
    assert shown.render([c]).startswith('<document n="3"')
    cited, unshown = shown.resolve(["2", 2, "9", "0", "x"])
    assert cited == [b] and unshown == ["9", "0", "x"]


def test_cite_drops_unshown_and_flags_uncited():
    shown = Shown([_p("a"), _p("b")])
    calls = CallLog()
    record = cite(shown, ["2", "7"], calls, by="rag", role="debater", round_=2, label="SUPPORTS")
    assert [p["id"] for p in record["passages"]] == ["b"] and record["unshown"] == ["7"]
    assert any("rag round 2 cited unshown [7]" in f for f in calls.flags)
    cite(shown, [], calls, by="search", role="debater", round_=2, label="REFUTES")
    assert any("search round 2 uncited" in f for f in calls.flags)
    cite(Shown(), [], calls, by="vanilla", role="debater", round_=2, label="REFUTES")
    update = calls.update()
    assert update["ledger"]["citations_unshown"] == 1
    assert update["ledger"]["replies_cited"] == 1
    assert update["ledger"]["replies_uncited"] == 1  # nothing shown: nothing to cite, no flag
    assert len(update["citations"]) == 3


def _rec(by, round_, label, ids, decides=False, answers=()):
    return {"by": by, "role": "judge" if decides else "debater", "round": round_, "label": label,
            "answers": list(answers), "decides": decides,
            "passages": [_p(i) for i in ids], "unshown": []}


def test_verdict_evidence_is_the_deciders_and_the_winning_sides_last_citations():
    records = [
        _rec("rag", 1, "REFUTES", ["old"]),       # rag changed its mind: its last reply counts
        _rec("search", 1, "REFUTES", ["s1"]),
        _rec("rag", 2, "SUPPORTS", ["r2", "shared"]),
        _rec("search", 2, "REFUTES", ["s2"]),     # the losing side is never the verdict's evidence
        _rec("judge", 0, "SUPPORTS", ["shared", "j"], decides=True),
    ]
    out = evidence_behind_verdict(records, "SUPPORTS")
    assert [e["id"] for e in out] == ["shared", "j", "r2"]  # decider first, in citation order
    assert out[0]["cited_by"] == ["judge", "rag@2"] and out[0]["stance"] == "supports"
    assert evidence_behind_verdict(records, None) == []


def test_answer_tasks_follow_the_final_answers():
    records = [_rec("doc1", 1, None, ["d1"], answers=["Paris"]),
               _rec("doc2", 1, None, ["d2"], answers=["Lyon"])]
    out = evidence_behind_verdict(records, None, ["paris"])
    assert [e["id"] for e in out] == ["d1"] and out[0]["stance"] == "answers: Paris"


def test_retrieved_is_everything_else_once():
    seen = [_p("a"), _p("b"), _p("a"), _p("c")]
    assert [p["id"] for p in uncited_passages(seen, [_p("b")])] == ["a", "c"]
    assert passage_key({"id": "", "url": "http://x", "title": "T"}) == "http://x"
    assert stance_of("NOT ENOUGH INFO") == "not enough info" and stance_of("B") == "b"


def test_scripted_double_cites_modes():
    from langchain_core.messages import HumanMessage

    from factdebate.testing.script import ScriptCall
    from factdebate.testing.scripted_citations import add_citations

    prompt = ('Claim: The Eiffel Tower is in Paris.\n<document n="1" title="Louvre">The Louvre is '
              'in Paris.</document>\n<document n="2" title="Eiffel Tower">The Eiffel Tower is a '
              'tower in Paris.</document>')
    call = ScriptCall(0, "debater", "rag", 1, with_citations(verdict_schema("fever"), 2),
                      [HumanMessage(prompt)])
    reply = {"reasoning": "r", "label": "SUPPORTS"}
    assert add_citations(call, reply, "shown")["citations"] == [2]
    assert add_citations(call, reply, "wrong")["citations"] == [2, 7]
    assert add_citations(call, reply, "none")["citations"] == []
    assert add_citations(call, {**reply, "citations": [1]}, "shown")["citations"] == [1]
    json.dumps(add_citations(call, reply, "shown"))
