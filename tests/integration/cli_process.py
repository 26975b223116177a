"""The installed ``factdebate`` command run as a process of its own, for tests of what a user sees:
its exit code, its output and its one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FACTDEBATE = Path(sys.executable).parent / "factdebate"
"""The console script beside this Python."""


def run_cli(args: list[str], home: Path, *, timeout: float = 180,
            unset: Iterable[str] = ("LANGSMITH_TRACING",), env: dict[str, str] | None = None,
            **kwargs: Any) -> subprocess.CompletedProcess:
    """``factdebate ARGS`` with ``FACTDEBATE_HOME=home``, this process's environment without the
    variables in ``unset`` and with ``env``; output captured as text; ``kwargs`` go to
    :func:`subprocess.run` (``cwd``, ...)."""
    unset = set(unset)
    full = {k: v for k, v in os.environ.items() if k not in unset}
    full.update({"FACTDEBATE_HOME": str(home), **(env or {})})
    return subprocess.run([str(FACTDEBATE), *args], capture_output=True, text=True, env=full,
                          timeout=timeout, **kwargs)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    """The one ``error:`` line of a finished command (the test fails on none, several or a
    traceback)."""
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    return lines[0]
