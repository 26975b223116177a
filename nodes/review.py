"""``review``: a fact-checker's decision on the machine verdict before it is final.

The last node of every graph that ends in a verdict (``cite_verdict -> review -> END``,
graphs/finish.py). With the Context's ``review`` off it passes the verdict through (no interrupt,
``review`` stays None). With it on, it stops the run with LangGraph's ``interrupt(payload)``:

* ``payload`` = ``{"kind": "review", "claim", "framework", "draft": {"label", "rationale",
  "evidence", "summary", "scores"}, "labels", "error"}``: ``evidence`` are the verdict's cited
  passages (``id``, ``title``, ``text``, ``url``, ``page``, ``sentences``), ``summary`` one
  paragraph built from the state (rounds, each agent's last label, scores, how the run stopped;
  no model call), ``labels`` the run's label set, ``error`` ``""`` the first time, else why the
  previous resume value was refused.
* the resume value (``Command(resume=...)``) = ``{"decision": "approve"|"edit"|"reject",
  "label", "rationale", "evidence_ids", "reviewer", "note"}``: ``reviewer`` is required
  (non-empty, at most 200 characters); ``label`` is required for ``edit`` (one of ``labels``);
  ``rationale`` and ``evidence_ids`` (ids of the draft's evidence or of the run's retrieved
  passages) are optional edits; ``note`` is optional (at most 2000 characters).

A resume value that breaks these rules does not fail the run: the node interrupts again with the
same draft and ``error`` naming the problem, up to :data:`MAX_ATTEMPTS` times (LangGraph matches
the interrupts of one node by order), then raises ``InputError``.

The decision is written as the state's ``review``: ``{"decision", "reviewer", "at" (ISO 8601,
UTC), "note", "machine_label", "changed": {"label": [old, new] | None, "rationale": bool,
"evidence_ids": [...] | None}}``. ``edit`` replaces ``label`` (and ``rationale``,
``verdict_evidence`` when given); ``approve`` and ``reject`` keep the machine's verdict (a
rejected verdict is marked so by ``review.decision``; nothing downstream publishes it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from factdebate.core.errors import ConfigError, InputError
from factdebate.core.labels import LABEL_SETS

DECISIONS = ("approve", "edit", "reject")
"""What a reviewer may decide."""
RESUME_KEYS = ("decision", "label", "rationale", "evidence_ids", "reviewer", "note")
"""The keys a resume value may carry."""
MAX_REVIEWER_CHARS = 200
MAX_NOTE_CHARS = 2000
MAX_ATTEMPTS = 20
"""Resume values refused in a row before the run fails with ``InputError``."""
EVIDENCE_KEYS = ("id", "title", "text", "url", "page", "sentences")
"""The keys of a cited passage shown to the reviewer."""


def allowed_labels(task: str | None, options: Mapping[str, Any] | None = None) -> list[str]:
    """The labels a reviewer may choose: the options of a multiple-choice item, else the task's
    label set (``fever`` when the task is unknown)."""
    if options:
        return [str(k) for k in options]
    try:
        return list(LABEL_SETS.get(LABEL_SETS.resolve(task or "fever")).labels)
    except Exception:  # an unknown task never reaches here (prepare refuses it)
        return list(LABEL_SETS.get("fever").labels)


def shown_passage(passage: Mapping[str, Any]) -> dict[str, Any]:
    """A cited passage as the reviewer sees it (:data:`EVIDENCE_KEYS`)."""
    return {"id": str(passage.get("id") or ""), "title": str(passage.get("title") or ""),
            "text": str(passage.get("text") or ""), "url": str(passage.get("url") or ""),
            "page": passage.get("page") or "", "sentences": list(passage.get("sentences") or [])}


def _score_text(row: Mapping[str, Any]) -> str:
    parts = [f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
             for k, v in row.items() if k != "round" and v is not None]
    return ", ".join(parts)


def debate_summary(label: str | None, rounds: int, stopped_by: str,
                   turns: Sequence[Mapping[str, Any]],
                   scores: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """One paragraph on how the verdict came about, from the state alone (no model call):
    rounds, each agent's last label, each agent's last scores, how the run stopped."""
    last: dict[str, Any] = {}
    for turn in turns:
        last[str(turn.get("agent") or "?")] = turn.get("label")
    parts = [f"The run took {rounds} round{'s' if rounds != 1 else ''} and stopped by "
             f"{stopped_by or 'its last step'}."]
    if last:
        parts.append("Last labels: " + "; ".join(
            f"{agent} {lab if lab is not None else 'no label'}" for agent, lab in last.items())
            + ".")
    scored = [f"{agent} ({_score_text(rows[-1])})" for agent, rows in scores.items()
              if rows and _score_text(rows[-1])]
    if scored:
        parts.append("Last scores: " + "; ".join(scored) + ".")
    parts.append(f"Machine verdict: {label if label is not None else 'none'}.")
    return " ".join(parts)


def draft_of(state: Mapping[str, Any]) -> dict[str, Any]:
    """The machine verdict of a finished debate's state, as the reviewer sees it."""
    return {
        "label": state.get("label"),
        "rationale": str(state.get("rationale") or ""),
        "evidence": [shown_passage(p) for p in state.get("verdict_evidence") or []],
        "summary": debate_summary(state.get("label"), int(state.get("round") or 0),
                                  str(state.get("stopped_by") or ""), state.get("turns") or [],
                                  state.get("scores") or {}),
        "scores": {agent: [dict(r) for r in rows]
                   for agent, rows in (state.get("scores") or {}).items()},
    }


def review_payload(claim: str, framework: str, draft: Mapping[str, Any], labels: Sequence[str],
                   error: str = "") -> dict[str, Any]:
    """The ``interrupt`` payload of one review (module doc)."""
    return {"kind": "review", "claim": claim, "framework": framework, "draft": dict(draft),
            "labels": list(labels), "error": error}


def check_decision(value: Any, labels: Sequence[str], evidence_ids: Sequence[str],
                   machine_label: str | None) -> tuple[dict[str, Any] | None, str]:
    """``(decision, "")`` for a valid resume value, ``(None, problem)`` otherwise."""
    if not isinstance(value, Mapping):
        return None, (f"the resume value must be an object with {', '.join(RESUME_KEYS)}, got "
                      f"{type(value).__name__}")
    extra = [str(k) for k in value if k not in RESUME_KEYS]
    if extra:
        return None, (f"unknown key(s) {', '.join(map(repr, extra))}; allowed: "
                      f"{', '.join(RESUME_KEYS)}")
    decision = value.get("decision")
    if decision not in DECISIONS:
        return None, f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}"
    reviewer = value.get("reviewer")
    if not isinstance(reviewer, str) or not reviewer.strip():
        return None, "reviewer is required: the reviewer's name (non-empty text)"
    if len(reviewer.strip()) > MAX_REVIEWER_CHARS:
        return None, f"reviewer has {len(reviewer.strip())} characters, over {MAX_REVIEWER_CHARS}"
    for key in ("label", "rationale", "note"):
        if value.get(key) is not None and not isinstance(value.get(key), str):
            return None, f"{key} must be text, got {type(value.get(key)).__name__}"
    note = value.get("note") or ""
    if len(note) > MAX_NOTE_CHARS:
        return None, f"note has {len(note)} characters, over {MAX_NOTE_CHARS}"
    ids = value.get("evidence_ids")
    if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
        return None, "evidence_ids must be a list of passage ids (text)"
    label, rationale = value.get("label"), value.get("rationale")
    if decision == "edit":
        if not label:
            return None, f"decision 'edit' needs a label, one of {', '.join(labels)}"
        if label not in labels:
            return None, f"label {label!r} is not in the label set ({', '.join(labels)})"
        unknown = [i for i in ids or [] if i not in evidence_ids]
        if unknown:
            return None, (f"unknown evidence id(s) {', '.join(map(repr, unknown))}: give ids of "
                          "the draft's evidence or of the run's retrieved passages")
    else:
        if label and label != machine_label:
            return None, (f"a label is given only with decision 'edit' (decision {decision!r} "
                          f"keeps {machine_label!r})")
        if rationale or ids:
            return None, "rationale and evidence_ids are given only with decision 'edit'"
    return {"decision": decision, "reviewer": reviewer.strip(), "note": note,
            "label": label if decision == "edit" else None,
            "rationale": rationale if decision == "edit" else None,
            "evidence_ids": ids if decision == "edit" else None}, ""


def ask_reviewer(claim: str, framework: str, draft: Mapping[str, Any], labels: Sequence[str],
                 evidence_ids: Sequence[str]) -> dict[str, Any]:
    """Interrupt until a valid decision is resumed (each refusal re-asks with its ``error``).

    Raises:
        InputError: :data:`MAX_ATTEMPTS` resume values in a row were refused.
    """
    error = ""
    for _ in range(MAX_ATTEMPTS):
        value = interrupt(review_payload(claim, framework, draft, labels, error))
        decision, error = check_decision(value, labels, evidence_ids, draft.get("label"))
        if decision is not None:
            return decision
    raise InputError(f"the review got {MAX_ATTEMPTS} unusable decisions in a row (last: {error})",
                     "resume with {'decision': 'approve'|'edit'|'reject', 'reviewer': NAME, ...}")


def apply_decision(decision: Mapping[str, Any], draft: Mapping[str, Any],
                   cited: Sequence[Mapping[str, Any]], retrieved: Sequence[Mapping[str, Any]],
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(review record, state update)`` of a valid decision on ``draft``.

    ``cited``/``retrieved`` are the run's ``verdict_evidence``/``retrieved_evidence``; an edit
    that names ``evidence_ids`` makes those passages the verdict's evidence (in the given order;
    passages only retrieved until then are cited by ``reviewer``) and the rest retrieved.
    """
    machine = draft.get("label")
    update: dict[str, Any] = {}
    changed: dict[str, Any] = {"label": None, "rationale": False, "evidence_ids": None}
    if decision["decision"] == "edit":
        new = decision["label"]
        update["label"] = new
        if new != machine:
            changed["label"] = [machine, new]
        if decision.get("rationale"):
            update["rationale"] = decision["rationale"]
            changed["rationale"] = decision["rationale"] != draft.get("rationale")
        ids = decision.get("evidence_ids")
        if ids is not None:
            by_id: dict[str, dict[str, Any]] = {}
            for p in [*cited, *retrieved]:
                by_id.setdefault(str(p.get("id")), dict(p))
            chosen = list(dict.fromkeys(ids))
            update["verdict_evidence"] = [
                {**by_id[i], "cited_by": by_id[i].get("cited_by") or ["reviewer"],
                 "stance": by_id[i].get("stance") or str(new).lower()} for i in chosen]
            update["retrieved_evidence"] = [
                {k: v for k, v in p.items() if k not in ("cited_by", "stance")}
                for i, p in by_id.items() if i not in chosen]
            changed["evidence_ids"] = chosen
    record = {"decision": decision["decision"], "reviewer": decision["reviewer"],
              "at": datetime.now(UTC).isoformat(timespec="seconds"), "note": decision["note"],
              "machine_label": machine, "changed": changed}
    return record, update


def require_checkpointer(config: RunnableConfig | None) -> None:
    """Refuse a review in a run without a checkpointer: it could never be resumed.

    Raises:
        ConfigError: The run has no checkpointer (LangGraph would stop it with nothing saved).
    """
    if (config or {}).get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER) is None:
        raise ConfigError("review=True needs a checkpointer: the run stops for the reviewer and "
                          "is resumed from its checkpoint",
                          "compile the graph with a checkpointer (e.g. InMemorySaver) and pass a "
                          "thread_id, or run it through the CLI or a LangGraph server")


def framework_of(config: RunnableConfig | None, default: str = "") -> str:
    """The framework a run belongs to: ``default``, else the run's metadata (``framework`` from
    the engine, ``graph_id`` from a LangGraph server)."""
    meta = (config or {}).get("metadata") or {}
    return default or str(meta.get("framework") or meta.get("graph_id") or "")


FrameworkName = Callable[[Any], str]
"""The framework a run's Context belongs to ("" when it cannot tell)."""


def review_state(state: Mapping[str, Any], framework: str) -> dict[str, Any]:
    """Ask for the review of a finished debate ``state``; returns its state update."""
    draft = draft_of(state)
    cited = list(state.get("verdict_evidence") or [])
    retrieved = list(state.get("retrieved_evidence") or [])
    ids = list(dict.fromkeys(str(p.get("id")) for p in [*cited, *retrieved] if p.get("id")))
    labels = allowed_labels(state.get("task"), state.get("options"))
    decision = ask_reviewer(str(state.get("claim") or ""), framework, draft, labels, ids)
    record, update = apply_decision(decision, draft, cited, retrieved)
    return {**update, "review": record}


def review_on(state: Mapping[str, Any], ctx: Any) -> bool:
    """True when the run reviews its verdict: its Context says so, or the run that stopped for
    the review recorded it (``state["routing"]``), so a resume that sends no Context (a server
    client's ``Command(resume=...)`` alone) still reviews instead of passing the verdict."""
    return bool(getattr(ctx, "review", False) or (state.get("routing") or {}).get("review"))


def make_review(framework: str = "",
                by_context: FrameworkName | None = None) -> Callable[..., dict[str, Any]]:
    """The ``review`` node; ``framework`` names the graph in the payload, else the run's
    metadata, else ``by_context`` (the framework of the run's Context class)."""

    def review(state: dict[str, Any], runtime: Runtime[Any],
               config: RunnableConfig) -> dict[str, Any]:
        """The reviewer's decision on the verdict when ``review`` is on (nodes/review.py)."""
        if not review_on(state, runtime.context):
            return {}
        require_checkpointer(config)
        from factdebate.tools.review_feedback import log_review_feedback

        name = framework_of(config, framework)
        if not name and by_context is not None:
            name = by_context(runtime.context)
        update = review_state(state, name)
        # the decision as LangSmith feedback when tracing is on; a fault is a note, never raised
        return {**update, "flags": log_review_feedback(config, update["review"])}

    return review


review = make_review()
"""The ``review`` node of a graph that names no framework (the run's metadata names it)."""
