"""The integrity of an evaluation's ``--out`` folder: one writer, a trusted ``run.json``, safe resumes.

* **One writer per folder.** ``RunLock`` holds an ``flock`` on ``OUT/.lock`` (the file names the
  holder's pid) for the whole run: a second ``eval`` or ``--resume`` into the folder while the first
  runs is refused. The kernel drops the lock when its holder dies, so the lock of a killed run is
  stale by construction; the next run takes it over and says so. The file itself is never deleted
  (deleting it would let two processes lock two different files of the same name).
* **run.json** is written atomically (temporary file, ``fsync``, ``rename``, ``fsync`` of the
  folder) and read back strictly: an empty, truncated or foreign file is one error line naming it.
* **Resume compatibility.** A resume recomputes the record the current flags would write and
  compares what decides which items run and how they are scored: framework, dataset (name,
  version, task, data file SHA-256), seed, the Context, prompt version and the extra
  ``--metrics``/``--metric-model``. Any difference is refused, naming it. ``--limit`` may grow: the
  sample is prefix-stable (``evaluation/datasets.py``), so a larger ``--limit`` extends the run with
  the new items only; a smaller one is refused. The index the run searches is compared by what a
  search can find (corpus SHA-256, passages, embedding model, index kinds and parameters:
  ``evaluation/index_identity.py`` ``index_key``), so a run resumed over an index rebuilt from
  another corpus is refused. A change of ``--metrics`` is refused rather than
  measuring only the new rows (start a new ``--out`` to measure the finished rows differently).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from factdebate.core.errors import (
    FactDebateError,
    InputError,
    InUseError,
    StorageError,
    UnsupportedDataError,
    exception_chain,
    storage_problem,
)
from factdebate.evaluation.index_identity import index_change

RUN_FILE = "run.json"
LOCK_FILE = ".lock"
COMPARED = ("framework", "dataset", "dataset_version", "task", "data_sha256", "seed", "context",
            "prompt_version", "metrics", "metric_model", "index", "scoring", "tool_faults")
"""``run.json`` keys a resume must match (``limit`` is handled apart: it may grow)."""
_FLAG = {"framework": "--framework", "dataset": "--dataset", "dataset_version": "dataset version",
         "task": "task", "data_sha256": "data file (SHA-256)", "seed": "--seed",
         "context": "--model/--set settings", "prompt_version": "prompt version",
         "metrics": "--metrics", "metric_model": "--metric-model", "scoring": "--feverous-rule",
         "tool_faults": "--tool-faults"}


def storage_error(place: Path, exc: BaseException, what: str = "write") -> StorageError:
    """The one-line error of a place that cannot be written (full disk, read-only, a file ...)."""
    why = storage_problem(exc) or (exc.strerror if isinstance(exc, OSError) and exc.strerror
                                   else f"{type(exc).__name__}: {exc}")
    return StorageError(f"cannot {what} {place} ({why})",
                        "free disk space or choose a writable folder for --out, then rerun "
                        "(finished rows are kept; add --resume if the run had started)")


_DAMAGED_DB = ("file is not a database", "database disk image is malformed")


def run_store_fault(exc: BaseException) -> FactDebateError | None:
    """The run-stopping error for a fault of the run's own storage, or None for an item fault.

    A full disk, a damaged checkpoint database or checkpoints holding foreign data (a value naming
    code: ``UnsupportedDataError``) are not the item's failure: recording them as error rows would
    keep rows a later ``--resume`` trusts, so the run stops instead. The cause chain is walked by
    ``exception_chain`` (a chain that refers back to itself ends).
    """
    problem = storage_problem(exc)
    if problem:
        return StorageError(f"the run's files cannot be written ({problem}); the item in flight "
                            "was not recorded", "free disk space, then rerun with --resume")
    for seen in exception_chain(exc):
        if isinstance(seen, UnsupportedDataError):
            return seen
        if any(text in str(seen).lower() for text in _DAMAGED_DB):
            return StorageError(f"the checkpoint database is damaged ({seen})",
                                "rerun with --resume --repair: it is set aside and unfinished "
                                "items start over (finished rows are kept)")
    return None


def make_out_folder(out: Path) -> None:
    """Create ``out`` (and parents) or say in one line why it cannot be a run folder."""
    if out.exists() and not out.is_dir():
        raise StorageError(f"--out {out} exists and is not a folder",
                           "choose a folder path for --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(out, exc, "create the output folder") from exc


class RunLock:
    """Exclusive lock on a run folder for the life of the ``with`` block."""

    def __init__(self, out: Path) -> None:
        self.path = out / LOCK_FILE
        self.fd: int | None = None
        self.taken_over: str = ""
        """The pid of a killed run whose stale lock this one took over, if any."""

    def __enter__(self) -> RunLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise storage_error(self.path, exc, "create the lock file") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"process {holder}" if holder else "another process"
            raise InUseError(
                f"{self.path.parent} is in use by {who} (an eval or --resume is running there)",
                "wait for it to finish (or stop it), then rerun; or choose another --out") from exc
        old = _read_pid(fd)
        if old and old != str(os.getpid()):
            self.taken_over = old  # its holder died: flock would have refused a live one
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise storage_error(self.path, exc) from exc
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):  # a clean end leaves no pid: only a killed run does
                os.ftruncate(self.fd, 0)
            os.close(self.fd)
            self.fd = None


def _read_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the whole new one, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(json.dumps(data, indent=2, ensure_ascii=False))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise storage_error(path, exc) from exc


def remove_stale_temps(out: Path) -> None:
    """Delete ``.run.json.<pid>.tmp`` files of killed runs (called while holding the lock)."""
    for tmp in out.glob(f".{RUN_FILE}.*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()


def read_run_record(out: Path) -> dict[str, Any]:
    """``OUT/run.json``, or one line naming the damage and the recovery."""
    path = out / RUN_FILE
    remedy = ("rerun with --resume --repair and the run's original flags to rebuild it (the rows "
              "in results.jsonl are kept), or choose another --out")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is damaged (not UTF-8 at byte {exc.start})", remedy) from exc
    except OSError as exc:
        raise storage_error(path, exc, "read") from exc
    if not text.strip():
        raise InputError(f"{path} is damaged (empty file)", remedy)
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{path} is damaged (invalid JSON: {exc})", remedy) from exc
    needed = ("run_id", "framework", "item_ids")
    if not isinstance(record, dict) or any(k not in record for k in needed) \
            or not isinstance(record.get("item_ids"), list):
        raise InputError(f"{path} is damaged (not a run record: needs {', '.join(needed)})", remedy)
    return record


def differences(record: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """What the current flags change against the recorded run (``limit`` apart)."""
    diffs = []
    for key in COMPARED:
        if key not in record:
            continue  # a record from before the key existed
        if record[key] != fresh.get(key):
            if key == "context":
                fields = sorted(k for k in set(record[key]) | set(fresh[key])
                                if record[key].get(k) != fresh[key].get(k))
                diffs.append(f"settings {', '.join(fields)}")
            elif key == "data_sha256":
                diffs.append(f"the data file changed since the run started ({fresh.get('data_file')})")
            elif key == "index":  # what a search can find; a rebuild of the same corpus is not
                change = index_change(record[key], fresh.get(key))
                if change:
                    diffs.append(f"the index changed since the run started: {change}")
            else:
                diffs.append(f"{_FLAG[key]} {record[key]!r} -> {fresh.get(key)!r}")
    return diffs


def check_resume(record: dict[str, Any], fresh: dict[str, Any], out: Path) -> dict[str, Any]:
    """The record to continue with: ``record``, or it extended to a larger ``--limit``.

    Raises:
        InputError: Any difference that changes which items run or how they are scored.
    """
    diffs = differences(record, fresh)
    old_limit, new_limit = record.get("limit"), fresh.get("limit")
    old_ids, new_ids = record["item_ids"], fresh["item_ids"]
    if old_limit != new_limit and not diffs:
        if not set(old_ids) <= set(new_ids):
            shown = "all" if new_limit is None else new_limit
            was = "all" if old_limit is None else old_limit
            diffs.append(f"--limit {was} -> {shown} (a smaller sample than the run's; only a "
                         "larger --limit extends a run)")
    elif old_limit != new_limit:
        diffs.append(f"--limit {old_limit} -> {new_limit}")
    if diffs:
        raise InputError(f"{out} holds a run these flags do not match: {'; '.join(diffs)}",
                         "resume with the run's own flags (see its run.json), or choose another "
                         "--out for a new run")
    if old_limit == new_limit:
        return record
    extended = dict(record, limit=new_limit, item_ids=new_ids)
    extended["extensions"] = [*record.get("extensions", []),
                              {"from_limit": old_limit, "to_limit": new_limit,
                               "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}]
    return extended
