"""The budgets a benchmark states, as one structure, and the verdict ``factdebate bench`` exits with.

Every benchmark lists its budgets under ``budgets`` in ``OUT/<name>.json``, one dict each:

* ``name`` - a short id (``pages_per_s``, ``rss_growth``), unique within the bench;
* ``budget`` - what it asks, in words;
* ``measured`` - the figure it is judged on (a number, or text where the figure is composite;
  ``value`` then holds the number, where there is one);
* ``limit`` and ``op`` - the bound it is compared with (``<=``, ``>=``, ``<``, ``==``; None where
  the judgement is not one comparison);
* ``judged`` - whether this run can judge it, and ``why_not_judged`` when it cannot (a run too
  short or too small to say anything about the budget, a figure not measured);
* ``met`` - True or False when judged, None when not;
* ``judged_when_missed`` (where set) - a miss is judged even where a pass is not (a small run
  already over a memory limit); ``why_not_judged`` then says what a pass needs;
* ``legacy`` (where set) - the budget's key in the bench's ``budget_met`` dict, where that differs
  from ``name``.

A budget is *missed* only when it is judged and not met. :func:`exit_code` turns the budgets of
the benches a command ran into its exit code: ``BUDGET_MISSED_EXIT`` (1) when any judged budget
is missed, else 0 (budgets not judged say so and do not fail the run; bad input stays exit 2).
``--budget NAME=LIMIT`` re-judges a budget with a numeric figure against another limit
(:func:`override_limits`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

BUDGET_MISSED_EXIT = 1
"""Exit code of ``factdebate bench`` when a judged budget is missed."""
OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def budget(name: str, text: str, measured: Any, op: str | None = None, limit: Any = None, *,
           met: bool | None = None, why_not_judged: str = "", judged_when_missed: bool = False,
           unit: str = "") -> dict[str, Any]:
    """One budget entry.

    Judged unless ``why_not_judged`` is given or nothing was measured (``measured`` None). When
    judged, ``met`` is ``measured op limit`` unless the caller passes ``met`` (a judgement that is
    not one comparison, e.g. over several sizes). ``judged_when_missed``: a run that cannot judge
    the budget in general still judges a miss (a small run already over a memory limit a larger
    one would pass through too).
    """
    if op is not None and op not in OPS:
        raise ValueError(f"unknown budget operator {op!r}")
    if met is None and op is None and measured is not None and not why_not_judged:
        raise ValueError(f"budget {name!r} is judged but has neither op nor met")
    entry = {"name": name, "budget": text, "measured": measured, "limit": limit, "op": op,
             "unit": unit, "judged": False, "met": None,
             "why_not_judged": why_not_judged or ("not measured" if measured is None else "")}
    if judged_when_missed:
        entry["judged_when_missed"] = True
    _judge(entry, met)
    return entry


def _judge(entry: dict[str, Any], met: bool | None = None) -> None:
    """Set ``judged`` and ``met`` of ``entry`` from its figure, limit and ``why_not_judged``."""
    figure = entry.get("value", entry["measured"])
    if figure is None:
        entry.update(judged=False, met=None)
        return
    if met is None and entry.get("op") is not None:
        met = bool(OPS[entry["op"]](figure, entry["limit"]))
    if not entry.get("why_not_judged") or (entry.get("judged_when_missed") and met is False):
        entry.update(judged=True, met=bool(met))
    else:
        entry.update(judged=False, met=None)


def overall(budgets: Iterable[Mapping[str, Any]]) -> bool | None:
    """False when a judged budget is missed; True when every budget is judged and met; None when
    none is missed but some are not judged (or there are none)."""
    entries = list(budgets)
    if any(b.get("judged", b.get("met") is not None) and b.get("met") is False for b in entries):
        return False
    if entries and all(b.get("met") is True for b in entries):
        return True
    return None


def missed(budgets: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The judged budgets not met."""
    return [b for b in budgets if b.get("judged", True) and b.get("met") is False]


def exit_code(results: Iterable[Mapping[str, Any]]) -> int:
    """``BUDGET_MISSED_EXIT`` when any result has a judged budget that is missed, else 0."""
    return BUDGET_MISSED_EXIT if any(missed(r.get("budgets") or []) for r in results) else 0


def _shown(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, int):
        text = f"{value:,}"
    elif isinstance(value, float):
        text = f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    else:
        return str(value)  # a figure in words carries its own unit
    return f"{text} {unit}".strip()


def verdict_text(entry: Mapping[str, Any]) -> str:
    """``met``, ``MISSED`` or ``not judged: <why>``."""
    if not entry.get("judged", entry.get("met") is not None):
        return f"not judged: {entry.get('why_not_judged') or 'not measured'}"
    return "met" if entry.get("met") else "MISSED"


def budget_item(entry: Mapping[str, Any]) -> str:
    """``name measured M (limit OP L): verdict`` of one budget."""
    unit = entry.get("unit", "")
    limit = "" if entry.get("op") is None else \
        f" (limit {entry['op']} {_shown(entry.get('limit'), unit)})"
    return f"{entry.get('name')} measured {_shown(entry.get('measured'), unit)}{limit}: " \
        f"{verdict_text(entry)}"


def budget_line(bench: str, entry: Mapping[str, Any]) -> str:
    """One line per budget: ``bench NAME: name measured M (limit OP L): verdict``."""
    return f"bench {bench}: {budget_item(entry)}"


def summary_line(bench: str, budgets: list[Mapping[str, Any]]) -> str:
    """``bench NAME: N budgets: M met, K missed, J not judged``."""
    judged = [b for b in budgets if b.get("judged", b.get("met") is not None)]
    bad = missed(budgets)
    return (f"bench {bench}: {len(budgets)} budget{'s' if len(budgets) != 1 else ''}: "
            f"{len(judged) - len(bad)} met, {len(bad)} missed, "
            f"{len(budgets) - len(judged)} not judged")


def parse_overrides(raw: Iterable[str]) -> dict[str, float]:
    """``NAME=LIMIT`` strings as ``{name: limit}``; ValueError naming the first malformed one."""
    limits: dict[str, float] = {}
    for item in raw:
        name, eq, value = item.partition("=")
        try:
            limit = float(value)
        except ValueError:
            limit = math.nan
        if not eq or not name.strip() or not math.isfinite(limit):
            raise ValueError(f"--budget {item!r} is not NAME=NUMBER")
        limits[name.strip()] = limit
    return limits


def override_limits(result: dict[str, Any], limits: Mapping[str, float]
                    ) -> tuple[set[str], set[str]]:
    """Re-judge the budgets of ``result`` named in ``limits`` against those limits (each keeps
    its default as ``limit_default``) and refresh ``budget_met``.

    Only a budget with a numeric figure (or none) and an ``op`` takes another limit; one that is
    not judged stays not judged, unless it judges a miss and the new limit is missed. Returns the
    names applied and the names of budgets that take no other limit (left as they were).
    """
    applied: set[str] = set()
    refused: set[str] = set()
    for entry in result.get("budgets") or []:
        if entry.get("name") not in limits:
            continue
        figure = entry.get("value", entry.get("measured"))
        if entry.get("op") is None or not (_number(figure) or figure is None):
            refused.add(entry["name"])
            continue
        entry.setdefault("limit_default", entry.get("limit"))
        entry["limit"] = limits[entry["name"]]
        _judge(entry)
        applied.add(entry["name"])
    if applied:
        result["budget_met"] = legacy_met(result.get("budget_met"), result["budgets"])
    return applied, refused


def legacy_met(shape: Any, budgets: list[Mapping[str, Any]]) -> Any:
    """``budget_met`` in the shape a bench has always written it: a dict of verdicts by budget
    name (or the entry's ``legacy`` key; one level of nesting spelled ``outer.inner``) where it
    was a dict, else :func:`overall`. A budget not judged is None there."""
    if not isinstance(shape, dict):
        return overall(budgets)
    by_name = {b.get("legacy", b.get("name")): b.get("met") for b in budgets}

    def pick(key: str, old: Any) -> Any:
        return by_name[key] if key in by_name else old

    return {key: ({k: pick(f"{key}.{k}", v) for k, v in value.items()}
                  if isinstance(value, dict) else pick(key, value))
            for key, value in shape.items()}
