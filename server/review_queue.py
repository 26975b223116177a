"""The review queue: runs that stopped at the ``review`` node (nodes/review.py), and their resume.

Two JSON routes of the web page (:mod:`factdebate.server.webapp`), both for the caller's key:

* ``GET /app/api/reviews?limit=&offset=``: the threads waiting for review that the caller may
  review, oldest first: each thread's id, owner, created and updated times and its review
  interrupt's payload (claim, framework, draft, labels, error). ``limit`` is 1 to
  :data:`MAX_LIMIT` (default :data:`DEFAULT_LIMIT`), ``offset`` 0 to :data:`MAX_OFFSET`;
  ``total`` counts the whole queue (at most :data:`SCAN_CAP` threads per owner are looked at).
* ``GET /app/api/reviews/{thread_id}``: one thread's entry (409 when it does not wait for review);
* ``POST /app/api/reviews/{thread_id}`` with the resume value ``{"decision", "label",
  "rationale", "evidence_ids", "reviewer", "note"}``: the shape is checked here (422 naming the
  field; the node checks it again), the run is resumed with ``Command(resume=value)`` and the
  answer is its outcome (:func:`outcome`): ``done`` with the final ``label`` and ``review``,
  ``next`` (a text check's next claim waits), ``waiting`` with the node's ``error`` (it refused
  the value and asks again), or ``error`` with the run's failure.

Who may review what: the owner of a thread (``metadata.owner``, stamped by
:mod:`factdebate.server.auth`) and, when the operator groups identities into teams
(``FACTDEBATE_TEAMS``, :func:`factdebate.server.identities.load_teams`), the owner's teammates.
A thread anyone else names is "not found" (404), exactly as a missing one: its existence never
shows. The server's in-process client (:mod:`factdebate.server.loopback`) reads the threads and
starts the resume, so the ownership check is this module's: every read and write here first
checks the owner against the caller's reviewers' set. The resumed run is stamped with the
thread's owner (its runs stay the owner's) and ``reviewed_by`` the caller. One decision at a
time per thread: a second one while the first is applied is 409 (in this process by a lock, across
replicas by langgraph-api's refusal of a second run on a busy thread).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Collection, Mapping
from typing import Any

from factdebate.nodes.review import DECISIONS, MAX_NOTE_CHARS, MAX_REVIEWER_CHARS, RESUME_KEYS

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
MAX_OFFSET = 10_000
SCAN_CAP = 1000
"""Interrupted threads looked at per owner when the queue is listed."""
PAGE = 100
"""Threads per search of the server's own API."""
MAX_LABEL_CHARS = 200
MAX_RATIONALE_CHARS = 20_000
MAX_EVIDENCE_IDS = 200
MAX_EVIDENCE_ID_CHARS = 500
OWNER = "owner"
FIELDS = ("thread_id", "created_at", "updated_at", "metadata", "status", "interrupts")
"""What the queue reads of a thread (its values may be large and are not shown)."""
_DECIDING: dict[str, asyncio.Lock] = {}
"""Threads a decision is being applied to in this process: a second one at once is 409."""
_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                   r"[0-9a-fA-F]{12}")


class Refused(Exception):
    """A request the queue refuses: HTTP status and a one-line detail."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def not_found(thread_id: str) -> Refused:
    """The answer for a thread that is missing or not the caller's to review (never 403)."""
    return Refused(404, f"Thread {thread_id} not found")


def check_thread_id(thread_id: str) -> str:
    """``thread_id`` when it is a UUID (with or without dashes), lower-cased.

    Raises:
        Refused: 422 naming ``thread_id``.
    """
    if not isinstance(thread_id, str) or not _UUID.fullmatch(thread_id):
        raise Refused(422, "thread_id: not a thread id (a UUID)")
    return thread_id.lower()


def _int_param(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise Refused(422, f"{name}: a whole number from {low} to {high}, got {raw[:40]!r}") from None
    if not low <= value <= high:
        raise Refused(422, f"{name}: a whole number from {low} to {high}, got {value}")
    return value


def page_params(params: Mapping[str, str]) -> tuple[int, int]:
    """``(limit, offset)`` of a queue listing's query string.

    Raises:
        Refused: 422 naming the parameter out of range or not a number.
    """
    return (_int_param(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
            _int_param(params, "offset", 0, 0, MAX_OFFSET))


def review_payload(thread: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``kind: review`` interrupt payload a thread waits on, or None.

    langgraph-api keeps a thread's pending interrupts as ``{task_id: [{"value", "id"}, ...]}``
    in its ``interrupts`` field."""
    if thread.get("status") != "interrupted":
        return None
    pending = thread.get("interrupts") or {}
    groups = pending.values() if isinstance(pending, Mapping) else [pending]
    for group in groups:
        for item in group if isinstance(group, list) else [group]:
            value = item.get("value") if isinstance(item, Mapping) else None
            if isinstance(value, Mapping) and value.get("kind") == "review":
                return dict(value)
    return None


def queue_item(thread: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of the queue: the thread and what the reviewer sees."""
    draft = payload.get("draft") if isinstance(payload.get("draft"), Mapping) else {}
    return {
        "thread_id": str(thread.get("thread_id")),
        "owner": str((thread.get("metadata") or {}).get(OWNER) or ""),
        "created_at": _time(thread.get("created_at")),
        "updated_at": _time(thread.get("updated_at")),
        "claim": str(payload.get("claim") or ""),
        "framework": str(payload.get("framework") or ""),
        "draft": {"label": draft.get("label"), "rationale": str(draft.get("rationale") or ""),
                  "evidence": list(draft.get("evidence") or []),
                  "summary": str(draft.get("summary") or ""),
                  "scores": dict(draft.get("scores") or {})},
        "labels": [str(x) for x in payload.get("labels") or []],
        "error": str(payload.get("error") or ""),
    }


def _time(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value or "")


async def list_queue(client: Any, reviewers_of: Collection[str], limit: int,
                     offset: int) -> dict[str, Any]:
    """The queue of the owners ``reviewers_of`` (the caller and their teammates), oldest first,
    from ``offset``, at most ``limit`` items; ``total`` counts them all."""
    items: list[dict[str, Any]] = []
    for owner in sorted(set(reviewers_of)):
        seen = 0
        while seen < SCAN_CAP:
            batch = await client.threads.search(
                metadata={OWNER: owner}, status="interrupted", limit=min(PAGE, SCAN_CAP - seen),
                offset=seen, sort_by="created_at", sort_order="asc", select=list(FIELDS))
            for thread in batch:
                # the search filters by owner; checked again, as the resume checks it
                if (thread.get("metadata") or {}).get(OWNER) != owner:
                    continue
                payload = review_payload(thread)
                if payload is not None:
                    items.append(queue_item(thread, payload))
            seen += len(batch)
            if len(batch) < PAGE:
                break
    items.sort(key=lambda item: (item["created_at"], item["thread_id"]))
    return {"items": items[offset:offset + limit], "total": len(items), "limit": limit,
            "offset": offset}


def _text(value: Mapping[str, Any], key: str, cap: int, *, required: bool = False) -> str | None:
    raw = value.get(key)
    if raw is None:
        if required:
            raise Refused(422, f"{key}: required")
        return None
    if not isinstance(raw, str):
        raise Refused(422, f"{key}: must be text, got {type(raw).__name__}")
    if required and not raw.strip():
        raise Refused(422, f"{key}: required (non-empty text)")
    if len(raw) > cap:
        raise Refused(422, f"{key}: {len(raw)} characters, over {cap}")
    return raw


def check_resume(value: Any, labels: Collection[str]) -> dict[str, Any]:
    """The resume value when its shape is right: an object of :data:`RESUME_KEYS` only,
    ``decision`` one of :data:`DECISIONS`, ``reviewer`` non-empty text, ``label`` one of
    ``labels`` (required for ``edit``; ``label``, ``rationale`` and ``evidence_ids`` only with
    ``edit``), ``evidence_ids`` a list of text, every text within its cap.

    Raises:
        Refused: 422 naming the first field that is wrong.
    """
    if not isinstance(value, Mapping):
        raise Refused(422, f"body: a JSON object with {', '.join(RESUME_KEYS)}")
    extra = sorted(str(k)[:60] for k in value if k not in RESUME_KEYS)
    if extra:
        raise Refused(422, f"{extra[0]}: unknown field; allowed: {', '.join(RESUME_KEYS)}")
    decision = value.get("decision")
    if decision not in DECISIONS:
        raise Refused(422, f"decision: one of {', '.join(DECISIONS)}")
    out: dict[str, Any] = {"decision": decision}
    out["reviewer"] = _text(value, "reviewer", MAX_REVIEWER_CHARS, required=True)
    label = _text(value, "label", MAX_LABEL_CHARS, required=decision == "edit")
    rationale = _text(value, "rationale", MAX_RATIONALE_CHARS)
    note = _text(value, "note", MAX_NOTE_CHARS)
    ids = value.get("evidence_ids")
    if ids is not None:
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise Refused(422, "evidence_ids: a list of passage ids (text)")
        if len(ids) > MAX_EVIDENCE_IDS:
            raise Refused(422, f"evidence_ids: {len(ids)} ids, over {MAX_EVIDENCE_IDS}")
        if any(len(i) > MAX_EVIDENCE_ID_CHARS for i in ids):
            raise Refused(422, f"evidence_ids: an id over {MAX_EVIDENCE_ID_CHARS} characters")
    if decision == "edit":
        if label not in labels:
            raise Refused(422, f"label: one of {', '.join(labels)}")
        out["label"] = label
        if rationale:
            out["rationale"] = rationale
        if ids is not None:
            out["evidence_ids"] = ids
    else:
        for key, given in (("label", label), ("rationale", rationale), ("evidence_ids", ids)):
            if given:
                raise Refused(422, f"{key}: given only with decision 'edit'")
    if note:
        out["note"] = note
    return out


async def visible_thread(client: Any, thread_id: str, reviewers_of: Collection[str],
                          ) -> dict[str, Any]:
    """The thread when the caller may review it; else the 404 of a missing thread (the check the
    other routes of a thread reuse, e.g. :mod:`factdebate.server.claimreview_route`)."""
    try:
        thread = await client.threads.get(thread_id)
    except Exception:  # noqa: BLE001  # not found, or not a thread id: the same answer
        raise not_found(thread_id) from None
    if (thread.get("metadata") or {}).get(OWNER) not in set(reviewers_of):
        raise not_found(thread_id)
    return dict(thread)


def _status_of(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


async def resume(client: Any, thread_id: str, body: Any, reviewers_of: Collection[str],
                 reviewer_identity: str) -> dict[str, Any]:
    """Resume the review of ``thread_id`` with ``body`` and answer with the run's outcome.

    Raises:
        Refused: 404 for a thread the caller may not review (or none), 409 for one that does not
            wait for review (or is running), 422 for a body of the wrong shape.
    """
    thread_id = check_thread_id(thread_id)
    await visible_thread(client, thread_id, reviewers_of)  # 404 before anything else
    lock = _DECIDING.setdefault(thread_id, asyncio.Lock())
    if lock.locked():  # no await since the check: another decision holds it now
        raise _busy(thread_id)
    try:
        async with lock:
            return await _decide(client, thread_id, body, reviewers_of, reviewer_identity)
    finally:
        if not lock.locked() and _DECIDING.get(thread_id) is lock:
            del _DECIDING[thread_id]


async def get_item(client: Any, thread_id: str, reviewers_of: Collection[str]) -> dict[str, Any]:
    """One thread's entry of the queue.

    Raises:
        Refused: 404 for a thread the caller may not review (or none), 409 for one that does not
            wait for review, 422 for an id that is not a UUID.
    """
    thread_id = check_thread_id(thread_id)
    thread = await visible_thread(client, thread_id, reviewers_of)
    payload = review_payload(thread)
    if payload is None:
        raise Refused(409, f"thread {thread_id} is not waiting for review "
                      f"(status {thread.get('status')})")
    return queue_item(thread, payload)


def _busy(thread_id: str) -> Refused:
    return Refused(409, f"thread {thread_id} is busy: another decision is being applied; "
                   "reload the queue")


async def _decide(client: Any, thread_id: str, body: Any, reviewers_of: Collection[str],
                  reviewer_identity: str) -> dict[str, Any]:
    """:func:`resume` with the thread's decision lock held: the thread is read again, so a
    decision that finished meanwhile is seen (409, not waiting for review)."""
    thread = await visible_thread(client, thread_id, reviewers_of)
    payload = review_payload(thread)
    if payload is None:
        raise Refused(409, f"thread {thread_id} is not waiting for review "
                      f"(status {thread.get('status')})")
    value = check_resume(body, [str(x) for x in payload.get("labels") or []])
    metadata = thread.get("metadata") or {}
    runs = await client.runs.list(thread_id, limit=1)
    last = dict(runs[0]) if runs else {}
    assistant = last.get("assistant_id") or metadata.get("assistant_id") or metadata.get(
        "graph_id")
    if not assistant:
        raise Refused(409, f"thread {thread_id} has no run to resume")
    # the resume goes on with the stopped run's Context (checked by the server's policy when
    # that run was made): a text check's review step reads ``review`` from it
    context = (last.get("kwargs") or {}).get("context")
    try:
        result = await client.runs.wait(
            thread_id, assistant, command={"resume": value}, raise_error=False,
            context=context if isinstance(context, dict) and context else None,
            metadata={OWNER: metadata.get(OWNER), "reviewed_by": reviewer_identity},
            multitask_strategy="reject")
    except Exception as exc:  # noqa: BLE001  # the server's own API refused the run
        if _status_of(exc) == 409:  # a run on the thread (another replica's decision)
            raise _busy(thread_id) from None
        raise Refused(502, f"the resume could not start ({type(exc).__name__})") from None
    failure = result.get("__error__") if isinstance(result, Mapping) else None
    return {**outcome(await client.threads.get(thread_id), thread_id, failure),
            "decision": value["decision"], "reviewer": value["reviewer"]}


def outcome(thread: Mapping[str, Any], thread_id: str, failure: Any = None) -> dict[str, Any]:
    """What a resume led to: ``done`` (the run finished: final label and review), ``next`` (the
    decision was taken and the thread waits for its next review: a text check's next claim, in
    ``item``), ``waiting`` (the node refused the value: its ``error``, the same draft in
    ``item``), or ``error`` (the run failed: its message, one line)."""
    values = thread.get("values") if isinstance(thread.get("values"), Mapping) else {}
    again = review_payload(thread)
    if again is not None:
        error = str(again.get("error") or "")
        return {"thread_id": thread_id, "status": "waiting" if error else "next", "error": error,
                "item": queue_item(thread, again)}
    if thread.get("status") == "idle":
        return {"thread_id": thread_id, "status": "done", "label": values.get("label"),
                "review": values.get("review")}
    message = (failure.get("message") if isinstance(failure, Mapping) else None) or (
        f"the run ended with status {thread.get('status')}")
    return {"thread_id": thread_id, "status": "error",
            "error": str(message).splitlines()[0][:500] if str(message) else "the run failed"}
