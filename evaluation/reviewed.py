"""The reviewed claims of a run folder as a dataset whose gold labels are the reviewers'.

``factdebate export reviewed RUN_DIR --out FILE`` reads ``RUN_DIR/results.jsonl`` and writes one
record of the shared schema (docs/evaluation.md, "Dataset record schema") per finished row whose
output carries a reviewer's decision ``approve`` or ``edit``: ``label`` is the reviewer's label
(the machine's for approve, the new one for edit), so ``factdebate eval --dataset FILE`` measures
agreement with the reviewers as it measures any benchmark. Left out, and counted by reason:

* ``rejected`` - the reviewer refused the verdict: it carries no reviewer's label;
* ``unreviewed`` - no decision in the row (a run without the review step, or not yet resumed);
* ``error`` - an error row (no verdict);
* ``off_label_set`` - the reviewer's label is not on the row's label set.

Each record keeps the row's ``dataset`` when it is a registered dataset of the same label set
(so the file is read with that label set); a row of an ad-hoc file names the registered dataset
of its label set instead (:data:`DATASET_OF_TASK`), the original name kept in ``source``. The
record's ``review`` (decision, reviewer, time, machine label, what changed) and ``source`` (run,
item, framework, thread) are kept and not read by the loaders.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factdebate.core.errors import InputError, StorageError, storage_problem
from factdebate.core.labels import get_label_set
from factdebate.evaluation.results import RESULTS, read_results
from factdebate.evaluation.run_folder import RUN_FILE, read_run_record

PUBLISHED = ("approve", "edit")
"""Decisions whose label is the reviewer's."""
DECISIONS = (*PUBLISHED, "reject")
DATASET_OF_TASK = {"fever": "fever", "binary": "feverous", "averitec": "averitec",
                   "pubmedqa": "pubmedqa", "medqa": "medqa"}
"""The registered dataset a record of an ad-hoc file names, by label set (its loader reads the
record with that label set)."""
REVIEW_KEYS = ("decision", "reviewer", "at", "note", "machine_label", "changed")
CHECKPOINTS = "checkpoints.sqlite"
"""A run folder's checkpoint file (``eval --checkpointer sqlite``, the default)."""


@dataclass
class Selection:
    """What a run folder's rows gave: the usable ``(row, review)`` pairs and the rest counted."""

    kept: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    left_out: Counter[str] = field(default_factory=Counter)
    rows: int = 0

    def left_out_line(self) -> str:
        """``"3 left out: 2 rejected, 1 unreviewed"`` or ``"none left out"``."""
        total = sum(self.left_out.values())
        if not total:
            return "none left out"
        parts = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in sorted(
            self.left_out.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"{total} left out: {parts}"


def review_of(row: dict[str, Any]) -> dict[str, Any] | None:
    """The reviewer's decision a results row carries (``review``), or None."""
    review = row.get("review")
    return review if isinstance(review, dict) and review.get("decision") else None


def final_label(row: dict[str, Any], review: dict[str, Any]) -> str | None:
    """The label the reviewer stands behind: the edited one, else the row's final label."""
    change = (review.get("changed") or {}).get("label")
    if isinstance(change, list | tuple) and len(change) == 2 and change[1]:
        return str(change[1])
    label = review.get("label") or (row.get("prediction") or {}).get("label") \
        or review.get("machine_label")
    return str(label) if label else None


def select_reviewed(rows: list[dict[str, Any]], task: str = "fever") -> Selection:
    """The rows whose review is published (approve/edit, label on the row's label set)."""
    chosen = Selection(rows=len(rows))
    for row in rows:
        review = review_of(row)
        if row.get("status") != "ok":
            chosen.left_out["error"] += 1
        elif review is None:
            chosen.left_out["unreviewed"] += 1
        elif review["decision"] == "reject":
            chosen.left_out["rejected"] += 1
        elif review["decision"] not in PUBLISHED:
            chosen.left_out["unknown_decision"] += 1
        else:
            label = final_label(row, review)
            labels = get_label_set(str(row.get("task") or task))
            normal = labels.normalise(label) if label else None
            if normal is None:
                chosen.left_out["off_label_set"] += 1
            else:
                chosen.kept.append((row, {**review, "label": normal}))
    return chosen


def _dataset_name(row: dict[str, Any], task: str) -> str:
    from factdebate.evaluation.datasets import DATASETS

    name = str(row.get("dataset") or "")
    if name in DATASETS and DATASETS.get(name).task == task:
        return name
    return DATASET_OF_TASK.get(task, name or "reviewed")


def reviewed_record(row: dict[str, Any], review: dict[str, Any], task: str) -> dict[str, Any]:
    """One shared-schema record of a reviewed row (module doc)."""
    task = str(row.get("task") or task)
    return {
        "id": str(row["item_id"]), "dataset": _dataset_name(row, task),
        "task": "claim_verification", "claim": row["claim"], "label": review["label"],
        "review": {k: review.get(k) for k in REVIEW_KEYS},
        "source": {"run_id": row.get("run_id"), "item_id": row.get("item_id"),
                   "dataset": row.get("dataset"), "framework": row.get("framework"),
                   "thread_id": row.get("thread_id"),
                   "gold_label": (row.get("gold") or {}).get("label")},
    }


def read_run_rows(run_dir: Path, server: str | None = None
                  ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``run.json`` and the rows of a run folder, each with its reviewer's decision.

    A row written before its thread was reviewed (an eval run with ``review`` on records the
    verdict when the run stops for the reviewer) takes the decision, and the reviewer's label,
    rationale and evidence, from the thread's final state: on the LangGraph ``server`` the run
    used (``eval --server``; its thread ids are ``executors.server_thread_id`` of the rows'), else
    in the run's checkpoint file (``RUN_DIR/checkpoints.sqlite``) when it holds one.

    Raises:
        InputError: ``run_dir`` is not a run folder (one line naming the problem).
        BackendUnavailableError: ``server`` does not answer or refuses the key.
    """
    if not run_dir.is_dir():
        raise InputError(f"{run_dir} is not a run folder (no such directory)",
                         "name the --out folder of a factdebate eval run")
    if not (run_dir / RUN_FILE).is_file():
        raise InputError(f"{run_dir} is not a run folder (no {RUN_FILE})",
                         "name the --out folder of a factdebate eval run")
    record = read_run_record(run_dir)
    rows = read_results(run_dir / RESULTS)
    db = run_dir / CHECKPOINTS
    waiting = [str(r["thread_id"]) for r in rows if r.get("status") == "ok"
               and review_of(r) is None and r.get("thread_id")]
    if waiting and (server or db.is_file()):
        from factdebate.run.claims import run_async

        states = run_async(server_thread_states(server, waiting) if server
                           else thread_states(db, waiting))
        rows = [with_thread_review(r, states.get(str(r.get("thread_id")))) for r in rows]
    return record, rows


async def server_thread_states(url: str, threads: list[str]) -> dict[str, dict[str, Any]]:
    """Thread id -> final state values of an eval run's item threads on a LangGraph server
    (API key ``$FACTDEBATE_API_KEY`` or ``$LANGGRAPH_API_KEY``); threads it lacks left out."""
    import httpx
    from langgraph_sdk import get_client

    from factdebate.core.errors import BackendUnavailableError
    from factdebate.core.settings import mask_url
    from factdebate.evaluation.executors import server_thread_id

    key = os.environ.get("FACTDEBATE_API_KEY") or os.environ.get("LANGGRAPH_API_KEY")
    client = get_client(url=url, api_key=key)
    found: dict[str, dict[str, Any]] = {}
    for thread in threads:
        try:
            state = await client.threads.get_state(server_thread_id(thread))
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code in (404, 422):
                continue
            raise BackendUnavailableError(
                f"server {mask_url(url)} refused the state of thread {thread!r} (HTTP "
                f"{exc.response.status_code})", "check --server and FACTDEBATE_API_KEY") from exc
        except httpx.TransportError as exc:
            raise BackendUnavailableError(f"server {mask_url(url)} does not answer ({exc})",
                                          "check --server") from exc
        found[thread] = dict(state.get("values") or {})
    return found


def with_thread_review(row: dict[str, Any], values: dict[str, Any] | None) -> dict[str, Any]:
    """``row`` with the review of its thread's final state ``values`` (unchanged without one)."""
    if review_of(row) is not None or not values or not isinstance(values.get("review"), dict):
        return row
    prediction = {**(row.get("prediction") or {}), "label": values.get("label"),
                  "rationale": values.get("rationale", "")}
    evidence = values.get("verdict_evidence")
    return {**row, "review": values["review"], "prediction": prediction,
            **({"evidence": list(evidence)} if evidence is not None else {})}


async def thread_states(db: Path, threads: list[str]) -> dict[str, dict[str, Any]]:
    """Thread id -> final state values of the threads ``db`` holds (the others left out)."""
    from factdebate.run.claims import open_sqlite_saver

    found: dict[str, dict[str, Any]] = {}
    async with open_sqlite_saver(db) as saver:
        for thread in threads:
            saved = await saver.aget_tuple({"configurable": {"thread_id": thread,
                                                              "checkpoint_ns": ""}})
            if saved is not None:
                found[thread] = dict(saved.checkpoint.get("channel_values") or {})
    return found


def export_reviewed(run_dir: Path, out: Path, server: str | None = None) -> Selection:
    """Write the reviewed records of ``run_dir`` to ``out`` (JSON lines); returns the selection.
    ``server`` is the LangGraph server of an ``eval --server`` run (:func:`read_run_rows`).

    Raises:
        InputError: ``run_dir`` is not a run folder, or none of its rows has a published review
            (nothing is written).
        StorageError: ``out`` cannot be written.
    """
    record, rows = read_run_rows(run_dir, server)
    task = str(record.get("task") or "fever")
    chosen = select_reviewed(rows, task)
    if not chosen.kept:
        raise InputError(f"{run_dir}: no reviewed claim to export ({chosen.rows} row(s); "
                         f"{chosen.left_out_line()})",
                         "review the run's verdicts (Context review: true) first")
    lines = "".join(json.dumps(reviewed_record(row, review, task), ensure_ascii=False) + "\n"
                    for row, review in chosen.kept)
    write_text_atomic(out, lines)
    return chosen


def write_text_atomic(out: Path, text: str) -> None:
    """``text`` into ``out`` through a temporary file beside it (never half a file)."""
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"cannot write {out} ({storage_problem(exc) or exc.strerror})",
                           "choose a writable --out") from exc
