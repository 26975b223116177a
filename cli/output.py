"""The CLI's two consoles and its one way to report a user error (shared by every command module)."""

from __future__ import annotations

import os
import sys

import typer
from rich.console import Console
from rich.text import Text

from factdebate.core.errors import FactDebateError
from factdebate.core.secrets_filter import redact

PIPED_WIDTH = 1000
"""Width of stdout when it is not a terminal (a pipe, a file): rich would otherwise assume 80
columns and cut wide tables (``compare``'s run names) into ellipses."""
out = Console() if Console().is_terminal else Console(width=PIPED_WIDTH)
err = Console(stderr=True)


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
