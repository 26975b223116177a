"""The rich progress display of an index build: validating (bytes), then embedding (passages).

Shown by ``factdebate index`` and by ``eval`` when it indexes a data folder's corpus
(``evaluation/index_identity.py``).
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

STAGES = {"validate": "validating corpus", "embed": "embedding + indexing passages"}


class IndexProgress:
    """A ``progress(stage, done, total)`` callback (``tools/indexing.py``) drawing one bar per stage."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> IndexProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.progress.stop()

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Advance ``stage`` to ``done`` of ``total``."""
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(STAGES.get(stage, stage), total=total)
        self.progress.update(self.tasks[stage], completed=done, total=total)
