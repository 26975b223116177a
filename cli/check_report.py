"""Terminal rendering of a checked text, and its live progress display.

The report shows the text with every sentence marked by its verdict (colour and a symbol, so it
reads without colour too), numbered citations after the sentences, the claims with their verdicts
and the numbered citation list. A sentence's citations are the passages its claims' verdicts
*cited*, each listed with the claims and stances that cite it; what the debates
retrieved without citing is listed apart ("Retrieved, not cited", titles only), with one line on
the citation checks. The progress display lists every claim as it is extracted and updates it
when its debate ends.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from factdebate.cli.report import citation_problems, print_notes, retrieved_line
from factdebate.core.readable import excerpt
from factdebate.evaluation.html_report import citing_claims, retrieved_not_cited

CLAIM_CHARS = 70
"""Characters of a claim shown in the live progress table (cut at a word)."""

STYLES = {"supported": "green", "refuted": "bold red", "unverifiable": "yellow",
          "no_verdict": "yellow", "skipped": "magenta", "not_check_worthy": "dim",
          "no_claim": "dim"}
MARKS = {"supported": "✓", "refuted": "✗", "unverifiable": "?", "no_verdict": "?",
         "skipped": "…", "not_check_worthy": "–", "no_claim": ""}


def marked_text(check: dict[str, Any]) -> Text:
    """The text with each sentence styled by its mark and followed by its citation numbers."""
    text, pos, out = check.get("text") or "", 0, Text()
    for s in check.get("sentences") or []:
        out.append(text[pos:s["start"]])
        mark = s.get("mark", "no_claim")
        symbol = MARKS.get(mark, "")
        out.append((f"{symbol} " if symbol else "") + text[s["start"]:s["end"]],
                   style=STYLES.get(mark, ""))
        if s.get("citations"):
            out.append("".join(f"[{n}]" for n in s["citations"]), style="cyan")
        pos = s["end"]
    out.append(text[pos:])
    return out


def print_check(console: Console, result: dict[str, Any]) -> None:
    """Verdict and counts, the marked text, the claims, the citations, the ledger and flags."""
    check = result.get("check") or {}
    counts = check.get("counts") or {}
    console.print(Text(f"{check.get('verdict', 'no verdict')} (label {result.get('label')}; "
                       f"verifier {check.get('framework')})", style="bold"))
    console.print(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()),
                  highlight=False)
    console.print()
    console.print(marked_text(check))
    console.print(Text("✓ supported  ✗ refuted  ? unverifiable  … skipped  – not check-worthy",
                       style="dim"))
    table = Table("#", "claim", "verdict", "rounds", "cites", title="Claims")
    uncited = uncited_claims(check)
    for c in check.get("claims") or []:
        verdict = c.get("label") or c.get("category", "").replace("_", " ")
        cites = " ".join(f"[{n}]" for n in c.get("citations", []))
        table.add_row(str(c["number"]), c["claim"], Text(str(verdict),
                      style=STYLES.get(c.get("category", ""), "")), str(c.get("rounds", "")),
                      Text("uncited", style="yellow") if c["number"] in uncited else cites)
    console.print(table)
    stances = citing_claims(check)
    if check.get("citations"):
        console.print(Text("Citations (the passages the claims' verdicts cite)", style="bold"))
    for cite in check.get("citations") or []:
        line = Text(f"[{cite['n']}] {cite.get('title')} ({cite.get('source')})")
        if stances.get(cite["n"]):
            line.append(" · " + ", ".join(stances[cite["n"]]), style="cyan")
        if cite.get("url"):
            line.append(f" {cite['url']}", style="blue")
        console.print(line)
    if any("retrieved" in c for c in check.get("claims") or []):
        console.print(retrieved_line(retrieved_not_cited(check)))
    line, problem = citation_problems(result, uncited_text(uncited))
    if line:
        console.print(Text(line, style="yellow" if problem else "dim"))
    ledger = result.get("ledger") or {}
    console.print(f"LLM calls {ledger.get('llm_calls', 0)}, tokens "
                  f"{ledger.get('prompt_tokens', 0)} in / {ledger.get('completion_tokens', 0)} "
                  f"out; thread {result.get('thread_id')}", highlight=False)
    turns = sum(len(c.get("turns") or []) for c in check.get("claims") or [])
    print_notes(console, result.get("flags") or [], turns=turns)


def uncited_claims(check: dict[str, Any]) -> list[int]:
    """Numbers of the debated claims with a verdict that cites no passage."""
    return [c["number"] for c in check.get("claims") or []
            if c.get("status") == "verify" and c.get("label") and not c.get("citations")]


def uncited_text(numbers: list[int]) -> str:
    """``claims 3, 5 have an uncited verdict`` ("" for none)."""
    if not numbers:
        return ""
    which = ", ".join(map(str, numbers))
    return (f"claim {which} has an uncited verdict" if len(numbers) == 1
            else f"claims {which} have an uncited verdict")


class CheckProgress:
    """Live per-claim progress on a console, fed with the graph's ``updates`` stream."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.sentences = 0
        self.extracted = 0
        self.claims: list[dict[str, Any]] = []
        self.results: dict[str, dict[str, Any]] = {}
        self.live = Live(self._render(), console=console, transient=True,
                         auto_refresh=False, redirect_stdout=False)

    def __enter__(self) -> CheckProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)
        self.console.print(self._render())  # the final state stays on screen

    def seed(self, values: dict[str, Any]) -> None:
        """State a resumed thread already holds."""
        self.sentences = len(values.get("sentences") or [])
        self.claims = list(values.get("claims") or [])
        self.results = dict(values.get("results") or {})
        self.extracted = self.sentences if self.claims else 0
        self.live.update(self._render(), refresh=True)

    def update(self, node: str, update: dict[str, Any] | None) -> None:
        """One node's update from ``stream_mode="updates"``."""
        update = update or {}
        if node == "split_text":
            self.sentences = len(update.get("sentences") or [])
        elif node == "extract_claims":
            self.extracted += 1
        elif node == "collect_claims":
            self.claims = list(update.get("claims") or [])
        elif node == "verify_claim":
            self.results.update(update.get("results") or {})
        self.live.update(self._render(), refresh=True)

    def _render(self) -> Group:
        head = Text(f"sentences {self.extracted}/{self.sentences} extracted", style="dim")
        if not self.claims:
            return Group(head)
        table = Table("#", "claim", "status", box=None, pad_edge=False)
        for n, c in enumerate(self.claims, start=1):
            result = self.results.get(c["key"])
            status = (result.get("label") or "no verdict") if result else (
                "debating…" if c["status"] == "verify" else c["status"].replace("_", " "))
            table.add_row(str(n), excerpt(c["claim"], CLAIM_CHARS), status)
        return Group(head, table)
