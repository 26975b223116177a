"""The reviewer's step on the command line: ``verify --review`` and ``check --review``.

A run with ``review`` on stops at its ``review`` step (nodes/review.py) with the draft verdict.
On a terminal the draft is shown (label, rationale, cited passages, summary) and the reviewer is
asked: approve, edit or reject, their name (default ``$USER``), for an edit the label (one of the
label set) and an optional rationale, and an optional note; the run is then resumed with that
decision and its final verdict printed with a review line. A refused decision is shown with the
reason and asked again. The scripted flags (``--review-decision``, ``--review-label``,
``--reviewer``, ``--review-note``) give the decision without asking (a text check applies it to
each claim in turn). Without a terminal and without those flags, the run stays stopped: the thread
id and the command that resumes it are printed.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console

from factdebate.core.errors import InputError
from factdebate.nodes.review import DECISIONS

ReviewRun = Callable[[dict[str, Any]], dict[str, Any]]
"""Resumes the stopped run with a decision; returns its new result."""


def default_reviewer() -> str:
    """The reviewer's name when none is given: ``$USER`` (``$USERNAME`` on Windows), else ""."""
    return os.environ.get("USER") or os.environ.get("USERNAME") or ""


def scripted_decision(decision: str | None, label: str | None, reviewer: str | None,
                      note: str | None, rationale: str | None = None) -> dict[str, Any] | None:
    """The resume value the scripted flags give, or None when ``--review-decision`` is absent.

    Raises:
        InputError: A review flag without ``--review-decision``, or an unknown decision.
    """
    if decision is None:
        given = [flag for flag, value in (("--review-label", label), ("--reviewer", reviewer),
                                          ("--review-note", note)) if value is not None]
        if given:
            raise InputError(f"{', '.join(given)} needs --review-decision",
                             "add --review-decision approve|edit|reject")
        return None
    if decision not in DECISIONS:
        raise InputError(f"--review-decision {decision!r} is not a decision",
                         f"use one of: {', '.join(DECISIONS)}")
    value: dict[str, Any] = {"decision": decision,
                             "reviewer": reviewer if reviewer is not None else default_reviewer()}
    if label is not None:
        value["label"] = label
    if rationale is not None:
        value["rationale"] = rationale
    if note is not None:
        value["note"] = note
    return value


def interactive() -> bool:
    """True when the reviewer can be asked: stdin and stdout are terminals."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def show_draft(console: Console, payload: dict[str, Any]) -> None:
    """The draft verdict a review stopped at, for the reviewer to read."""
    draft = payload.get("draft") or {}
    print_ = lambda text="": console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    print_()
    print_(f"Review ({payload.get('framework') or 'run'}): {payload.get('claim')}")
    print_(f"  draft label: {draft.get('label')}")
    print_(f"  rationale: {draft.get('rationale') or '(none)'}")
    evidence = draft.get("evidence") or []
    print_(f"  cited passages: {len(evidence)}")
    for p in evidence:
        text = " ".join(str(p.get("text") or "").split())
        print_(f"    [{p.get('id')}] {p.get('title')}: {text[:200]}{'...' if len(text) > 200 else ''}")
    print_(f"  summary: {draft.get('summary')}")
    print_(f"  labels: {', '.join(payload.get('labels') or [])}")
    if payload.get("error"):
        print_(f"  refused: {payload['error']}")


def ask_decision(console: Console, payload: dict[str, Any]) -> dict[str, Any]:
    """The reviewer's decision, asked on the terminal."""
    import typer

    show_draft(console, payload)
    decision = typer.prompt("Decision (approve/edit/reject)", default="approve").strip().lower()
    reviewer = typer.prompt("Reviewer", default=default_reviewer() or None).strip()
    value: dict[str, Any] = {"decision": decision, "reviewer": reviewer}
    if decision == "edit":
        labels = payload.get("labels") or []
        value["label"] = typer.prompt(f"Label ({'/'.join(labels)})").strip()
        rationale = typer.prompt("Rationale (empty keeps the machine's)", default="",
                                 show_default=False).strip()
        if rationale:
            value["rationale"] = rationale
    note = typer.prompt("Note (optional)", default="", show_default=False).strip()
    if note:
        value["note"] = note
    return value


_DROPPED_FLAGS = ("--thread-id", "--review-decision", "--review-label", "--review-rationale",
                  "--reviewer", "--review-note")
"""Flags with a value the resume command sets itself."""


def resume_command(argv: list[str], thread_id: str, drop: tuple[str, ...] = ()) -> str:
    """The command line that resumes the stopped run with a decision: the command as it was
    run (``argv``, without the tokens in ``drop`` such as the claim), its review flags and thread
    replaced."""
    parts: list[str] = ["factdebate"]
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        if name in _DROPPED_FLAGS:
            skip = "=" not in token
            continue
        if token in ("--resume", "--review") or token in drop:
            continue
        parts.append(token)
    parts += ["--resume", "--thread-id", thread_id, "--review-decision", "approve",
              "--reviewer", default_reviewer() or "NAME"]
    return " ".join(shlex.quote(p) for p in parts)


def print_waiting(console: Console, result: dict[str, Any], argv: list[str],
                  drop: tuple[str, ...], framework: str) -> None:
    """What a run left stopped at its review prints: the draft, the thread, how to resume it."""
    payload = result["pending_review"]
    thread = str(result.get("thread_id"))
    show_draft(console, payload)
    print_ = lambda text="": console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    print_()
    print_(f"waiting for review: thread {thread} (the verdict is not final)")
    print_("resume it: " + resume_command(argv, thread, drop))
    print_("  (or --review-decision edit --review-label LABEL [--review-rationale TEXT], or "
           "--review-decision reject; --review-note TEXT)")
    print_(f"from Python: factdebate.run.engine.run_local({framework!r}, ITEM, CTX, "
           f"thread_id={thread!r}, resume=True, review_decision={{'decision': 'approve', "
           "'reviewer': 'NAME'}) with CTX.review = True")


def review_line(review: dict[str, Any] | None) -> str:
    """One line on a reviewed verdict: decision, reviewer, time, what changed, note."""
    if not review:
        return ""
    changed = review.get("changed") or {}
    parts = [f"review: {review.get('decision')} by {review.get('reviewer')} at {review.get('at')}"]
    if changed.get("label"):
        old, new = changed["label"]
        parts.append(f"label {old} -> {new}")
    if changed.get("rationale"):
        parts.append("rationale edited")
    if changed.get("evidence_ids") is not None:
        parts.append(f"evidence {', '.join(changed['evidence_ids']) or 'none'}")
    if review.get("decision") == "reject":
        parts.append("not for publication")
    if review.get("note"):
        parts.append(f"note: {review['note']}")
    return "; ".join(parts)


def complete_review(result: dict[str, Any], resume: ReviewRun, scripted: dict[str, Any] | None,
                    console: Console, *, ask: bool | None = None) -> dict[str, Any]:
    """Resume a run stopped at its review until it is final, or it cannot be asked.

    ``scripted`` (the flags' decision) is given while the step accepts it (each claim of a text
    check in turn); a refused scripted decision is asked on the terminal, or leaves the run
    stopped. Without ``scripted`` the reviewer is asked when ``ask`` (default: stdin and stdout
    are terminals). Returns the last result: final, or still holding ``pending_review``.
    """
    ask = interactive() if ask is None else ask
    while result.get("pending_review"):
        payload = result["pending_review"]
        if scripted is not None and not payload.get("error"):
            value = scripted
        elif ask:
            value = ask_decision(console, payload)
        else:
            return result
        result = resume(value)
    return result
