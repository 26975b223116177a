"""The rich progress bar of an evaluation: items done / total, ETA, running accuracy and cost."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from factdebate.evaluation.metrics import correct


class EvalProgress:
    """Context manager around a rich ``Progress`` that folds in each finished row."""

    def __init__(self, title: str, *, total: int, rows: list[dict[str, Any]],
                 console: Console | None = None) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("{task.fields[stats]}"),
            console=console or Console(stderr=True), transient=False,
        )
        self.scored = self.right = self.errors = 0
        self.cost = 0.0
        self.priced = True
        for row in rows:
            self._fold(row)
        self.task = self.progress.add_task(title, total=total, completed=len(rows),
                                           stats=self.stats())

    def _fold(self, row: dict[str, Any]) -> None:
        ok = correct(row)
        if ok is None:
            self.errors += 1
        else:
            self.scored += 1
            self.right += int(ok)
        if row.get("status") == "ok":
            if row.get("cost_usd") is None:
                self.priced = False
            else:
                self.cost += float(row["cost_usd"])

    def stats(self) -> str:
        """``acc 0.650 · $0.0123 · 1 error``."""
        acc = f"acc {self.right / self.scored:.3f}" if self.scored else "acc -"
        cost = f"${self.cost:.4f}" if self.priced else "cost n/a"
        errors = f" · {self.errors} error(s)" if self.errors else ""
        return f"{acc} · {cost}{errors}"

    def add(self, row: dict[str, Any]) -> None:
        """Count one finished row."""
        self._fold(row)
        self.progress.update(self.task, advance=1, stats=self.stats())

    def __enter__(self) -> EvalProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
