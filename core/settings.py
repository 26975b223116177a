"""Declaring, coercing and validating Context fields in one place; masking credentials in URLs.

A Context field is declared with :func:`knob`: its default, the description Studio shows, and what
the rest of the project needs to know about it, kept in the dataclass field's ``metadata``:

``"range": (low, high)``
    Allowed numeric range (``None`` = unbounded on that side; ``"open_low": True`` excludes low).
    Every ``int``/``float`` field declares one; NaN and infinities are always refused.
``"choices": (...)``
    Allowed names of a ``str`` field (a ``Literal[...]`` annotation gives them without it).
``"operator": True``
    Operator-only: the field names a process, URL, host, file, folder, credential or a service
    the server contacts. Only the server's environment/config sets it; a client's run may not
    (``factdebate.core.context.check_client_settings``). Other helpers rely on this exact key.
``"model": True``
    The field holds a model spec; a client's value must be on the operator's allow-list.
``"env": "NAME"``
    Environment variable that fills the field while it holds its default.

:func:`check_fields` coerces values given as text (``--set``, a server's JSON, the environment) to
the field's type and checks types, ranges and choices, naming the field and the allowed values.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import MISSING, Field, asdict, fields
from functools import cache
from typing import Any, Literal, get_args, get_origin

from factdebate.core import secrets_filter
from factdebate.core.errors import ConfigError
from factdebate.core.secrets_filter import mask_url

Number = int | float
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def knob(
    default: Any,
    description: str,
    *,
    env: str | None = None,
    operator: bool = False,
    model: bool = False,
    range: tuple[Number | None, Number | None] | None = None,  # noqa: A002 - the metadata key
    open_low: bool = False,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """A dataclass field with a default, a description and the metadata described above."""
    from dataclasses import field

    meta: dict[str, Any] = {"description": description}
    extras = {"env": env, "operator": operator, "model": model, "range": range,
              "open_low": open_low, "choices": choices}
    meta |= {k: v for k, v in extras.items() if v}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


def default_of(f: Field[Any]) -> Any:
    """The declared default of a dataclass field."""
    if f.default is not MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc,operator]


@cache
def field_types(cls: type) -> dict[str, Any]:
    """Field name -> resolved annotation of the dataclass ``cls`` (string annotations resolved)."""
    return typing.get_type_hints(cls)


def choices_of(f: Field[Any], hint: Any) -> tuple[str, ...] | None:
    """Allowed names of a field: its ``choices`` metadata or the values of its ``Literal``."""
    if f.metadata.get("choices"):
        return tuple(f.metadata["choices"])
    if get_origin(hint) is Literal:
        return tuple(get_args(hint))
    return None


def describe_range(f: Field[Any], hint: Any) -> str:
    """``use an integer from 1 to 10`` / ``use a number above 0 and at most 600`` ..."""
    low, high = f.metadata.get("range") or (None, None)
    what = "an integer" if hint is int else "a number"
    lo, hi = (f"{b:g}" if b is not None else None for b in (low, high))
    if f.metadata.get("open_low") and lo is not None:
        return f"use {what} above {lo}" + (f" and at most {hi}" if hi is not None else "")
    if lo is not None and hi is not None:
        return f"use {what} from {lo} to {hi}"
    if lo is not None:
        return f"use {what} of {lo} or more"
    return f"use {what} of at most {hi}" if hi is not None else f"use {what}"


def coerce(name: str, value: Any, hint: Any) -> Any:
    """``value`` as the field's type; text (``--set``, JSON, environment) is parsed.

    Raises ``ConfigError`` naming the field, never a ``TypeError``/``ValueError``.
    """
    kind = {bool: "true or false", int: "an integer", float: "a number", str: "text"}
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
    elif hint in (int, float):
        if isinstance(value, bool):
            pass  # True is an int to Python, not a count or a threshold
        elif isinstance(value, float) and hint is int and value.is_integer():
            return int(value)
        elif isinstance(value, hint) or (hint is float and isinstance(value, int)):
            return hint(value)
        elif isinstance(value, str):
            try:
                return hint(value.strip())
            except ValueError:
                pass
    elif hint is str or get_origin(hint) is Literal:
        if isinstance(value, str):
            return value
        hint = str
    elif get_origin(hint) is list:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return list(value)
        raise ConfigError(f"{name}={value!r} is not a list of names",
                          f"give a comma-separated list, e.g. {name}=a,b")
    else:
        return value  # a type this module does not know: left to the class's own checks
    raise ConfigError(f"{name}={value!r} is not {kind[hint]}", f"give {name} as {kind[hint]}")


def check_value(f: Field[Any], value: Any, hint: Any) -> None:
    """Range (numbers, NaN/inf refused) and choices of one coerced value."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{f.name}={value} is out of range", describe_range(f, hint))
    bounds = f.metadata.get("range")
    if bounds and isinstance(value, int | float):
        low, high = bounds
        too_low = low is not None and (value <= low if f.metadata.get("open_low") else value < low)
        if too_low or (high is not None and value > high):
            raise ConfigError(f"{f.name}={value} is out of range", describe_range(f, hint))
    allowed = choices_of(f, hint)
    if allowed and value not in allowed:
        raise ConfigError(f"unknown {f.name} {value!r}", f"use {', '.join(map(str, allowed))}")


def check_fields(obj: Any) -> None:
    """Coerce every field of the dataclass instance ``obj`` to its type, then check it."""
    hints = field_types(type(obj))  # type: ignore[arg-type]  # a class is hashable
    for f in fields(obj):
        hint = hints.get(f.name)
        value = coerce(f.name, getattr(obj, f.name), hint)
        check_value(f, value, hint)
        setattr(obj, f.name, value)
    secrets_filter.register_urls(getattr(obj, f.name) for f in fields(obj))  # credentials of URLs


def mask_values(value: Any) -> Any:
    """``value`` (str, list, dict, nested) with :func:`mask_url` applied to every string."""
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, Mapping):
        return {k: mask_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_values(v) for v in value]
    return value


def masked_context(context: Any) -> dict[str, Any]:
    """The dataclass ``context`` as a dict for run.json/metadata/reports, credentials masked."""
    return mask_values(asdict(context))
