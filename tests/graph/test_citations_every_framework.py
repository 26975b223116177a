"""Every graph's verdict rests on what its replies cited (issue #22), with the scripted double.

For each of the 18 registered frameworks:
* every passage of ``verdict_evidence`` was cited by the deciding reply or by a reply whose label
  (answers) became the verdict, and carries who cited it and the stance;
* ``retrieved_evidence`` holds no cited passage, and every passage the run showed is in one of
  the two lists;
* a reply that cites a number it was never shown (``?cite=wrong``) has it dropped and flagged;
* a labelled reply that cites nothing (``?cite=none``) is flagged as uncited, and the verdict then
  rests on nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.citations import evidence_behind_verdict, passage_key
from factdebate.run.frameworks import FRAMEWORKS, build_framework
from tests.graph.test_scripted_every_framework import CLAIM, DOCUMENTS, context_for

NAMES = [e.name for e in FRAMEWORKS]


async def _run(name: str, spec: str) -> dict[str, Any]:
    graph = build_framework(name).compile(checkpointer=InMemorySaver())
    return await graph.ainvoke({"claim": CLAIM, "documents": DOCUMENTS},
                               {"configurable": {"thread_id": f"cite-{name}-{spec}"}},
                               context=context_for(name, spec))


def _claim_records(out: dict[str, Any]) -> list[dict[str, Any]]:
    """Citation records of a claim-level run (check_text nests one run per claim)."""
    return list(out.get("citations") or [])


@pytest.mark.parametrize("name", NAMES)
async def test_verdict_evidence_is_only_what_the_verdict_cited(name: str):
    # ?cite=wrong: every reply cites one shown passage and one number it was never shown
    out = await _run(name, "scripted:disagree?cite=wrong")
    records = _claim_records(out)
    cited = out["verdict_evidence"]
    assert "retrieved_evidence" in out, name
    assert cited == evidence_behind_verdict(records, out.get("label"), out.get("answers") or [])
    allowed = {passage_key(p) for c in records
               if c.get("decides") or (out.get("label") is not None and c["label"] == out["label"])
               or set(c.get("answers") or []) & set(out.get("answers") or [])
               for p in c["passages"]}
    assert {passage_key(e) for e in cited} <= allowed, name
    for e in cited:
        assert e["cited_by"] and e["stance"], (name, e)
    cited_keys = {passage_key(e) for e in cited}
    assert not cited_keys & {passage_key(e) for e in out["retrieved_evidence"]}, name
    shown = {passage_key(p) for t in out.get("turns") or [] for p in t.get("evidence") or []}
    assert shown <= cited_keys | {passage_key(e) for e in out["retrieved_evidence"]}, name
    if any(c["passages"] for c in records if c.get("decides") or c["label"] == out.get("label")):
        assert cited, (name, "the verdict's side cited passages, yet the verdict rests on none")
    if not any(c.get("shown") for c in records):
        assert not shown, (name, "passages were shown but no reply's citations were recorded")
        pytest.skip(f"{name} showed its replies no passages with these inputs")
    # the unshown number is dropped from every record, flagged and counted
    assert out["ledger"]["citations_unshown"] >= 1, name
    assert any(f.startswith("citation: ") and "cited unshown" in f for f in out["flags"]), name
    for c in records:
        if c.get("shown"):
            assert c["unshown"], (name, c)
        assert all(not n.isdigit() or int(n) > c.get("shown", 0) for n in c["unshown"]), (name, c)
        assert len(c["passages"]) <= c.get("shown", 0), (name, c)


@pytest.mark.parametrize("name", NAMES)
async def test_uncited_verdicts_are_flagged_and_rest_on_nothing(name: str):
    out = await _run(name, "scripted:agree?cite=none")
    records = _claim_records(out)
    if not any(c.get("shown") for c in records):
        pytest.skip(f"{name} showed its replies no passages with these inputs")
    assert out["verdict_evidence"] == [], name
    assert out["ledger"]["replies_uncited"] >= 1, name
    assert any(f.startswith("citation: ") and "uncited" in f for f in out["flags"]), name
