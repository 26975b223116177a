"""Human-readable rendering of a verification result (``verify`` without ``--json``).

The evidence behind the verdict is what the deciding replies *cited* (the result's
``evidence``: numbered, with who cited each passage and with which stance); passages that were only
retrieved are listed apart under "Retrieved, not cited" and never called cited. One line sums up
the citation checks (hallucinated ids dropped, uncited replies, an uncited verdict) from the ledger
and the ``citation: `` flags. The flags are notes, one readable line per kind with its counts
(``core/notes.summarise``); ``--json`` lists each flag as it was recorded. Passage text is an
excerpt cut at a word (``core/readable.excerpt``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from factdebate.core.citations import passage_key
from factdebate.core.notes import summarise
from factdebate.core.readable import excerpt

CITATION_FLAG = "citation: "
"""Prefix of the flags the citation checks raise (``nodes/citations.py``)."""

SNIPPET_CHARS = 100
"""Characters of a cited passage's text shown under its title."""

STANCE_STYLES = {"supports": "green", "refutes": "red", "not enough info": "yellow",
                 "conflicting": "yellow"}


def is_citation_flag(flag: str) -> bool:
    """A flag of the citation checks (``check`` prefixes it with ``claim N: ``)."""
    return flag.startswith(CITATION_FLAG) or f": {CITATION_FLAG}" in flag


def citation_problems(result: dict[str, Any], uncited_verdicts: str = "") -> tuple[str, bool]:
    """One line on the run's citation checks and whether it reports a problem.

    A verdict that rests on no cited passage is an *uncited verdict* (``uncited_verdicts`` names
    them for a checked text; a single verdict is judged from the result); ids a reply cited that
    its prompt never showed were dropped (hallucinated citations); labelled replies that cited
    nothing are counted. ``("", False)`` for a run without citation records (nothing was checked).
    """
    ledger = result.get("ledger") or {}
    cited = int(ledger.get("replies_cited") or 0)
    uncited = int(ledger.get("replies_uncited") or 0)
    unshown = int(ledger.get("citations_unshown") or 0)
    flags = [f for f in result.get("flags") or [] if is_citation_flag(f)]
    if not (cited or uncited or unshown or flags or uncited_verdicts):
        return "", False
    single = not result.get("check") and bool(result.get("label") or result.get("answers")) \
        and not result.get("evidence") and bool(result.get("retrieved"))
    parts = [uncited_verdicts] if uncited_verdicts else []
    if single:
        parts.append("uncited verdict (no reply behind it cited a passage it was shown)")
    parts.append(f"{cited} of {cited + uncited} labelled replies cited a passage")
    if unshown:
        parts.append(f"{unshown} cited id(s) never shown were dropped (hallucinated citations)")
    return "Citation checks: " + "; ".join(parts), bool(uncited_verdicts or single or uncited or unshown)


def cited_lines(evidence: Iterable[dict[str, Any]]) -> list[Text | Padding]:
    """The numbered passages behind a verdict: title (source), cited by, stance, URL, snippet."""
    lines = []
    for n, e in enumerate(evidence, start=1):
        line = Text(f"{n:>2}. ")
        line.append(str(e.get("title") or e.get("id") or "(untitled)"), style="bold")
        line.append(f" ({e.get('source') or '?'})", style="dim")
        if e.get("cited_by"):
            line.append(f" · cited by {', '.join(e['cited_by'])}")
        if e.get("stance"):
            line.append(f" · {e['stance']}", style=STANCE_STYLES.get(e["stance"], "cyan"))
        lines.append(line)
        if e.get("url"):
            lines.append(Padding(Text(str(e["url"]), style="blue"), (0, 0, 0, 4), expand=False))
        if e.get("text"):
            snippet = Text(excerpt(e["text"], SNIPPET_CHARS), style="dim")
            lines.append(Padding(snippet, (0, 0, 0, 4), expand=False))
    return lines



def retrieved_line(retrieved: list[dict[str, Any]]) -> Text:
    """``Retrieved, not cited (n): title; title; ...`` (titles only)."""
    titles = "; ".join(str(e.get("title") or e.get("id") or e.get("url") or "(untitled)")
                       for e in retrieved)
    line = Text(f"Retrieved, not cited ({len(retrieved)}): ", style="bold")
    line.append(titles or "none", style="" if titles else "dim")
    return line


def print_evidence(console: Console, result: dict[str, Any]) -> None:
    """"Evidence behind the verdict" (cited), "Retrieved, not cited", the citation-check line."""
    evidence, retrieved = result.get("evidence") or [], result.get("retrieved") or []
    if evidence or retrieved:
        console.print(Text(f"Evidence behind the verdict ({len(evidence)} cited)", style="bold"))
        for line in cited_lines(evidence):
            console.print(line)
        if not evidence:
            console.print(Text("   none: the verdict cites no passage", style="yellow"))
        console.print(retrieved_line(retrieved))
    else:
        console.print(Text("Evidence behind the verdict: none (no passage was retrieved)", style="dim"))
    line, problem = citation_problems(result)
    if line:
        console.print(Text(line, style="yellow" if problem else "dim"))


def _turn_evidence(turn: dict[str, Any]) -> str:
    cited = set(turn.get("cited") or [])
    return "\n".join(f"{'✓' if passage_key(e) in cited else ' '} {e.get('title')} ({e.get('source')})"
                     for e in turn.get("evidence") or []) or "-"


def print_result(console: Console, result: dict[str, Any]) -> None:
    """Verdict, rationale, the evidence behind it, the final round, scores, ledger and flags."""
    console.print(Panel(
        f"[bold]{result['label'] or 'no verdict'}[/bold]  ({result['stopped_by']} after "
        f"{result['rounds']} round(s), {result['framework']})\n\n{result['rationale']}",
        title=result["claim"], expand=False,
    ))
    print_evidence(console, result)
    final = [t for t in result["turns"] if t["round"] == result["rounds"]]
    table = Table("agent", "label", "query", "evidence (✓ cited by the turn)", title="Final round")
    for turn in sorted(final, key=lambda t: t["agent"]):
        table.add_row(turn["agent"], turn["label"] or "-", turn["query"] or "-",
                      Text(_turn_evidence(turn)))
    console.print(table)
    if result["scores"]:
        scores = Table("agent", "average scores", title="Scores")
        for agent, info in sorted(result["scores"].items()):
            avg = ", ".join(f"{k}={v:.2f}" for k, v in info["average"].items()) or "n/a"
            scores.add_row(agent, avg)
        console.print(scores)
    ledger = result["ledger"]
    tools = ", ".join(f"{k}={v}" for k, v in ledger.get("tool_calls", {}).items())
    console.print(f"LLM calls {ledger['llm_calls']}, tokens {ledger['prompt_tokens']} in / "
                  f"{ledger['completion_tokens']} out, tool calls: {tools or 'none'}; "
                  f"thread {result['thread_id']}")
    print_notes(console, result.get("flags") or [], turns=len(result.get("turns") or []))


def print_notes(console: Console, flags: list[str], *, turns: int | None = None) -> None:
    """The flags as notes, one readable line per kind with its counts (``core/notes``);
    ``--json`` lists every flag. ``turns`` is the run's count of debater turns."""
    lines = summarise(flags, turns=turns or None)
    for line in lines:
        console.print(_note(line))
    if len(lines) < len(flags):
        console.print(Text(f"({len(flags)} flags in all: --json lists each)", style="dim"))


def _note(text: str) -> Text:
    return Text.assemble(("note:", "yellow"), " ", text)  # a flag's [8] is text, not markup
