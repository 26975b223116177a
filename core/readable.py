"""Text as a reader sees it: passage excerpts cut at a word, faults on one line.

:func:`excerpt` is the one cut every report uses for a passage (the terminal, ``report.md``, the
HTML report): whitespace collapsed, cut at the last word boundary that fits, an ellipsis marking
the cut, so no excerpt ends mid-word. :func:`one_line` turns an exception message - a pydantic
``ValidationError``'s multi-line dump included - into one short line for a note.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"

_VALIDATION = re.compile(r"(\d+) validation errors? for ([\w.]+)\s*$")
_ERROR_TAIL = re.compile(r"\s*\[type=[^\]]*\]\s*$")


def excerpt(text: str | None, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut after a whole word with ``…``.

    Text that fits is returned whole (whitespace collapsed). A cut text ends in the ellipsis and
    keeps only whole words (trailing punctuation that would dangle before the ellipsis dropped);
    a first word longer than ``limit`` (a URL) is the one case cut inside a word, still marked.
    """
    flat = " ".join((text or "").split())
    if len(flat) <= limit:
        return flat
    room = max(limit - len(ELLIPSIS), 1)
    head = flat[:room + 1]  # one more: a space right after the cut means the word is whole
    cut = head.rfind(" ")
    kept = head[:cut] if cut > 0 else flat[:room]
    return kept.rstrip(" ,;:-–—") + ELLIPSIS


def one_line(message: str | None, limit: int = 240) -> str:
    """An exception message as one line of at most ``limit`` characters.

    A pydantic validation dump (``1 validation error for Model`` / field / message ``[type=...]`` /
    a documentation link) becomes ``Model: field: message`` for its first error, with the count of
    the others; any other message keeps its first non-empty line.
    """
    lines = [ln.strip() for ln in (message or "").strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    text = lines[0]
    for i, line in enumerate(lines):
        found = _VALIDATION.search(line)
        if found:
            text = _validation_summary(found, lines[i + 1:], line[:found.start()].rstrip(" ("))
            break
    return excerpt(text, limit)


def _validation_summary(found: re.Match[str], rest: list[str], prefix: str) -> str:
    """``[prefix (]Model: field: message[ (and N more)][)]`` from the lines after the header."""
    count, model = int(found.group(1)), found.group(2)
    detail = [ln for ln in rest if not ln.startswith("For further information")]
    field, message = "", ""
    if detail and "[type=" in detail[0]:  # a model-level error (e.g. invalid JSON): no field line
        message = _ERROR_TAIL.sub("", detail[0])
    elif len(detail) >= 2:
        field, message = detail[0], _ERROR_TAIL.sub("", detail[1])
    more = f" (and {count - 1} more)" if count > 1 else ""
    summary = ": ".join(p for p in (model, field, message) if p) + more
    return f"{prefix} ({summary})" if prefix else summary
