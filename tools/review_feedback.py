"""A reviewer's decision as LangSmith feedback on the run it closes.

When tracing is on (``LANGSMITH_TRACING=true``), the review step (``nodes/review.py``) sends each
decision as one feedback record through ``langsmith.Client.create_feedback``:

* ``key`` ``review``;
* ``value`` the label the reviewer stands behind: the final label for ``approve`` and ``edit``,
  the string ``rejected`` for ``reject`` (a rejected verdict has no reviewer's label);
* ``score`` 1 when the reviewer kept the machine's label (``approve``, or an ``edit`` of the
  rationale or evidence only), 0 when the label was changed or the verdict rejected, so the
  feedback chart of a project reads as agreement with the reviewers;
* ``correction`` ``{"label": new}`` when an edit changed the label (LangSmith's field for the
  ground truth of a run);
* ``comment`` the reviewer's note;
* ``source_info`` (the feedback source's metadata) and ``extra``: the reviewer, the decision, the
  time of the decision, the machine's label and what changed.

The feedback goes on the trace's root run: the run id of the graph run the decision resumed. In
a node, LangGraph's ``config`` has no ``run_id`` (the caller's ``run_id`` names the root run and
is not passed down); :func:`review_run_id` finds it in the config's metadata (a LangGraph
server's ``run_id``) or as the trace id of the current LangSmith run tree. LangSmith asks for the
project (session) of the run with each feedback: its id is looked up by the project's name (the
current run tree's, else ``LANGSMITH_PROJECT``) once per process; a project LangSmith does not
know is left out of the request.

LangSmith is a side channel: a fault (unreachable, HTTP 5xx, timeout) is retried by the project's
policy (``core/retry.call_with_retries_blocking``), then returned as a note for the run's flags
and logged; it never fails the run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

FEEDBACK_KEY = "review"
"""The feedback key of a reviewer's decision."""
REJECTED = "rejected"
"""The feedback value of a rejected verdict."""
RETRIES = 2
"""Retries of a failed feedback request (after the first attempt)."""
BASE_DELAY_S = 0.5
"""The first wait between attempts; doubled each retry."""
TIMEOUT_MS = 10_000
"""Connect and read timeout of one feedback request."""


def tracing_on() -> bool:
    """True when LangSmith tracing is switched on for this process (``LANGSMITH_TRACING``)."""
    from langsmith.utils import tracing_is_enabled

    return bool(tracing_is_enabled())


def review_run_id(config: Mapping[str, Any] | None) -> str | None:
    """The root run id the review belongs to, from a node's ``config``, or None.

    Looked up in order: ``config["run_id"]`` (set when the caller's config reaches the node as
    is), ``run_id`` in the config's ``metadata`` or ``configurable`` (a LangGraph server's run,
    whose id is its trace's root run id), the trace id of the current LangSmith run tree (a
    traced local run).
    """
    config = config or {}
    for value in (config.get("run_id"), (config.get("metadata") or {}).get("run_id"),
                  (config.get("configurable") or {}).get("run_id")):
        if value:
            return str(value)
    from langsmith.run_helpers import get_current_run_tree

    tree = get_current_run_tree()
    trace_id = getattr(tree, "trace_id", None) if tree is not None else None
    return str(trace_id) if trace_id else None


def review_project(config: Mapping[str, Any] | None = None) -> str | None:
    """The LangSmith project of the traced run: the current run tree's, else the environment's
    (``LANGSMITH_PROJECT``, LangSmith's default name when unset)."""
    from langsmith.run_helpers import get_current_run_tree
    from langsmith.utils import get_tracer_project

    tree = get_current_run_tree()
    name = getattr(tree, "session_name", None) if tree is not None else None
    return str(name) if name else get_tracer_project()


_project_ids: dict[tuple[str, str], Any] = {}


def _project_id(client: Any, name: str | None) -> Any:
    """The id of project ``name`` (cached per LangSmith URL), or None when LangSmith has none
    of that name."""
    if not name:
        return None
    key = (str(getattr(client, "api_url", "")), name)
    if key not in _project_ids:
        from langsmith.utils import LangSmithNotFoundError

        try:
            _project_ids[key] = client.read_project(project_name=name).id
        except LangSmithNotFoundError:
            return None
    return _project_ids[key]


def feedback_fields(review: Mapping[str, Any]) -> dict[str, Any]:
    """The ``create_feedback`` keyword arguments of a review record (module doc)."""
    decision = str(review.get("decision") or "")
    changed = review.get("changed") or {}
    label_change = changed.get("label")
    machine = review.get("machine_label")
    final = label_change[1] if isinstance(label_change, list | tuple) and len(label_change) == 2 \
        else review.get("label", machine)
    rejected = decision == "reject"
    info = {"reviewer": review.get("reviewer"), "decision": decision, "at": review.get("at"),
            "machine_label": machine, "changed": dict(changed)}
    fields: dict[str, Any] = {
        "key": FEEDBACK_KEY,
        "value": REJECTED if rejected else final,
        "score": 0 if rejected or label_change else 1,
        "comment": review.get("note") or None,
        "source_info": info,
        "extra": dict(info),
    }
    if label_change and not rejected:
        fields["correction"] = {"label": final}
    return fields


def _run_uuid(run_id: Any) -> uuid.UUID | None:
    try:
        return run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
    except (TypeError, ValueError):
        return None


def _client() -> Any:
    from urllib3.util.retry import Retry

    from factdebate.core.trace_filter import trace_client

    # one HTTP attempt per call: the retries are the project's policy (core/retry.py)
    return trace_client(retry_config=Retry(total=0, raise_on_status=False),
                        timeout_ms=(TIMEOUT_MS, TIMEOUT_MS))


def log_review_feedback(run_id: Any, review: Mapping[str, Any] | None, *,
                        project: str | None = None, client: Any = None, retries: int = RETRIES,
                        base_delay: float = BASE_DELAY_S) -> list[str]:
    """Send ``review`` as feedback on ``run_id`` when tracing is on; returns the notes to add
    to the run's flags (empty when it was sent, or there was nothing to send).

    ``run_id`` is a run id, or a node's ``config`` (:func:`review_run_id` finds the id in it);
    ``project`` the run's LangSmith project (default :func:`review_project`).
    Nothing is sent when tracing is off, there is no review, or no run id is known (a note says
    so when tracing is on). A fault still there after ``retries`` retries is a note, never raised.
    """
    if not review or not tracing_on():
        return []
    if isinstance(run_id, Mapping):
        run_id = review_run_id(run_id)
    project = project or review_project()
    run = _run_uuid(run_id) if run_id else None
    if run is None:
        return [f"review: feedback: no LangSmith run id for the {review.get('decision')} "
                "decision; it was not sent"]
    from factdebate.core.retry import call_with_retries_blocking
    from factdebate.core.secrets_filter import redact, redact_value

    fields = redact_value(feedback_fields(review))
    try:
        target = client or _client()

        def send() -> None:
            target.create_feedback(run, **fields, session_id=_project_id(target, project),
                                   stop_after_attempt=1)

        call_with_retries_blocking(
            send,
            retries=retries, what="LangSmith review feedback", base_delay=base_delay,
            max_retry_after=10.0, max_delay=5.0)
    except Exception as exc:  # noqa: BLE001 - LangSmith is a side channel of the run
        problem = redact(f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}")
        note = (f"review: feedback: LangSmith did not take the {review.get('decision')} decision "
                f"on run {run} after {retries + 1} attempt(s) ({problem[:200]})")
        log.warning("%s", note)
        return [note]
    return []

