"""A run's flags as notes a reader can take in: one line per kind, with counts.

Nodes record what went wrong or was chosen as flags (``kind: where: what``), one per occurrence:
a debate with a faulty scorer has one per metric, agent and round, a checked text one per claim
(``claim N: ...``, or ``... (claims 1, 2)`` for a flag several claims share). ``--json`` keeps
them all; :func:`summarise` folds them into one readable line per kind, e.g. ``faithfulness could
not be scored in 5 of 12 turns: the scorer found no statements``:

* ``score:`` faults, per metric, with the turn count and the reasons (most common first);
* ``citation:`` checks: replies that cited passages they were never shown, replies citing none;
* ``parse:`` labels guessed from free text, and unreadable replies;
* every other kind (``query:``, ``extract:``, ``tool:``, ``scoring:`` ...): flags that differ
  only in where they happened (agent, round, sentence, step) are one line naming the places.

A line is never a raw ``dict``/``repr`` or a multi-line validation dump (``core/readable``).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass

from factdebate.core.readable import one_line

NOTE_CHARS = 300
"""The longest note line."""

SHOWN_PLACES = 6
"""Places named in a grouped line; more are counted."""

_CLAIM_PREFIX = re.compile(r"^claim (\d+): ")
_CLAIMS_SUFFIX = re.compile(r" \(claims (\d+(?:, \d+)+)\)$")
_KIND = re.compile(r"^([a-z_ ]{1,30}): ")
_PLACE = re.compile(r"\b(?:agent \S+ (?:round|step) \d+|(?:round|step|sentence|pass) \d+)")
_SCORE = re.compile(r"^agent (\S+) round (\d+):? (.*)$", re.DOTALL)
_METRIC = re.compile(r"^(\w+) could not be scored \((.*)\)$", re.DOTALL)
_FAILED = re.compile(r"^(?:failed|the scores could not be computed) \((\w+)")


@dataclass
class _Flag:
    body: str
    """The flag without the checked text's claim prefix or suffix."""
    claims: list[int]
    """The claims it belongs to (empty for a single verification)."""

    @property
    def times(self) -> int:
        return max(len(self.claims), 1)


def summarise(flags: list[str], *, turns: int | None = None) -> list[str]:
    """One readable line per kind of flag, in the order the kinds first appear.

    ``turns`` (the debaters' turns of the run, when known) is the denominator of the score faults'
    counts ("in 5 of 12 turns").
    """
    groups: dict[str, list[_Flag]] = {}
    for flag in flags:
        parsed = _split_claims(str(flag))
        kind = _kind(parsed.body)
        groups.setdefault(kind, []).append(parsed)
    lines: list[str] = []
    for kind, items in groups.items():
        if kind == "score":
            lines += _score_lines(items, turns)
        elif kind == "citation":
            lines.append(_citation_line(items))
        elif kind == "parse":
            lines += _parse_lines(items)
        else:
            lines += _alike_lines(items)
    return [one_line(line, NOTE_CHARS) for line in lines]


def _split_claims(flag: str) -> _Flag:
    flag = " ".join(flag.split())
    if found := _CLAIM_PREFIX.match(flag):
        return _Flag(flag[found.end():], [int(found.group(1))])
    if found := _CLAIMS_SUFFIX.search(flag):
        return _Flag(flag[:found.start()], [int(n) for n in found.group(1).split(", ")])
    return _Flag(flag, [])


def _kind(body: str) -> str:
    found = _KIND.match(body)
    return found.group(1) if found else ""


def _rest(body: str) -> str:
    """The flag after its ``kind: ``."""
    found = _KIND.match(body)
    return body[found.end():] if found else body


def _claims_of(items: list[_Flag]) -> str:
    numbers = sorted({n for f in items for n in f.claims})
    if not numbers:
        return ""
    return f" (claim {numbers[0]})" if len(numbers) == 1 else (
        f" (claims {', '.join(map(str, numbers))})")


def _plural(n: int, word: str) -> str:
    many = word[:-1] + "ies" if word.endswith("y") else word + "s"
    return f"{n} {word if n == 1 else many}"


# -- score faults --------------------------------------------------------------------------------
def _score_fault(rest: str) -> tuple[str, str]:
    """``(metric or "", reason)`` of one score fault (the reason before its ``: detail``)."""
    found = _SCORE.match(rest)
    what = found.group(3).strip() if found else rest
    if (metric := _METRIC.match(what)) is not None:
        return metric.group(1), metric.group(2).split(": ", 1)[0]
    if what.startswith("{"):  # a fault recorded as a dict
        try:
            fault = ast.literal_eval(what)
        except (ValueError, SyntaxError):
            fault = {}
        if isinstance(fault, dict):
            reason = ("the scorer found no statements" if fault.get("error") == "NaN"
                      else "the scorer's reply was unreadable" if fault.get("error") == "ScoringError"
                      else f"the scoring call failed: {fault.get('error')}")
            return str(fault.get("metric") or ""), reason
    if (failed := _FAILED.match(what)) is not None:
        return "", f"the scoring call failed: {failed.group(1)}"
    return "", one_line(what, 120)


def _score_lines(items: list[_Flag], turns: int | None) -> list[str]:
    by_metric: dict[str, Counter[str]] = {}
    for f in items:
        metric, reason = _score_fault(_rest(f.body))
        by_metric.setdefault(metric, Counter())[reason] += f.times
    lines = []
    for metric, reasons in by_metric.items():
        n = sum(reasons.values())
        of = f"{n} of {_plural(turns, 'turn')}" if turns and turns >= n else _plural(n, "turn")
        what = f"{metric} could not be scored" if metric else "the scores could not be computed"
        ranked = reasons.most_common()
        why = ranked[0][0] if len(ranked) == 1 else ", ".join(f"{r} ({c})" for r, c in ranked[:3])
        more = f" and {len(ranked) - 3} other reasons" if len(ranked) > 3 else ""
        lines.append(f"{what} in {of}{_claims_of(items)}: {why}{more}")
    return lines


# -- citation checks -----------------------------------------------------------------------------
def _citation_line(items: list[_Flag]) -> str:
    unshown = sum(f.times for f in items if " cited unshown " in f.body)
    uncited = sum(f.times for f in items if " uncited" in f.body and " cited unshown " not in f.body)
    other = sum(f.times for f in items) - unshown - uncited
    parts = []
    if unshown:
        parts.append(f"{_plural(unshown, 'reply')} cited passages never shown to them (dropped)")
    if uncited:
        parts.append(f"{_plural(uncited, 'labelled reply')} cited no passage")
    if other:
        parts.append(_plural(other, "other citation note"))
    return "citation checks: " + "; ".join(parts) + _claims_of(items)


# -- parse guesses and unreadable replies --------------------------------------------------------
def _parse_lines(items: list[_Flag]) -> list[str]:
    guessed = [f for f in items if " guessed" in f.body]
    unreadable = [f for f in items if f not in guessed]
    lines = []
    if guessed:
        n = sum(f.times for f in guessed)
        lines.append(f"the label was guessed from free text in {_plural(n, 'reply')}"
                     f"{_claims_of(guessed)}, e.g. {_rest(guessed[0].body)}")
    if unreadable:
        n = sum(f.times for f in unreadable)
        lines.append(f"{_plural(n, 'reply')} could not be read{_claims_of(unreadable)}, "
                     f"e.g. {_rest(unreadable[0].body)}")
    return lines


# -- everything else: alike flags -----------------------------------------------------------------
def _alike_lines(items: list[_Flag]) -> list[str]:
    """Flags that differ only in their places (and counts) as one line naming the places."""
    alike: dict[str, list[_Flag]] = {}
    for f in items:
        key = re.sub(r"\d+", "#", _PLACE.sub("@", f.body))
        alike.setdefault(key, []).append(f)
    lines = []
    for group in alike.values():
        first = _plain(group[0].body)
        if len(group) == 1:
            lines.append(first + _claims_of(group))
            continue
        places = list(dict.fromkeys(p for f in group for p in _PLACE.findall(f.body)))
        shown = ", ".join(places[:SHOWN_PLACES]) + (
            f" and {len(places) - SHOWN_PLACES} more" if len(places) > SHOWN_PLACES else "")
        what = re.sub(r":\s*:", ":", _PLACE.sub("", first)) if places else first
        n = sum(f.times for f in group)
        lines.append(f"{' '.join(what.split())} ({n} times{': ' + shown if shown else ''})"
                     f"{_claims_of(group)}")
    return lines


def _plain(text: str) -> str:
    """``text`` with a ``{...}`` literal shown as its values (a note never shows a raw dict)."""
    start, end = text.find("{'"), text.rfind("}")
    if start < 0 or end < start:
        return text
    try:
        value = ast.literal_eval(text[start:end + 1])
    except (ValueError, SyntaxError):
        return text.replace("{'", "(").replace("'}", ")")
    shown = ", ".join(str(v) for v in value.values()) if isinstance(value, dict) else str(value)
    return f"{text[:start]}{shown}{text[end + 1:]}"
