"""The CLI's two consoles and its one way to report a user error (shared by every command module).

Both consoles neutralise control characters in what they print (:class:`NeutraliseControlCodes`):
passages, titles, model replies and error texts reach the terminal as text, never as commands to
it; rich's own styling and cursor control (its control segments) pass unchanged.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import typer
from rich.console import Console, ConsoleOptions, RenderableType, RenderHook, RenderResult
from rich.segment import Segment
from rich.text import Text

from factdebate.core.control_chars import json_text, neutralise
from factdebate.core.errors import FactDebateError
from factdebate.core.secrets_filter import redact

PIPED_WIDTH = 1000
"""Width of stdout when it is not a terminal (a pipe, a file): rich would otherwise assume 80
columns and cut wide tables (``compare``'s run names) into ellipses."""


class _Neutralised:
    """A renderable whose text segments have their control characters made visible."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        segments: Iterator[Segment] = iter(console.render(self.renderable, options))
        for segment in segments:
            if segment.control:  # rich's own cursor movement (progress displays)
                yield segment
            else:
                yield Segment(neutralise(segment.text), segment.style)


class NeutraliseControlCodes(RenderHook):
    """Every renderable a console prints passes through :func:`neutralise` (tables, panels and
    markup included: the hook sees the rendered text, after markup became styles)."""

    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        """Wrap each renderable."""
        return [_Neutralised(r) for r in renderables]


def _console(**kwargs: Any) -> Console:
    console = Console(**kwargs)
    console.push_render_hook(NeutraliseControlCodes())
    return console


out = _console() if Console().is_terminal else _console(width=PIPED_WIDTH)
err = _console(stderr=True)


QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # huggingface_hub and transformers' "Loading weights"
    "TQDM_DISABLE": "1",                  # any other tqdm bar (sentence-transformers, ragas)
    "TRANSFORMERS_VERBOSITY": "error",
    "HF_HUB_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
"""Environment that keeps the libraries' loading output off the terminal (read at their import,
and inherited by evaluation worker processes). A value the user set is kept."""


def quiet_libraries(quiet: bool) -> None:
    """Hide (``quiet``) or leave alone the libraries' progress bars and warnings.

    Called by the ``--verbose`` switch before any command imports the libraries; those already
    imported (in-process callers, tests) are quietened through their public logging APIs too.
    """
    if not quiet:
        return
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


def fail(exc: FactDebateError) -> None:
    """Print ``error: <problem>. <remedy>`` on one line and exit with the error's code."""
    one_line = " ".join(redact(str(exc)).split())
    # printed as it is: "[/rag]" and ".[local]" are text, not rich markup
    err.print(Text.assemble(("error:", "red"), f" {one_line}"), highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


def print_outcome(result: dict[str, Any], as_json: bool,
                  report: Callable[[Console, dict[str, Any]], None]) -> None:
    """A run's result on stdout: JSON with ``--json`` (no control character raw, see
    ``core/control_chars.py``), else ``report``'s rendering on the :data:`out` console."""
    if as_json:
        print(json_text(result, default=str))
    else:
        report(out, result)
