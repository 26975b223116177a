"""Precise, user-facing errors.

Every error a user can cause carries the problem *and* the remedy, so the CLI can print one line and
exit non-zero without a traceback.

The base class is a ``RuntimeError`` and the errors about what a caller sent (``InputError``,
``ConfigError``) are also ``ValueError``s: the LangGraph server (langgraph-api's ``serde``) shows a
run error's message to SDK and Studio clients only for such built-in types and replaces every other
exception's with "An internal error occurred", so these are the types that reach users readably.
No code path catches ``ValueError``/``RuntimeError`` around project code to mean something else.
"""

from __future__ import annotations

import errno
import os


class FactDebateError(RuntimeError):
    """Base class of errors shown to the user as one line: ``problem. remedy``."""

    exit_code = 2

    def __init__(self, problem: str, remedy: str = "") -> None:
        self.problem = problem
        self.remedy = remedy
        super().__init__(f"{problem}. {remedy}".strip() if remedy else problem)


class InputError(FactDebateError, ValueError):
    """The user's input (claim, file, flag) is invalid."""


class ConfigError(FactDebateError, ValueError):
    """An unknown name (framework, model, backend) or a missing setting such as an API key."""


class SettingsRefused(ConfigError):
    """A server client's run tried to set something only the operator may (``field`` names it):
    an operator-only Context field, an unknown field, or a model spec not on the allow-list."""

    def __init__(self, problem: str, remedy: str = "", *, field: str = "") -> None:
        self.field = field
        super().__init__(problem, remedy)


class BackendUnavailableError(FactDebateError):
    """A model server, search API or index cannot be reached or opened."""

    exit_code = 3


class IndexDamagedError(BackendUnavailableError):
    """An index exists but is unreadable or incomplete: a fault, never an empty result."""


class StorageError(FactDebateError):
    """A place the run writes to is full, read-only or not a folder; nothing half written is kept."""

    exit_code = 5


class InUseError(FactDebateError):
    """Another running process holds the folder (an ``--out`` run folder or an index)."""

    exit_code = 6


_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM}
_STORAGE_TEXTS = ("database or disk is full", "no space left on device", "disk quota exceeded",
                  "file too large", "read-only file system", "readonly database")


def storage_problem(exc: BaseException | None) -> str:
    """What is wrong with the place being written (full, read-only ...), or ``""``.

    Looks through the cause chain: SQLite says "database or disk is full", tantivy and Milvus
    wrap the OS error in their own exception types.
    """
    seen, hops = exc, 0
    while seen is not None and hops < 10:
        if isinstance(seen, OSError) and seen.errno in _STORAGE_ERRNOS:
            return os.strerror(seen.errno)
        text = str(seen).lower()
        for phrase in _STORAGE_TEXTS:
            if phrase in text:
                return phrase
        seen, hops = seen.__cause__ or seen.__context__, hops + 1
    return ""
