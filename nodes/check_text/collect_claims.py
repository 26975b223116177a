"""``collect_claims``: merge a text's extracted claims, then fan the ones to verify out.

Identical claims (normalised text) are merged, text order is kept and the check-worthy claims over
``max_claims`` are marked as skipped. ``route_after_collect_claims`` sends each claim to verify as
one ``verify_claim`` task, so LangGraph saves its result as soon as it finishes and a resumed run
redoes only the claims that had not finished.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Send

from factdebate.nodes.check_text.extract_claims import claim_key
from factdebate.nodes.check_text.state import (
    CheckTextContext,
    CheckTextState,
    ClaimEntry,
    ClaimTask,
)


def collect_claims(state: CheckTextState, runtime: Runtime[CheckTextContext]) -> dict[str, Any]:
    """Distinct claims in text order; check-worthy ones over ``max_claims`` marked skipped."""
    entries: dict[str, ClaimEntry] = {}
    for c in sorted(state.get("extracted") or [], key=lambda c: c["sentence"]):
        key = claim_key(c["claim"])
        entry = entries.setdefault(key, ClaimEntry(
            key=key, claim=c["claim"], sentences=[], check_worthy=False, reason=c["reason"],
            status="not_check_worthy"))
        if c["sentence"] not in entry["sentences"]:
            entry["sentences"].append(c["sentence"])
        if c["check_worthy"] and not entry["check_worthy"]:
            entry["check_worthy"], entry["reason"] = True, c["reason"]
    limit, debated = runtime.context.max_claims, 0
    for entry in entries.values():
        if entry["check_worthy"]:
            entry["status"] = "verify" if debated < limit else "skipped"
            debated += 1
    skipped = sum(e["status"] == "skipped" for e in entries.values())
    flags = [f"{skipped} check-worthy claim(s) skipped: over max_claims={limit}"] if skipped else []
    return {"claims": list(entries.values()), "flags": flags}


def route_after_collect_claims(state: CheckTextState) -> list[Send] | Literal["aggregate"]:
    """One ``verify_claim`` branch per claim to verify; none -> straight to ``aggregate``."""
    sends = [Send("verify_claim", ClaimTask(key=c["key"], claim=c["claim"],
                                                task=state.get("task") or "fever"))
             for c in state.get("claims") or [] if c["status"] == "verify"]
    return sends or "aggregate"
