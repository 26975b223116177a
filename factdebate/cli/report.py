"""Human-readable rendering of a verification result (``verify`` without ``--json``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table


def print_result(console: Console, result: dict[str, Any]) -> None:
    """Verdict, rationale, scores, evidence of the final round, ledger and flags."""
    console.print(Panel(
        f"[bold]{result['label'] or 'no verdict'}[/bold]  ({result['stopped_by']} after "
        f"{result['rounds']} round(s), {result['framework']})\n\n{result['rationale']}",
        title=result["claim"], expand=False,
    ))
    final = [t for t in result["turns"] if t["round"] == result["rounds"]]
    table = Table("agent", "label", "query", "evidence", title="Final round")
    for turn in sorted(final, key=lambda t: t["agent"]):
        evidence = "\n".join(f"{e['title']} ({e['source']})" for e in turn["evidence"]) or "-"
        table.add_row(turn["agent"], turn["label"] or "-", turn["query"] or "-", evidence)
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
    for flag in result["flags"]:
        console.print(f"[yellow]note:[/yellow] {flag}", highlight=False)
