"""``aggregate_claims``: the text-level verdict from its claims' verdicts.

Marks every sentence with its claims' verdicts, numbers the cited evidence across the text and
counts the verdicts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.readable import excerpt
from factdebate.core.state import Evidence
from factdebate.nodes.check_text.state import (
    CheckTextContext,
    CheckTextState,
    category_of,
    text_label,
    text_verdict,
)

SNIPPET_CHARS = 300
"""Characters of a cited passage kept in the citation list (the debate keeps the full text)."""


def _evidence_key(e: Evidence) -> str:
    return e.get("url") or e.get("id") or e.get("title") or e.get("text", "")[:80]


def _sentence_mark(categories: list[str]) -> str:
    for mark in ("refuted", "unverifiable", "no_verdict", "skipped", "supported",
                 "not_check_worthy"):
        if mark in categories:
            return mark
    return "no_claim"


def aggregate_claims(state: CheckTextState, runtime: Runtime[CheckTextContext]) -> dict[str, Any]:
    """Per-claim verdicts and citations, per-sentence marks, counts and the text-level verdict."""
    results = state.get("results") or {}
    citations: dict[str, dict[str, Any]] = {}
    claims: list[dict[str, Any]] = []
    for n, entry in enumerate(state.get("claims") or [], start=1):
        result: dict[str, Any] = dict(results.get(entry["key"]) or {})
        category = (category_of(result["label"]) if result else
                    "skipped" if entry["status"] == "skipped" else "not_check_worthy")
        numbers = []
        for e in result.get("evidence", []):
            cite = citations.setdefault(_evidence_key(e), {
                "n": len(citations) + 1, "title": e.get("title", ""), "source": e.get("source", ""),
                "url": e.get("url", ""), "id": e.get("id", ""),
                "snippet": excerpt(e.get("text"), SNIPPET_CHARS)})
            numbers.append(cite["n"])
        claims.append({**entry, **result, "number": n, "category": category,
                       "citations": numbers})
    sentences = []
    for s in state.get("sentences") or []:
        own = [c for c in claims if s["index"] in c["sentences"]]
        sentences.append({**s, "mark": _sentence_mark([c["category"] for c in own]),
                          "claims": [c["number"] for c in own],
                          "citations": sorted({n for c in own for n in c["citations"]})})
    counts = Counter(c["category"] for c in claims)
    counts_out = {k: counts.get(k, 0) for k in ("supported", "refuted", "unverifiable",
                                                 "no_verdict", "skipped", "not_check_worthy")}
    counts_out |= {"claims": len(claims), "verified": len(results), "sentences": len(sentences)}
    verdict = text_verdict(counts_out)
    summary = (f"{verdict}: {counts_out['supported']} supported, {counts_out['refuted']} refuted, "
               f"{counts_out['unverifiable']} unverifiable"
               + (f", {counts_out['no_verdict']} without verdict" if counts_out["no_verdict"] else "")
               + f" of {len(results)} verified claim(s)"
               + (f", {counts_out['skipped']} skipped" if counts_out["skipped"] else ""))
    check = {"text": state["text"], "framework": runtime.context.framework, "verdict": verdict,
             "counts": counts_out, "sentences": sentences, "claims": claims,
             "citations": list(citations.values())}
    label = text_label(verdict, state.get("task") or "fever", counts_out)
    return {"check": check, "label": label, "rationale": summary,
            "round": max((c.get("rounds", 0) for c in claims), default=0),
            "stopped_by": "check_text", "claim": state["text"], "flags": merged_flags(claims)}


def merged_flags(claims: list[dict[str, Any]]) -> list[str]:
    """The verifiers' flags: one shared by several claims once, naming them; others prefixed."""
    where: dict[str, list[int]] = {}
    for c in claims:
        for flag in dict.fromkeys(c.get("flags") or []):
            where.setdefault(flag, []).append(c["number"])
    return [f"claim {numbers[0]}: {flag}" if len(numbers) == 1
            else f"{flag} (claims {', '.join(map(str, numbers))})"
            for flag, numbers in where.items()]
