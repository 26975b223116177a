"""Checks ``verify`` makes before it runs: the claim's bytes, writable places, a resumed thread.

* The claim is UTF-8 or an error: stdin is decoded strictly (Latin-1 bytes are refused with their
  offset instead of being dropped), and an argument Python could only decode with surrogate escapes
  (bytes that are not UTF-8 in ``argv``) is refused too.
* ``FACTDEBATE_HOME`` and ``--checkpoint-db`` must be usable: a file where a folder belongs, a
  folder where the database belongs, a read-only or full disk is one line naming it.
* ``--resume`` continues a thread only with the claim and framework it was started with.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from factdebate.core.errors import BackendUnavailableError, InputError, StorageError, storage_problem


def read_claim(raw: str) -> str:
    """The claim text: ``raw``, or stdin decoded as UTF-8 when ``raw`` is ``-``.

    Raises:
        InputError: Bytes that are not UTF-8 (their offset and value named).
    """
    if raw == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text-only stdin (embedding callers): already decoded
            return _no_surrogates(sys.stdin.read(), "stdin")
        data = stream.read()
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"stdin is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                "convert it first, e.g. iconv -f latin1 -t utf-8") from exc
    return _no_surrogates(raw, "the claim argument")


def _no_surrogates(text: str, where: str) -> str:
    for offset, ch in enumerate(text):
        if "\udc80" <= ch <= "\udcff":  # how Python keeps an undecodable byte of argv/stdin
            raise InputError(
                f"{where} is not UTF-8 text (byte 0x{ord(ch) - 0xDC00:02x} at character "
                f"{offset})", "pass UTF-8 text (convert it, e.g. iconv -f latin1 -t utf-8)")
    return text


def checkpoint_place(db: Path) -> Path:
    """``db`` after checking that a SQLite database can live there (its folder is created).

    Raises:
        StorageError: ``db`` is a folder, or its folder cannot be created or written.
    """
    if db.is_dir():
        raise StorageError(f"--checkpoint-db {db} is a folder",
                           "pass a file path, e.g. --checkpoint-db runs/checkpoints.sqlite")
    parent = db.parent
    if parent.exists() and not parent.is_dir():
        raise StorageError(f"{parent} is a file, so {db.name} cannot be created in it",
                           "set FACTDEBATE_HOME (or --checkpoint-db) to a folder path")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {parent} ({storage_problem(exc) or exc.strerror})",
                           "set FACTDEBATE_HOME (or --checkpoint-db) to a writable folder") from exc
    if not os.access(parent, os.W_OK) or (db.exists() and not os.access(db, os.W_OK)):
        raise StorageError(f"{db} is not writable (read-only folder or file system)",
                           "set FACTDEBATE_HOME (or --checkpoint-db) to a writable place")
    return db


def storage_failure(exc: BaseException, db: Path) -> StorageError | None:
    """The one-line error of a run stopped by a full or read-only disk (None for other faults)."""
    problem = storage_problem(exc)
    if not problem:
        return None
    return StorageError(f"cannot write the checkpoint database {db} ({problem})",
                        "free disk space or pass --checkpoint-db on a writable disk, then rerun "
                        "with --resume --thread-id")


async def check_thread(saver: Any, thread_id: str, framework: str, claim: str) -> None:
    """Refuse to resume ``thread_id`` with another claim or framework than it was started with.

    Raises:
        InputError: The thread's framework or claim differs (both named).
    """
    saved = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if saved is None:
        return  # run_claim says there is nothing to resume
    started_as = (saved.metadata or {}).get("framework")
    if started_as and started_as != framework:
        raise InputError(f"thread {thread_id!r} is a {started_as} run, not {framework}",
                         f"resume it with --framework {started_as}, or drop --resume")
    values = (saved.checkpoint or {}).get("channel_values") or {}
    stored = values.get("claim")
    if isinstance(stored, str) and stored.strip() != claim.strip():
        shown = stored if len(stored) <= 80 else stored[:77] + "..."
        raise InputError(f"thread {thread_id!r} verifies another claim ({shown!r})",
                         "resume it with that claim, or drop --resume to verify this one")


def interrupted_run(exc: Exception, thread_id: str, what: str = "the run") -> BackendUnavailableError:
    """A one-line error for a run stopped by a fault; its checkpoint lets it resume.

    A model-server or Milvus fault names the backend (``backend_error``); URLs in the text have
    their credentials masked.
    """
    from factdebate.core.faults import backend_error
    from factdebate.core.settings import mask_url

    known = backend_error(exc)
    if known is not None:
        return BackendUnavailableError(
            f"{known.problem}; {what} stopped, progress is checkpointed under thread {thread_id}",
            f"{known.remedy or 'fix the cause'}, then rerun with --resume --thread-id {thread_id}")
    detail = mask_url(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    stopped = "the model server is unreachable" if "connect" in detail.lower() else f"{what} stopped"
    return BackendUnavailableError(
        f"{stopped} ({detail}); progress is checkpointed under thread {thread_id}",
        f"fix the cause, then rerun with --resume --thread-id {thread_id}",
    )
