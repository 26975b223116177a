"""Precise, user-facing errors.

Every error a user can cause carries the problem *and* the remedy, so the CLI can print one line and
exit non-zero without a traceback.
"""

from __future__ import annotations


class FactDebateError(Exception):
    """Base class of errors shown to the user as one line: ``problem. remedy``."""

    exit_code = 2

    def __init__(self, problem: str, remedy: str = "") -> None:
        self.problem = problem
        self.remedy = remedy
        super().__init__(f"{problem}. {remedy}".strip() if remedy else problem)


class InputError(FactDebateError):
    """The user's input (claim, file, flag) is invalid."""


class ConfigError(FactDebateError):
    """An unknown name (framework, model, backend) or a missing setting such as an API key."""


class BackendUnavailableError(FactDebateError):
    """A model server, search API or index cannot be reached or opened."""

    exit_code = 3
