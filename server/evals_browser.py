"""Evaluation run folders for the web page: list them, read their results, open a transcript.

The folders are the operator's: only folders under ``FACTDEBATE_RUNS_DIR`` (set in the server's
environment) are served, and only to holders of an API key (the routes in
:mod:`factdebate.server.webapp` check it). A run is named by its path relative to that root
(``toolmad_fever`` or ``toolmad_table3/fever_tool_mad``); absolute paths, ``..``, hidden
segments, backslashes and anything that resolves outside the root (a symlink) are refused. Every
file read from a run folder (``results.jsonl``, ``run.json``, ``summary.json``,
``checkpoints.sqlite``) must resolve inside the root too: a file linked to one outside it is treated
as absent. Messages name files relative to the root, never by their absolute server path.

Files are read in a worker thread: the server's event loop must not block (``langgraph dev``
turns blocking calls in it into errors).

What is served is bounded: ``FACTDEBATE_EVALS_MAX_BYTES`` (default 16 MiB) caps the result rows of
one reply (the rest is left off and ``truncated`` says so) and any one stored checkpoint value of a
transcript (a larger one is refused with 422 naming the limit, before it is decoded). Checkpoints
are read as data (``core/checkpoint_serde.py``): a value naming code, a row that is not a
checkpoint, a file without LangGraph's tables or a state the graphs never write is a 422
"unsupported data in RUN/checkpoints.sqlite (...)". Rows of items outside ``run.json``'s sample
are not served (``eval --resume`` sets them aside, ``evaluation/results.py``); ``strays`` counts
them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from factdebate.core.errors import FactDebateError
from factdebate.evaluation.checkpointers import SQLITE_FILE
from factdebate.evaluation.results import RESULTS, read_results
from factdebate.evaluation.run_folder import read_run_record

RUNS_DIR_ENV = "FACTDEBATE_RUNS_DIR"
MAX_BYTES_ENV = "FACTDEBATE_EVALS_MAX_BYTES"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 3
"""How deep under the root run folders are looked for (a config run nests one level)."""
MAX_ROWS = 20_000
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.=+-]{0,127}")
_RECORD_KEYS = ("framework", "dataset", "created_at", "started_at", "git_sha", "models",
                "dataset_version", "prompt_version", "limit", "seed")


class Refused(Exception):
    """A request the browser cannot serve (status and one-line detail for the client)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def max_bytes() -> int:
    """The operator's ``FACTDEBATE_EVALS_MAX_BYTES`` (a positive integer), else 16 MiB."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_BYTES
    return value if value > 0 else DEFAULT_MAX_BYTES


def runs_root() -> Path | None:
    """The operator's ``FACTDEBATE_RUNS_DIR`` (resolved), or None when it is not set."""
    raw = os.environ.get(RUNS_DIR_ENV, "").strip()
    return Path(raw).expanduser().resolve() if raw else None


def _root() -> Path:
    root = runs_root()
    if root is None:
        raise Refused(404, f"this server serves no evaluation runs; the operator sets "
                      f"{RUNS_DIR_ENV} to the folder that holds them")
    return root


def inside(root: Path, path: Path) -> Path | None:
    """``path`` when it is a regular file that resolves inside ``root`` (a symlink to a file
    outside is refused like an absent file), else None."""
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symlink loop
        return None
    return path if resolved.is_relative_to(root) and resolved.is_file() else None


def relative(text: str, root: Path | None = None) -> str:
    """``text`` with the runs root's absolute path taken out (paths shown relative to it)."""
    root = root or runs_root()
    if root is None:
        return text
    return text.replace(f"{root}{os.sep}", "").replace(str(root), ".")


def run_folder(name: str) -> Path:
    """The run folder ``name`` (relative to the root), checked to lie inside it.

    Raises:
        Refused: 400 for a name that is not a plain relative path, 404 when no run is there.
    """
    root = _root()
    parts = name.split("/")
    if not name or len(parts) > MAX_DEPTH or not all(_SEGMENT.fullmatch(p) for p in parts):
        raise Refused(400, f"run {name!r} is not a run folder name; use a path relative to "
                      "the runs folder, as the list shows it")
    folder = (root / name).resolve()
    if not folder.is_relative_to(root) or inside(root, folder / RESULTS) is None:
        raise Refused(404, f"no evaluation run {name!r} in the runs folder")
    return folder


def _record(root: Path, folder: Path) -> dict[str, Any]:
    """``run.json`` (when it is a file inside the root), else {}."""
    if inside(root, folder / "run.json") is None:
        return {}
    try:
        return read_run_record(folder)
    except (FactDebateError, OSError, ValueError):
        return {}  # a run without a readable run.json is still listed and served


def _metrics(summary: Any) -> dict[str, Any] | None:
    """The first run's metrics of a ``summary.json`` (``{"runs": [{"metrics": ...}]}``)."""
    runs = summary.get("runs") if isinstance(summary, dict) else None
    first = runs[0] if isinstance(runs, list) and runs and isinstance(runs[0], dict) else {}
    metrics = first.get("metrics")
    return metrics if isinstance(metrics, dict) else None


def _evidence(summary: Any) -> dict[str, Any] | None:
    """The first run's evidence figures of a ``summary.json``, each with its n:
    ``headline`` ({name, key, value, n}: FEVER score or page-level evidence F1), ``page`` and
    ``sentence`` ({precision, recall, f1, n}), ``fever`` ({score, n, level, ...}), ``retrieval``
    ({gold_retrieved, gold_cited, retrieved_not_cited, not_retrieved, n, level}), ``citations``
    ({uncited_verdicts, n_verdicts, hallucinated, n_rows, ...}), ``level``, ``notes``, and
    ``ceiling`` ({share, n, level, page, sentence}: the items whose gold evidence is in the
    index at all; every block above carries ``ceiling``/``ceiling_n`` beside its figures)."""
    runs = summary.get("runs") if isinstance(summary, dict) else None
    first = runs[0] if isinstance(runs, list) and runs and isinstance(runs[0], dict) else {}
    evidence = first.get("evidence")
    if not isinstance(evidence, dict):
        return None
    keys = ("headline", "level", "gold_kind", "n_with_gold", "n_without_gold", "page",
            "sentence", "fever", "hover", "retrieval", "citations", "notes", "ceiling")
    return {k: evidence.get(k) for k in keys}


def _index(record: dict[str, Any]) -> dict[str, Any] | None:
    """The index the run searched (``run.json`` ``index``, ``evaluation/index_identity.py``): its
    corpus by file name (no server path), SHA-256, passages, embedding model, build time,
    whether it is the demo corpus and whether a LangGraph server searched it (``searched_by``);
    None when the framework searches none or run.json is unreadable."""
    if not record:
        return None
    identity = record["index"] if "index" in record else {"status": "unrecorded"}
    if not isinstance(identity, dict):
        return None
    shown = {k: identity.get(k) for k in ("status", "corpus_sha256", "passages", "embedding_model",
                                          "built", "demo", "searched_by") if k in identity}
    if identity.get("corpus"):
        shown["corpus"] = Path(str(identity["corpus"])).name
    return shown


def _summary(root: Path, folder: Path) -> dict[str, Any]:
    record = _record(root, folder)
    summary: dict[str, Any] = {}
    try:
        if inside(root, folder / "summary.json") is not None:
            summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    return {"run": folder.relative_to(root).as_posix(),
            "framework": record.get("framework", ""), "dataset": record.get("dataset", ""),
            "metrics": _metrics(summary), "evidence": _evidence(summary),
            "index": _index(record),
            "modified": (folder / RESULTS).stat().st_mtime}


def _list(root: Path) -> dict[str, Any]:
    runs = []
    if root.is_dir():
        for results in root.glob("**/" + RESULTS):
            rel = results.parent.relative_to(root)
            if len(rel.parts) > MAX_DEPTH or any(p.startswith(".") for p in rel.parts):
                continue
            if results.parent.resolve().is_relative_to(root) and inside(root, results):
                runs.append(_summary(root, results.parent))
    runs.sort(key=lambda r: r["modified"], reverse=True)
    return {"root": root.name, "runs": runs}


async def list_runs() -> dict[str, Any]:
    """Every run folder under the root (newest first) with its framework, dataset, metrics."""
    return await asyncio.to_thread(_list, _root())


def _results(name: str) -> dict[str, Any]:
    folder = run_folder(name)
    root = _root()
    try:
        rows = read_results(folder / RESULTS)
    except FactDebateError as exc:
        raise Refused(422, relative(str(exc), root)) from None
    record = _record(root, folder)
    sample = record.get("item_ids")
    strays = 0
    if isinstance(sample, list):  # rows of other items: not the run's (evaluation/results.py)
        wanted = set(map(str, sample))
        kept = [r for r in rows if r["item_id"] in wanted]
        strays, rows = len(rows) - len(kept), kept
    served, size, limit = [], 0, max_bytes()
    for row in rows[:MAX_ROWS]:
        size += len(json.dumps(row, ensure_ascii=False, default=str))
        if size > limit:
            break
        served.append(row)
    return {"run": name, "record": {k: record[k] for k in _RECORD_KEYS if k in record},
            "rows": served, "truncated": len(served) < len(rows), "strays": strays,
            "transcripts": inside(root, folder / SQLITE_FILE) is not None}


async def results(name: str) -> dict[str, Any]:
    """The run's record (framework, dataset, models ...) and its result rows."""
    return await asyncio.to_thread(_results, name)


def _final_state(db: Path, thread_id: str) -> dict[str, Any] | None:
    from factdebate.core.checkpoint_serde import final_values

    # read as data: UnsupportedDataError, never code; TooLargeError above the cap
    return final_values(db, thread_id, max_bytes=max_bytes())


def _transcript(name: str, item: str) -> dict[str, Any]:
    folder = run_folder(name)
    try:
        row = next((r for r in read_results(folder / RESULTS) if r["item_id"] == item), None)
    except FactDebateError as exc:
        raise Refused(422, relative(str(exc), _root())) from None
    if row is None:
        raise Refused(404, f"run {name!r} has no item {item!r}")
    db = folder / SQLITE_FILE
    if inside(_root(), db) is None:  # absent, or a link to a database outside the root
        raise Refused(404, f"run {name!r} keeps no transcripts here ({SQLITE_FILE} is missing: "
                      "a --server run keeps them on that server's threads)")
    from factdebate.core.checkpoint_serde import TooLargeError

    try:
        values = _final_state(db, str(row.get("thread_id") or ""))
    except sqlite3.Error as exc:
        raise Refused(422, relative(f"cannot read {name}/{SQLITE_FILE} ({exc})")) from None
    except TooLargeError as exc:
        raise Refused(422, f"the transcript of item {item!r} in {name}/{SQLITE_FILE} holds a value "
                      f"of {exc.size:,} bytes, more than the {exc.limit:,} this server serves; the "
                      f"operator sets {MAX_BYTES_ENV}") from None
    except FactDebateError as exc:  # UnsupportedDataError: a value naming code, nothing run
        raise Refused(422, relative(str(exc).replace(str(db), f"{name}/{SQLITE_FILE}"))) from None
    if values is None:
        raise Refused(404, f"no transcript of item {item!r} in {name}/{SQLITE_FILE}")
    keys = ("claim", "turns", "scores", "label", "answers", "rationale", "round", "stopped_by",
            "flags", "ledger", "verdict_evidence", "retrieved_evidence", "citations")
    return {"run": name, "item": item, "row": row,
            "state": {k: values[k] for k in keys if k in values}}


async def transcript(name: str, item: str) -> dict[str, Any]:
    """An item's row and its final debate state (turns, scores, verdict) from the checkpoints."""
    return await asyncio.to_thread(_transcript, name, item)
