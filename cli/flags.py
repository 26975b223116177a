"""Numeric and path flags checked before anything runs.

A flag the user typed is never replaced by its default: ``--concurrency 0`` and ``--workers 0`` ran
with 4 and 1 (``value or default``), ``--out ""`` wrote into the current folder (``Path("")`` is
``.``), ``check --rounds 0`` was dropped. Each is one line naming the flag, the value and the range.
"""

from __future__ import annotations

from pathlib import Path

from factdebate.core.errors import InputError


def in_range(flag: str, value: float | None, low: float, high: float | None = None,
             default: object = None) -> None:
    """Refuse ``value`` (a number the user gave for ``flag``) outside ``low``..``high``.

    ``None`` (the flag was not given) passes: its default applies.
    """
    if value is None or (value >= low and (high is None or value <= high)):
        return
    kind = "an integer" if isinstance(value, int) else "a number"
    span = f"from {low} to {high}" if high is not None else f"of {low} or more"
    tail = f" (default {default})" if default is not None else ""
    raise InputError(f"{flag} {value} is out of range", f"use {kind} {span}{tail}")


def place(flag: str, raw: str | None, what: str = "folder") -> Path | None:
    """The path the user gave for ``flag``, or None if not given; an empty or blank one is refused
    (``Path("")`` would be the current folder)."""
    if raw is None:
        return None
    if not raw.strip():
        raise InputError(f"{flag} is empty", f"give a {what} path, or drop {flag}")
    return Path(raw)


def required_place(flag: str, raw: str, what: str = "folder") -> Path:
    """As :func:`place` for an argument that must be given."""
    if not raw.strip():
        raise InputError(f"{flag} is empty", f"give a {what} path")
    return Path(raw)
