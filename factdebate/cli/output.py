"""The CLI's two consoles and its one way to report a user error (shared by every command module)."""

from __future__ import annotations

import typer
from rich.console import Console

from factdebate.core.errors import FactDebateError

PIPED_WIDTH = 1000
"""Width of stdout when it is not a terminal (a pipe, a file): rich would otherwise assume 80
columns and cut wide tables (``compare``'s run names) into ellipses."""
out = Console() if Console().is_terminal else Console(width=PIPED_WIDTH)
err = Console(stderr=True)


def fail(exc: FactDebateError) -> None:
    """Print ``error: <problem>. <remedy>`` on one line and exit with the error's code."""
    one_line = " ".join(str(exc).split())
    err.print(f"[red]error:[/red] {one_line}", highlight=False, soft_wrap=True, markup=True)
    raise typer.Exit(exc.exit_code)
