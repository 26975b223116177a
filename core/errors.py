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
from collections.abc import Iterator

from factdebate.core.secrets_filter import redact


class FactDebateError(RuntimeError):
    """Base class of errors shown to the user as one line: ``problem. remedy``.

    The text is redacted when the error is made (``factdebate.core.secrets_filter``): a provider's
    reply quoted in it (a 401 repeating the request's ``Authorization`` header) carries no key.
    """

    exit_code = 2

    def __init__(self, problem: str, remedy: str = "") -> None:
        problem, remedy = redact(problem), redact(remedy)
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


class UnsupportedDataError(BackendUnavailableError):
    """A checkpoint holds what this project never writes: a value naming a Python callable or a
    type outside the allow-list, pickle, or bytes that do not decode
    (``factdebate.core.checkpoint_serde``). Nothing in it was run; ``source`` names the file."""

    def __init__(self, problem: str, remedy: str = "", *, source: str = "") -> None:
        self.source = source
        super().__init__(problem, remedy)


class RunFaultError(BackendUnavailableError):
    """A backend (model server, Milvus) failed while a run was under way, after its retries:
    readable on the server, and on the CLI the run resumes from its checkpoint (``--resume``)."""


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
    for seen in exception_chain(exc):
        if isinstance(seen, OSError) and seen.errno in _STORAGE_ERRNOS:
            return os.strerror(seen.errno)
        text = str(seen).lower()
        for phrase in _STORAGE_TEXTS:
            if phrase in text:
                return phrase
    return ""


MAX_CHAIN = 64
"""How many exceptions :func:`exception_chain` yields at most."""


def exception_chain(exc: BaseException | None, limit: int = MAX_CHAIN) -> Iterator[BaseException]:
    """``exc`` and every exception it came from, each once: causes, contexts, group members.

    Every walk over ``__cause__``/``__context__`` in the project goes through here. A chain can
    refer back to itself: grpc's ``_InactiveRpcError``, under pymilvus' error for a Milvus port
    nothing listens on, is its own ``__context__`` (``eval --set milvus_uri=http://127.0.0.1:<closed
    port>`` spun at 100% CPU in a ``while`` loop). Exceptions already seen are skipped
    and at most ``limit`` are yielded. Order: ``exc``, then breadth first (its cause before its
    context, an exception group's members in order).
    """
    queue: list[BaseException] = [exc] if exc is not None else []
    seen: set[int] = set()
    while queue and len(seen) < limit:
        current = queue.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        nexts = [current.__cause__, current.__context__]
        if isinstance(current, BaseExceptionGroup):
            nexts.extend(current.exceptions)
        queue.extend(e for e in nexts if isinstance(e, BaseException) and id(e) not in seen)


class BudgetExceededError(FactDebateError):
    """A run used up the operator's per-run budget of model calls or tokens (``budget`` names
    which, ``env`` the variable that sets it; ``factdebate.core.budget``). The work done so far is
    checkpointed: resuming the run continues it with a new budget."""

    exit_code = 4

    def __init__(self, problem: str, remedy: str = "", *, budget: str = "", env: str = "") -> None:
        self.budget = budget
        self.env = env
        super().__init__(problem, remedy)
