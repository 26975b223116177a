"""Text blocks that go into prompts: evidence (delimited as data), opponents, history, scores."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from factdebate.core.state import Evidence, RoundScore, Turn

MAX_PASSAGE_CHARS = 1200
"""Passages are cut to this many characters in prompts (oversized documents cannot crowd out the
instructions; the embedded model's context is small)."""

MAX_EVIDENCE_CHARS = 20_000
"""Retrieved passages are stored cut to this many characters: a tool that returns a 5 MB page
would otherwise copy it into every checkpoint, results file and scoring prompt."""

_TAG = re.compile(r"</?\s*document[^>]*>", re.IGNORECASE)


@lru_cache(maxsize=4096)  # a passage is shown in several prompts of a claim (rounds, judge)
def _clean(text: str, limit: int = MAX_PASSAGE_CHARS) -> str:
    text = _TAG.sub(" ", text or "")  # a document cannot close its own delimiter
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def clip_evidence(evidence: Sequence[Evidence]) -> tuple[list[Evidence], int]:
    """Passages with texts cut to ``MAX_EVIDENCE_CHARS``, and how many had to be cut."""
    out: list[Evidence] = []
    cut = 0
    for e in evidence:
        text = e.get("text") or ""
        if len(text) > MAX_EVIDENCE_CHARS:
            cut += 1
            e = Evidence(**{**e, "text": text[: MAX_EVIDENCE_CHARS - 3] + "..."})  # type: ignore[typeddict-item]
        out.append(e)
    return out, cut


def render_evidence(evidence: Sequence[Evidence], numbers: Sequence[int] | None = None) -> str:
    """Numbered passages inside ``<document>`` tags; a note when there are none.

    Passages are numbered 1..n unless ``numbers`` gives each one's number (a judge's history shows
    every passage of the debate under one number: ``nodes/citations.Shown``). Replies cite these
    numbers."""
    if not evidence:
        return "(no documents were retrieved)"
    nums = list(numbers) if numbers is not None else list(range(1, len(evidence) + 1))
    return "\n".join(
        f'<document n="{i}" title="{_clean(e["title"], 200)}">{_clean(e["text"])}</document>'
        for i, e in zip(nums, evidence, strict=True)
    )


def render_options(options: dict[str, str] | None) -> str:
    """Multiple-choice options, one per line ("" for claim tasks)."""
    if not options:
        return ""
    return "Options:\n" + "\n".join(f"{k}. {v}" for k, v in sorted(options.items())) + "\n"


def render_opponents(turns: Sequence[Turn]) -> str:
    """The other agents' answers of one round."""
    if not turns:
        return "(none)"
    return "\n".join(
        f"- {t['agent']} agent: {t['label'] or 'no label'} - {_clean(t['answer'], 800)}"
        for t in turns
    )


def render_history(turns: Sequence[Turn], number: Callable[[Evidence], int] | None = None) -> str:
    """The whole debate, round by round, with each agent's query, evidence and answer.

    ``number`` gives each passage its number across the whole history (``Shown.add``), so a judge
    can cite a passage that two agents retrieved under one number."""
    lines: list[str] = []
    for round_ in sorted({t["round"] for t in turns}):
        lines.append(f"Round {round_}:")
        for t in sorted((t for t in turns if t["round"] == round_), key=lambda t: t["agent"]):
            lines.append(f"* {t['agent']} agent (query: {t['query'] or '-'})")
            nums = [number(e) for e in t["evidence"]] if number is not None else None
            lines.append(f"  evidence: {render_evidence(t['evidence'], nums)}")
            lines.append(f"  answer: {t['label'] or 'no label'} - {_clean(t['answer'], 800)}")
    return "\n".join(lines)


def render_debate(turns: Sequence[Turn], number: Callable[[Evidence], int]) -> str:
    """The whole debate, round by round, each agent's passages by their numbers only.

    For a prompt that lists every passage of the debate once, under the numbers ``number`` gives
    (``Shown.add``; the judge of ``prompts/tool_mad``): a passage several turns retrieved is not
    repeated (a 3-round Tool-MAD judge prompt: ~2,200 -> ~900 tokens)."""
    lines: list[str] = []
    for round_ in sorted({t["round"] for t in turns}):
        lines.append(f"Round {round_}:")
        for t in sorted((t for t in turns if t["round"] == round_), key=lambda t: t["agent"]):
            nums = ", ".join(f"[{number(e)}]" for e in t["evidence"]) or "none"
            lines.append(f"* {t['agent']} agent (query: {t['query'] or '-'}; documents: {nums})")
            lines.append(f"  answer: {t['label'] or 'no label'} - {_clean(t['answer'], 800)}")
    return "\n".join(lines)


def average_scores(scores: dict[str, list[RoundScore]]) -> dict[str, dict[str, float]]:
    """Per agent, the mean of every score key over the rounds that have a value for it."""
    out: dict[str, dict[str, float]] = {}
    for agent, rows in scores.items():
        sums: dict[str, list[float]] = {}
        for row in rows:
            for key, value in row.items():
                if key != "round" and isinstance(value, (int, float)):
                    sums.setdefault(key, []).append(float(value))
        out[agent] = {k: round(sum(v) / len(v), 4) for k, v in sums.items()}
    return out


def render_scores(averages: dict[str, dict[str, float]]) -> str:
    """Score averages for the judge ("" when scoring is off)."""
    if not averages:
        return ""
    lines = ["Average scores over the rounds:"]
    for agent, vals in sorted(averages.items()):
        shown = ", ".join(f"{k}={v:.2f}" for k, v in sorted(vals.items())) or "not available"
        lines.append(f"- {agent} agent: {shown}")
    return "\n".join(lines)
