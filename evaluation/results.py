"""The results file: one JSON row per finished item, appended atomically; rows built from results.

``OUT/results.jsonl`` is append-only. Each row is written with one ``write`` + ``flush`` + ``fsync``
under a lock, so concurrent items never interleave and a row that was reported finished survives a
crash. A process killed mid-write can leave at most one truncated last line: readers ignore it and
``ResultsWriter`` cuts it off before appending again, so a resumed run never duplicates or corrupts
rows.

Any other unreadable line (bad bytes, broken JSON, not a row) is damage, not a crash artefact:
:func:`read_results` refuses the file in one line naming it and the lines, and ``eval --resume
--repair`` (:func:`repair_results`) moves those lines to ``results.jsonl.damaged-<time>`` so their
items run again. A failed write (full disk) raises ``StorageError``; the run stops rather than
keep going with rows it cannot save.

A readable row that is not the run's - an item outside ``run.json``'s ``item_ids`` (a line pasted in
from another run), or an earlier row of an item that has a later one - is set aside by
:func:`set_aside_strays` when the run resumes: moved to ``results.jsonl.set-aside-<time>`` with one
warning naming the items and both files, so the progress line, ``summary.json``, the reports and
the evaluation browser all count the same rows.

A finished item whose tool calls failed (a retriever or search service still down after its
retries: nodes/retrieval.py and MERMAID's ``call_tool`` go on without that evidence) is not a
measurement of the framework: with ``eval --tool-faults error`` (the default) its row is an error
row of type ``ToolFault`` (:func:`tool_fault_row`) that keeps the verdict, ledger and flags for
inspection. Error rows are excluded from the metrics and rerun by ``--resume --retry-errors``,
which starts a ``ToolFault`` item's thread over (its finished checkpoint would otherwise be read
back, faults and all; ``evaluation/runner.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from factdebate.core.errors import InputError, StorageError, storage_problem
from factdebate.core.secrets_filter import redact
from factdebate.evaluation.formats import Item

RESULTS = "results.jsonl"
TOOL_FAULT = "ToolFault"
"""Error type of a finished item whose tool calls failed (:func:`tool_fault_row`)."""
TOOL_FAULT_MODES = ("error", "score")
"""``eval --tool-faults``: such an item's row is an error row, or scored as any finished item."""


def _row(line: bytes) -> dict[str, Any] | None:
    """A results row parsed from one line, or None when the line is not one."""
    try:
        row = json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is a ValueError too
        return None
    if not isinstance(row, dict) or not isinstance(row.get("item_id"), str) \
            or row.get("status") not in ("ok", "error"):
        return None
    return row


def _scan(path: Path) -> tuple[list[tuple[int, bytes, dict[str, Any] | None]], int]:
    """``(line number, raw line, row or None)`` per complete line, and the file's size."""
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]  # a truncated last line is the killed write
    lines = complete.split(b"\n")[:-1]
    return [(n, raw, _row(raw)) for n, raw in enumerate(lines, 1) if raw.strip()], len(data)


def read_results(path: Path) -> list[dict[str, Any]]:
    """Rows of a results file (a truncated last line is skipped); later rows of an id win.

    Raises:
        InputError: A complete line is not a row (the file was damaged); names the lines and
            the recovery (``--resume --repair``).
    """
    if not path.is_file():
        return []
    scanned, _ = _scan(path)
    bad = [n for n, _, row in scanned if row is None]
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise InputError(
            f"{path} is damaged: line(s) {shown} are not readable result rows",
            "rerun with --resume --repair to set those lines aside (into "
            f"{path.name}.damaged-<time>) and run their items again")
    rows: dict[str, dict[str, Any]] = {}
    for _, _, row in scanned:
        assert row is not None
        rows[row["item_id"]] = row
    return list(rows.values())


def _listed(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def set_aside_strays(path: Path, item_ids: list[str]) -> str:
    """Move the rows of ``path`` that are not the run's into ``<path>.set-aside-<time>``.

    Not the run's: a row of an item outside ``item_ids`` (the run's sample), and every row of an
    item but its last (:func:`read_results` keeps the last). Unreadable lines stay where they are
    (:func:`read_results` names them). Returns the warning to show, or ``""`` when nothing moved.
    """
    if not path.is_file():
        return ""
    scanned, _ = _scan(path)
    wanted = set(item_ids)
    last = {row["item_id"]: n for n, _, row in scanned if row is not None}
    keep: list[bytes] = []
    aside: list[bytes] = []
    foreign: list[str] = []
    repeated: list[str] = []
    for n, raw, row in scanned:
        if row is not None and row["item_id"] not in wanted:
            aside.append(raw)
            foreign.append(row["item_id"])
        elif row is not None and last[row["item_id"]] != n:
            aside.append(raw)
            repeated.append(row["item_id"])
        else:
            keep.append(raw)
    if not aside:
        return ""
    target = path.with_name(f"{path.name}.set-aside-{time.strftime('%Y%m%d-%H%M%S')}")
    with target.open("ab") as fh:  # two resumes in one second add to the same file
        fh.write(b"".join(raw + b"\n" for raw in aside))
        fh.flush()
        os.fsync(fh.fileno())
    _rewrite(path, b"".join(raw + b"\n" for raw in keep))
    why = []
    if foreign:
        unique = list(dict.fromkeys(foreign))
        why.append(f"item(s) {_listed(unique)} not in this run's sample (run.json item_ids)")
    if repeated:
        unique = list(dict.fromkeys(repeated))
        why.append(f"earlier row(s) of item(s) {_listed(unique)}, which have a later row (kept)")
    return (f"warning: {path}: set aside {len(aside)} row(s) into {target.name} - "
            f"{'; '.join(why)}; they are not counted")


def repair_results(path: Path) -> int:
    """Move unreadable lines of ``path`` into ``<path>.damaged-<time>``; returns how many moved."""
    if not path.is_file():
        return 0
    scanned, _ = _scan(path)
    bad = [raw for _, raw, row in scanned if row is None]
    if not bad:
        return 0
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    aside.write_bytes(b"".join(raw + b"\n" for raw in bad))
    _rewrite(path, b"".join(raw + b"\n" for _, raw, row in scanned if row is not None))
    return len(bad)


def _rewrite(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _cut_partial_line(path: Path) -> None:
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end != len(data):
        with path.open("r+b") as fh:
            fh.truncate(end)


class ResultsWriter:
    """Appends rows to ``results.jsonl``: one line, flushed and fsynced, per finished item."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            if path.exists():
                _cut_partial_line(path)
            self._fh = path.open("a", encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"cannot open {path} for writing ({storage_problem(exc) or exc})",
                               "choose a writable --out") from exc
        self._lock = asyncio.Lock()

    def _write(self, line: str) -> None:
        try:
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:  # full disk: a partial line is cut off by the next writer
            raise StorageError(
                f"cannot append to {self.path} ({storage_problem(exc) or exc.strerror}); the "
                "row was not saved", "free disk space, then rerun with --resume") from exc

    async def append(self, row: dict[str, Any]) -> None:
        """Write ``row`` as one line; returns once it is on disk."""
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        async with self._lock:
            await asyncio.to_thread(self._write, line)

    def close(self) -> None:
        """Close the file."""
        self._fh.close()


def drop_error_rows(path: Path) -> int:
    """Rewrite ``path`` without its error rows (``--retry-errors``); returns how many went."""
    rows = read_results(path)
    keep = [r for r in rows if r.get("status") == "ok"]
    _rewrite(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep).encode())
    return len(rows) - len(keep)


def _gold(item: Item) -> dict[str, Any]:
    gold = {"label": item.gold_label, "answers": list(item.gold_answers),
            "wrong_answers": list(item.wrong_answers)}
    if item.meta.get("gold_evidence") is not None:  # scored, never shown (evidence_metrics.py)
        gold["evidence"] = item.meta["gold_evidence"]
    return gold


def _citation_record(record: Any) -> Any:
    """A reply's citation record with its passages cut to their keys (id, title, url, source):
    the texts are in the row's ``evidence``/``retrieved`` already."""
    if not isinstance(record, dict):
        return record
    keys = []
    for p in record.get("passages") or []:
        if isinstance(p, dict):
            short = {k: p[k] for k in ("id", "title", "url", "source") if p.get(k)}
            keys.append(short or {"text": str(p.get("text") or "")[:80]})
    return {**record, "passages": keys}


def base_row(item: Item, *, framework: str, run_id: str, thread_id: str) -> dict[str, Any]:
    """The fields every row has, finished or failed."""
    row = {"item_id": item.id, "dataset": item.dataset, "subset": item.subset,
           "framework": framework, "run_id": run_id, "thread_id": thread_id,
           "task": item.input.get("task"), "claim": item.input["claim"], "gold": _gold(item)}
    if "gold_in_index" in item.meta:  # is its gold evidence in the index? (evaluation/ceiling.py)
        row["gold_in_index"] = item.meta["gold_in_index"]
    return row


def final_labels(turns: list[dict[str, Any]], rounds: int) -> dict[str, str | None]:
    """Each debater's label in the last round (MADKE's consistency is read from it)."""
    return {t["agent"]: t.get("label") for t in turns if t.get("round") == rounds}


def _contexts(turns: list[dict[str, Any]], rounds: int, limit: int = 2000) -> list[str]:
    seen: dict[str, str] = {}
    for turn in turns:
        if turn.get("round") == rounds:
            for ev in turn.get("evidence") or []:
                seen.setdefault(ev.get("id") or ev.get("text", ""),
                                f"{ev.get('title', '')}: {ev.get('text', '')}"[:limit])
    return list(seen.values())


def _cited(result: dict[str, Any]) -> dict[str, Any]:
    """The passages the verdict cites (``evidence``, scored against ``gold.evidence``),
    the other passages the run saw (``retrieved``) and the per-reply ``citations`` records;
    nothing for a result object without them."""
    if "evidence" not in result:
        return {}
    return {"evidence": list(result.get("evidence") or []),
            "retrieved": list(result.get("retrieved") or []),
            "citations": [_citation_record(c) for c in result.get("citations") or []]}


def _reviewed(result: dict[str, Any]) -> dict[str, Any]:
    """The reviewer's decision on the verdict (``review``: decision, reviewer, time, note,
    machine label, what changed), when the run had a review step; nothing otherwise."""
    review = result.get("review")
    return {"review": review} if review else {}


def ok_row(base: dict[str, Any], result: dict[str, Any], *, wall_time_s: float, attempts: int,
           trace_id: str, cost_usd: float | None) -> dict[str, Any]:
    """Row of a finished item from the framework's result object (``factdebate.run.claims``)."""
    turns = result.get("turns") or []
    rounds = int(result.get("rounds") or 0)
    return {
        **base, "status": "ok", "thread_id": result.get("thread_id") or base["thread_id"],
        "prediction": {"label": result.get("label"), "answers": result.get("answers") or [],
                       "rationale": result.get("rationale", "")},
        "rounds": rounds, "stopped_by": result.get("stopped_by", ""),
        "final_labels": final_labels(turns, rounds),
        "turn_labels": [[t.get("agent"), t.get("round"), t.get("label")] for t in turns],
        "scores": result.get("scores") or {}, "ledger": result.get("ledger") or {},
        "flags": result.get("flags") or [], "contexts": _contexts(turns, rounds),
        **_cited(result), **_reviewed(result), "cost_usd": cost_usd, "trace_id": trace_id,
        "prompt_version": result.get("prompt_version", ""), "wall_time_s": round(wall_time_s, 3),
        "attempts": attempts,
    }


def error_row(base: dict[str, Any], exc: BaseException, *, wall_time_s: float,
              attempts: int, trace_id: str) -> dict[str, Any]:
    """Row of an item whose run failed (recorded; the evaluation goes on)."""
    return {**base, "status": "error",
            "error": {"type": type(exc).__name__, "message": str(exc)[:1000]},
            "trace_id": trace_id, "wall_time_s": round(wall_time_s, 3), "attempts": attempts}


def failed_tools(row: dict[str, Any]) -> dict[str, int]:
    """``{tool: failed calls}`` of a finished row: its ledger's ``tool_faults`` of tools it called.

    A tool a model asked for that was never offered (MERMAID's executor naming an unknown tool) is
    a ``tool_faults`` entry without a call: the model's mistake, part of the measurement, left out.
    """
    ledger = row.get("ledger") or {}
    called = ledger.get("tool_calls") or {}
    return {str(name): int(n) for name, n in (ledger.get("tool_faults") or {}).items()
            if n and called.get(name)}


def tool_fault_row(row: dict[str, Any]) -> dict[str, Any] | None:
    """``row`` as a ``ToolFault`` error row when its tool calls failed, else None.

    The message names each tool with its failed calls and the first fault; it and the flags have
    credentials masked (``core/secrets_filter.redact``). The verdict and ledger stay in the row
    for inspection.
    """
    failed = failed_tools(row)
    if not failed:
        return None
    first = next((f for f in row.get("flags") or [] if isinstance(f, str) and any(
        f.startswith(f"tool fault: {name} ") for name in failed)), "")
    tools = ", ".join(f"{name} ({n} failed call{'s' if n != 1 else ''})"
                      for name, n in sorted(failed.items()))
    why = f" (first: {first.removeprefix('tool fault: ')})" if first else ""
    message = f"{tools}: the debate went on without that evidence, so the item is not scored{why}"
    return {**row, "status": "error", "flags": [redact(f) for f in row.get("flags") or []],
            "error": {"type": TOOL_FAULT, "message": redact(message)[:1000]}}
