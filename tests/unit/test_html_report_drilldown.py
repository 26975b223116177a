"""The eval report's per-item drill-down (evaluation/html_report.py): an item's cited evidence apart
from what it only retrieved, from its final state or, without one, its results row."""

from __future__ import annotations

from typing import Any

from factdebate.evaluation.html_report import _item_html, item_evidence

EIFFEL = {"id": "demo-0001", "title": "Eiffel Tower", "text": "The tower is in Paris.",
          "source": "milvus", "url": "", "score": 0.7}
LOUVRE = {"id": "demo-0089", "title": "Louvre", "text": "A museum in Paris.", "source": "milvus",
          "url": "", "score": 0.5}


def row(**extra: Any) -> dict[str, Any]:
    return {"item_id": "fever-1", "status": "ok", "claim": "The Eiffel Tower is in Paris.",
            "gold": {"label": "SUPPORTS"}, "rounds": 1, "stopped_by": "judge", "flags": [],
            "prediction": {"label": "SUPPORTS", "rationale": "It is."}, **extra}


def test_drilldown_shows_cited_apart_from_retrieved_from_the_state():
    state = {"turns": [{"agent": "rag", "round": 1, "query": "q", "evidence": [EIFFEL, LOUVRE],
                        "answer": "a", "label": "SUPPORTS", "cited": ["demo-0001"]}],
             "verdict_evidence": [{**EIFFEL, "cited_by": ["judge", "rag@1"], "stance": "supports"}],
             "retrieved_evidence": [LOUVRE]}
    html = _item_html(1, row(), state)
    behind = html[html.index("Evidence behind the verdict (1 cited)"):html.index("Retrieved, not cited")]
    assert "Eiffel Tower" in behind and "cited by judge, rag@1" in behind and "supports" in behind
    assert "Louvre" not in behind
    rest = html[html.index("Retrieved, not cited (1)"):html.index("<details")]
    assert "Louvre" in rest and "Eiffel Tower" not in rest
    # the debate marks what the turn cited
    assert "<li class='cited'><span class='cited-mark'>✓ cited</span> <b>Eiffel Tower</b>" in html
    assert "<li><b>Louvre</b>" in html


def test_drilldown_reads_the_row_without_a_state_and_flags_an_uncited_verdict():
    cited = item_evidence(row(evidence=[{**EIFFEL, "cited_by": ["judge"], "stance": "supports"}],
                              retrieved=[LOUVRE]), {})
    assert [e["title"] for e in cited["verdict_evidence"]] == ["Eiffel Tower"]
    assert [e["title"] for e in cited["retrieved_evidence"]] == ["Louvre"]
    html = _item_html(1, row(evidence=[], retrieved=[EIFFEL, LOUVRE]), {})
    assert "Uncited verdict" in html and "Eiffel Tower; Louvre" in html
    assert item_evidence(row(), {}) == {}  # a row from before citations: nothing claimed
    assert "Evidence behind the verdict" not in _item_html(1, row(), {})
