"""Checking a reply's citations against the passages its prompt showed.

A node that shows passages builds a :class:`Shown` (numbered 1..n, de-duplicated by passage key),
renders them with :meth:`Shown.render` (``<document n="3" ...>``), asks for a reply whose schema
carries ``citations`` (``factdebate.core.citations.with_citations``; ``ask_label`` does it for
verdicts) and records what came back with :func:`cite`:

* a cited number the prompt never showed is dropped and flagged (``citation: rag round 2 cited
  unshown [7]``), counted in the ledger's ``citations_unshown``;
* a labelled reply that was shown passages and cites none is allowed but flagged as uncited
  (``replies_uncited``); one with at least one valid citation counts in ``replies_cited``;
* the reply's :class:`~factdebate.core.citations.Citation` record goes to the state's
  ``citations`` list (through ``CallLog.update()``), where ``cite_verdict`` finds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from factdebate.core.citations import Citation, normalise_numbers, passage_key
from factdebate.core.state import Evidence
from factdebate.nodes.render import render_evidence


class CallRecords(Protocol):
    """What :func:`cite` writes to: ``nodes.llm.CallLog`` (not imported: llm imports this module)."""

    flags: list[str]
    counts: dict[str, int]
    citations: list[Any]


class Shown:
    """The passages one prompt shows, numbered from 1 in order, each passage once."""

    def __init__(self, *groups: Iterable[Evidence] | None) -> None:
        self.passages: list[Evidence] = []
        self._number: dict[str, int] = {}
        for group in groups:
            for e in group or ():
                self.add(e)

    def add(self, e: Evidence) -> int:
        """Number of ``e`` (a passage already shown keeps its number)."""
        key = passage_key(e)  # type: ignore[arg-type]
        if key not in self._number:
            self.passages.append(e)
            self._number[key] = len(self.passages)
        return self._number[key]

    def __len__(self) -> int:
        return len(self.passages)

    def number(self, e: Evidence) -> int:
        """The number ``e`` is shown under (it must have been added)."""
        return self._number[passage_key(e)]  # type: ignore[arg-type]

    def render(self, subset: Sequence[Evidence] | None = None) -> str:
        """``<document n=...>`` blocks of all passages, or of ``subset`` under their numbers."""
        if subset is None:
            return render_evidence(self.passages)
        return render_evidence(subset, numbers=[self.add(e) for e in subset])

    def resolve(self, raw: Any) -> tuple[list[Evidence], list[str]]:
        """``(cited passages, unshown numbers)`` of the numbers a reply cited."""
        cited: list[Evidence] = []
        unshown: list[str] = []
        for n in normalise_numbers(raw):
            if n.isdigit() and 1 <= int(n) <= len(self.passages):
                e = self.passages[int(n) - 1]
                if e not in cited:
                    cited.append(e)
            else:
                unshown.append(n)
        return cited, unshown


def cite(
    shown: Shown,
    raw: Any,
    calls: CallRecords,
    *,
    by: str,
    role: str,
    round_: int = 0,
    label: str | None = None,
    answers: Sequence[str] = (),
    decides: bool = False,
) -> Citation:
    """Check one labelled reply's cited numbers against ``shown`` and record the result.

    The record is appended to ``calls.citations`` (returned by ``calls.update()``), flags and
    ledger counts to ``calls``. Returns the record (its ``passages`` are the valid citations).
    """
    passages, unshown = shown.resolve(raw)
    where = f"{by}" + (f" round {round_}" if round_ else "")
    if unshown:
        calls.flags.append(f"citation: {where} cited unshown [{', '.join(unshown)}] (dropped)")
        calls.counts["citations_unshown"] = calls.counts.get("citations_unshown", 0) + len(unshown)
    if passages:
        calls.counts["replies_cited"] = calls.counts.get("replies_cited", 0) + 1
    elif len(shown) and (label is not None or answers):
        calls.flags.append(f"citation: {where} uncited ({label or '; '.join(answers)})")
        calls.counts["replies_uncited"] = calls.counts.get("replies_uncited", 0) + 1
    record = Citation(by=by, role=role, round=int(round_ or 0), label=label,
                      answers=list(answers), decides=decides,
                      passages=[dict(p) for p in passages], unshown=unshown, shown=len(shown))
    calls.citations.append(record)
    return record


def cited_keys(record: Citation) -> list[str]:
    """Passage keys of a record's valid citations (``Turn.cited``)."""
    return [passage_key(p) for p in record["passages"]]
