"""``review`` of a text check: a fact-checker's decision on each claim's verdict, in text order.

With the Context's ``review`` on, the verifiers run without their own review step and this node,
between ``verify_claim`` and ``aggregate``, asks for one decision per verified claim: one
``interrupt`` at a time (a claim's payload and resume value are those of ``nodes/review.py``,
``claim`` being the claim and ``framework`` the verifier), so a client resumes with a plain
``Command(resume=...)`` and never has several interrupts pending. LangGraph matches the
interrupts of one node by order: the node re-runs from its start on every resume and the decisions
already given are replayed. Each claim's result then carries its ``review`` (and the reviewer's
label, rationale and evidence on ``edit``), so ``aggregate`` counts the reviewed verdicts.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from factdebate.nodes.check_text.state import CheckTextContext, CheckTextState, ClaimResult
from factdebate.nodes.review import (
    allowed_labels,
    apply_decision,
    ask_reviewer,
    debate_summary,
    require_checkpointer,
    shown_passage,
)
from factdebate.tools.review_feedback import log_review_feedback


def claim_draft(result: ClaimResult) -> dict[str, Any]:
    """The reviewer's view of one claim's verdict (``draft`` of the review payload)."""
    return {
        "label": result.get("label"),
        "rationale": str(result.get("rationale") or ""),
        "evidence": [shown_passage(p) for p in result.get("evidence") or []],
        "summary": debate_summary(result.get("label"), int(result.get("rounds") or 0),
                                  str(result.get("stopped_by") or ""), result.get("turns") or [],
                                  result.get("scores") or {}),
        "scores": {agent: [dict(r) for r in rows]
                   for agent, rows in (result.get("scores") or {}).items()},
    }


def review_claims(state: CheckTextState, runtime: Runtime[CheckTextContext],
                  config: RunnableConfig) -> dict[str, Any]:
    """Each verified claim's verdict reviewed in text order when ``review`` is on."""
    ctx = runtime.context
    if not (ctx.review or state.get("review_on")):  # recorded: a resume without a Context
        return {}
    results = state.get("results") or {}
    keys = [c["key"] for c in state.get("claims") or [] if c["key"] in results]
    if not keys:
        return {}
    require_checkpointer(config)
    labels = allowed_labels(state.get("task") or ctx.label_set)
    reviewed: dict[str, ClaimResult] = {}
    for key in keys:
        result = results[key]
        draft = claim_draft(result)
        cited = list(result.get("evidence") or [])
        retrieved = list(result.get("retrieved") or [])
        ids = list(dict.fromkeys(str(p.get("id")) for p in [*cited, *retrieved] if p.get("id")))
        claim = next(c["claim"] for c in state.get("claims") or [] if c["key"] == key)
        decision = ask_reviewer(claim, ctx.framework, draft, labels, ids)
        record, update = apply_decision(decision, draft, cited, retrieved)
        new = dict(result)
        new.update({k: v for k, v in update.items()
                    if k in ("label", "rationale")})
        if "verdict_evidence" in update:
            new["evidence"], new["retrieved"] = update["verdict_evidence"], \
                update["retrieved_evidence"]
        new["review"] = record
        reviewed[key] = new  # type: ignore[assignment]
    # each decision as LangSmith feedback when tracing is on; a fault is a note, never raised
    notes = [n for r in reviewed.values() for n in log_review_feedback(config, r.get("review"))]
    return {"results": reviewed, "flags": notes}
