"""Every graph's verdict rests on what its replies cited, with the scripted double.

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
from factdebate.graphs.registry import FRAMEWORKS, build_framework
from tests.graph.test_scripted_every_framework import CLAIM, DOCUMENTS, context_for

NAMES = [e.name for e in FRAMEWORKS]


async def _run(name: str, spec: str) -> dict[str, Any]:
    graph = build_framework(name).compile(checkpointer=InMemorySaver())
    return await graph.ainvoke({"claim": CLAIM, "documents": DOCUMENTS},
                               {"configurable": {"thread_id": f"cite-{name}-{spec}"}},
                               context=context_for(name, spec))


def _verdicts(out: dict[str, Any]) -> list[dict[str, Any]]:
    """The claim-level verdicts of a run: the run itself, or each debated claim of check_text
    (whose claims carry their verifier's cited ``evidence``, ``retrieved`` and ``citations``)."""
    if "check" not in out:
        return [out]
    return [{**c, "verdict_evidence": c.get("evidence") or [],
             "retrieved_evidence": c.get("retrieved") or [],
             "citations": c.get("citation_records") or []}
            for c in out["check"]["claims"] if c.get("turns")]


@pytest.mark.parametrize("name", NAMES)
async def test_verdict_evidence_is_only_what_the_verdict_cited(name: str):
    # ?cite=wrong: every reply cites one shown passage and one number it was never shown
    out = await _run(name, "scripted:disagree?cite=wrong")
    verdicts = _verdicts(out)
    assert verdicts, name
    for v in verdicts:
        _check_verdict(name, v)
    records = [c for v in verdicts for c in v.get("citations") or []]
    if not any(c.get("shown") for c in records):
        pytest.skip(f"{name} showed its replies no passages with these inputs")
    # the unshown number is dropped from every record, flagged and counted
    assert out["ledger"]["citations_unshown"] >= 1, name
    flags = [f for v in verdicts for f in v.get("flags") or []] + list(out.get("flags") or [])
    assert any(f.startswith("citation: ") and "cited unshown" in f for f in flags), name
    for c in records:
        if c.get("shown"):
            assert c["unshown"], (name, c)
        assert all(not n.isdigit() or int(n) > c.get("shown", 0) for n in c["unshown"]), (name, c)
        assert len(c["passages"]) <= c.get("shown", 0), (name, c)


def _check_verdict(name: str, out: dict[str, Any]) -> None:
    """One claim's verdict evidence: cited by its verdict's side or decider, apart from the rest."""
    records = list(out.get("citations") or [])
    cited = out["verdict_evidence"]
    assert "retrieved_evidence" in out, name
    assert cited == evidence_behind_verdict(records, out.get("label"), out.get("answers") or []
                                            )[:len(cited)]
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
    if len(cited) == len(evidence_behind_verdict(records, out.get("label"),
                                                 out.get("answers") or [])):  # not cut
        assert shown <= cited_keys | {passage_key(e) for e in out["retrieved_evidence"]}, name
    if any(c["passages"] for c in records if c.get("decides") or c["label"] == out.get("label")):
        assert cited, (name, "the verdict's side cited passages, yet the verdict rests on none")
    if shown:
        assert records, (name, "passages were shown but no reply's citations were recorded")


@pytest.mark.parametrize("name", NAMES)
async def test_uncited_verdicts_are_flagged_and_rest_on_nothing(name: str):
    out = await _run(name, "scripted:agree?cite=none")
    verdicts = _verdicts(out)
    records = [c for v in verdicts for c in v.get("citations") or []]
    if not any(c.get("shown") for c in records):
        pytest.skip(f"{name} showed its replies no passages with these inputs")
    assert all(v["verdict_evidence"] == [] for v in verdicts), name
    assert out["ledger"]["replies_uncited"] >= 1, name
    flags = [f for v in verdicts for f in v.get("flags") or []] + list(out.get("flags") or [])
    assert any(f.startswith("citation: ") and "uncited" in f for f in flags), name


async def test_self_ask_cites_the_passages_its_follow_ups_retrieved(scenario):
    """Self-Ask shows passages only once it asks a follow-up (the built-in scenarios never do):
    its final answer cites them under one numbering across the chain, an unshown number dropped."""
    from factdebate.testing.scenario_replies import disagree

    base = disagree()

    def respond(call):
        if getattr(call.schema, "__name__", "") == "FollowUpOut":
            asked = call.prompt.count("Follow up:")
            return {"follow_up": "Where is the Eiffel Tower?" if asked == 0 else ""}
        return base(call)

    spec = scenario(respond)
    graph = build_framework("self_ask").compile(checkpointer=InMemorySaver())
    out = await graph.ainvoke({"claim": CLAIM}, {"configurable": {"thread_id": "self-ask"}},
                              context=context_for("self_ask", spec
                                                  + "?cite=wrong"))
    _check_verdict("self_ask", out)
    final = [c for c in out["citations"] if c["decides"]]
    assert final and final[-1]["shown"] >= 1 and final[-1]["passages"], out["citations"]
    assert final[-1]["unshown"] and out["ledger"]["citations_unshown"] >= 1
    assert out["verdict_evidence"] and out["verdict_evidence"][0]["cited_by"] == ["answer"]
