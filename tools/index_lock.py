"""One lock per index folder: readers share it, a build holds it alone.

The lock is an ``flock`` on the hidden sibling file ``.<name>.lock`` (beside the folder, not in
it, because a build replaces the folder by ``rename``). Retrievers and ``verify``/``eval`` hold it
shared for the life of the process; ``factdebate index`` holds it exclusively while it builds and
swaps, so it is refused while a server or an evaluation reads the index, and readers are refused
while a build runs. The kernel drops an ``flock`` when its process dies, so a killed holder never
leaves a stale lock behind; the file keeps the last builder's pid only to name it in messages.

One process keeps one descriptor per folder: a build in a process that already reads the folder
upgrades its shared lock (and downgrades it again afterwards) instead of deadlocking on itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from factdebate.core.errors import InUseError, StorageError

_held: dict[str, tuple[int, str]] = {}
"""Folder -> (descriptor, ``"shared"`` or ``"exclusive"``) held by this process."""
_guard = threading.Lock()


def lock_path(index_dir: str | Path) -> Path:
    """The lock file of ``index_dir``: ``<parent>/.<name>.lock``."""
    folder = Path(index_dir).expanduser().absolute()
    return folder.with_name(f".{folder.name}.lock")


def _open(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError(f"cannot create the index lock file {path} ({exc.strerror})",
                           "check that the index folder's parent is a writable folder") from exc


def hold_shared(index_dir: str | Path) -> None:
    """Take (once per process) the shared lock of ``index_dir``; kept until the process ends.

    Where the lock file cannot be created (a read-only mount) nothing is locked: no build can
    write there either.

    Raises:
        InUseError: ``factdebate index`` is building into ``index_dir`` right now.
    """
    key = str(Path(index_dir).expanduser().absolute())
    with _guard:
        if key in _held:
            return
        path = lock_path(key)
        try:
            fd = _open(path)
        except StorageError:
            return  # a read-only place: no build can replace the index there either
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise InUseError(f"index {key} is being built by {_holder(path)}",
                             "wait for `factdebate index` to finish, then rerun") from exc
        _held[key] = (fd, "shared")


@contextlib.contextmanager
def exclusive(index_dir: str | Path) -> Iterator[None]:
    """Hold ``index_dir``'s lock alone for the block (a build).

    Raises:
        InUseError: Another process reads or builds the index.
    """
    key = str(Path(index_dir).expanduser().absolute())
    path = lock_path(key)
    with _guard:
        mine = _held.get(key)
        fd = mine[0] if mine else _open(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if mine:  # a failed conversion may have dropped the shared lock: take it back
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            else:
                os.close(fd)
            raise InUseError(
                f"index {key} is in use by another process (a running server, verify, eval or "
                "index command)", "stop that process, or build into another --index-dir") from exc
        _held[key] = (fd, "exclusive")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        with _guard:
            if mine:
                fcntl.flock(fd, fcntl.LOCK_SH)  # back to what this process held before
                _held[key] = mine
            else:
                del _held[key]
                os.close(fd)  # closing drops the lock


def release(index_dir: str | Path) -> None:
    """Drop this process's shared lock of ``index_dir`` (tests; long-lived servers on shutdown)."""
    key = str(Path(index_dir).expanduser().absolute())
    with _guard:
        held = _held.pop(key, None)
    if held:
        os.close(held[0])


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="utf-8").strip()
    except OSError:
        pid = ""
    return f"process {pid}" if pid.isdigit() else "another process"
