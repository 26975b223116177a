"""The results file: one JSON row per finished item, appended atomically; rows built from results.

``OUT/results.jsonl`` is append-only. Each row is written with one ``write`` + ``flush`` + ``fsync``
under a lock, so concurrent items never interleave and a row that was reported finished survives a
crash. A process killed mid-write can leave at most one truncated last line: readers ignore it and
``ResultsWriter`` cuts it off before appending again, so a resumed run never duplicates or corrupts
rows.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from factdebate.evaluation.formats import Item

RESULTS = "results.jsonl"


def read_results(path: Path) -> list[dict[str, Any]]:
    """Rows of a results file (a truncated last line is skipped); later rows of an id win."""
    if not path.is_file():
        return []
    rows: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # the write a killed process did not finish
        row = json.loads(line)
        rows[row["item_id"]] = row
    return list(rows.values())


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
        if path.exists():
            _cut_partial_line(path)
        self._fh = path.open("a", encoding="utf-8")
        self._lock = asyncio.Lock()

    def _write(self, line: str) -> None:
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())

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
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep), encoding="utf-8")
    os.replace(tmp, path)
    return len(rows) - len(keep)


def _gold(item: Item) -> dict[str, Any]:
    return {"label": item.gold_label, "answers": list(item.gold_answers),
            "wrong_answers": list(item.wrong_answers)}


def base_row(item: Item, *, framework: str, run_id: str, thread_id: str) -> dict[str, Any]:
    """The fields every row has, finished or failed."""
    return {"item_id": item.id, "dataset": item.dataset, "subset": item.subset,
            "framework": framework, "run_id": run_id, "thread_id": thread_id,
            "task": item.input.get("task"), "claim": item.input["claim"], "gold": _gold(item)}


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
        "cost_usd": cost_usd, "trace_id": trace_id,
        "prompt_version": result.get("prompt_version", ""), "wall_time_s": round(wall_time_s, 3),
        "attempts": attempts,
    }


def error_row(base: dict[str, Any], exc: BaseException, *, wall_time_s: float,
              attempts: int, trace_id: str) -> dict[str, Any]:
    """Row of an item whose run failed (recorded; the evaluation goes on)."""
    return {**base, "status": "error",
            "error": {"type": type(exc).__name__, "message": str(exc)[:1000]},
            "trace_id": trace_id, "wall_time_s": round(wall_time_s, 3), "attempts": attempts}
