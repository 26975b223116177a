"""A small generic registry: names and aliases, duplicate rejection, "did you mean", lazy imports.

Frameworks, retriever backends, model providers, scripted scenarios (and later datasets and metrics)
are registered by name; the CLI, the runner and ``ls`` read them, so nothing dispatches on
``if name == ...`` chains.

Code outside the package registers its own (a framework of a researcher's, docs/extending.md) from
a *plugin module*: a module that calls ``register`` when imported. :func:`load_plugins` imports the
modules named in ``$FACTDEBATE_PLUGINS`` and by the ``factdebate.plugins`` entry-point group, once
per process, before any registry first lists its names or misses one.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from factdebate.core.errors import ConfigError, FactDebateError

T = TypeVar("T")

PLUGINS_ENV = "FACTDEBATE_PLUGINS"
"""Environment variable naming plugin modules, comma-separated (``my_protocol,lab.graphs``)."""
PLUGINS_GROUP = "factdebate.plugins"
"""Entry-point group of installed plugin modules (``name = "module"``; the name is free)."""

_plugins = {"loaded": False}


def plugin_modules() -> list[str]:
    """The plugin modules to import: ``$FACTDEBATE_PLUGINS``'s, then the entry-point group's."""
    named = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    installed = [p.value for p in importlib.metadata.entry_points(group=PLUGINS_GROUP)]
    return list(dict.fromkeys([*named, *installed]))


def import_plugin(module: str) -> None:
    """Import the plugin module ``module`` (it registers what it adds when imported).

    Raises:
        ConfigError: It cannot be imported or fails at import (its error named, one line).
    """
    try:
        importlib.import_module(module)
    except FactDebateError:
        raise
    except ImportError as exc:
        raise ConfigError(
            f"plugin module {module!r} cannot be imported: {exc}",
            f"put its folder on PYTHONPATH or install it; ${PLUGINS_ENV} lists module names, "
            "comma-separated") from exc
    except Exception as exc:  # noqa: BLE001  # a researcher's module: any error, one line
        raise ConfigError(f"plugin module {module!r} failed at import: "
                          f"{type(exc).__name__}: {exc}", "fix the module") from exc


def load_plugins() -> None:
    """Import every plugin module (:func:`plugin_modules`) once per process.

    A module that fails raises (:func:`import_plugin`) and is tried again at the next call; a
    plugin that reads a registry while it is imported does not load the plugins again.
    """
    if _plugins["loaded"]:
        return
    _plugins["loaded"] = True
    try:
        for module in plugin_modules():
            import_plugin(module)
    except BaseException:
        _plugins["loaded"] = False
        raise


@dataclass
class Entry(Generic[T]):
    """One registered object (or a lazy ``"module:attr"`` reference to it) plus free metadata."""

    name: str
    target: T | str
    meta: dict[str, Any] = field(default_factory=dict)

    def load(self) -> T:
        """Return the object, importing it the first time if it was registered lazily."""
        if isinstance(self.target, str) and ":" in self.target:
            module, _, attr = self.target.partition(":")
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
            self.target = obj
        return self.target  # type: ignore[return-value]


class Registry(Generic[T]):
    """Named objects of one kind; ``kind`` names them in error messages."""

    def __init__(self, kind: str, *, entry_points: str = "") -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}
        self._aliases: dict[str, str] = {}
        self._group = entry_points
        """An entry-point group whose entries register here on the first miss (packages above
        the core register themselves without the core importing them)."""

    def _load_entry_points(self) -> None:
        """Import the plugin modules (:func:`load_plugins`, once per process), then register
        this registry's entry-point group once (lazy ``"module:attr"`` entries)."""
        load_plugins()
        group, self._group = self._group, ""
        if not group:
            return
        for point in importlib.metadata.entry_points(group=group):
            if point.name not in self._entries and point.name not in self._aliases:
                self._entries[point.name] = Entry(point.name, point.value, {"entry_point": group})

    def register(
        self, name: str, target: T | str, *, aliases: tuple[str, ...] = (), **meta: Any
    ) -> None:
        """Register ``target`` under ``name``; a name or alias already taken is an error."""
        for key in (name, *aliases):
            if key in self._entries or key in self._aliases:
                raise ValueError(f"{self.kind} {key!r} is already registered")
        self._entries[name] = Entry(name, target, dict(meta))
        for alias in aliases:
            self._aliases[alias] = name

    def decorator(self, name: str, **meta: Any) -> Callable[[T], T]:
        """Decorator form of :meth:`register`."""

        def wrap(obj: T) -> T:
            self.register(name, obj, **meta)
            return obj

        return wrap

    def resolve(self, name: str) -> str:
        """Canonical name for ``name`` or an alias; unknown names raise with suggestions."""
        if name in self._entries:
            return name
        if name not in self._aliases:
            self._load_entry_points()
        if name in self._entries:
            return name
        if name in self._aliases:
            return self._aliases[name]
        known = sorted(self._entries)
        close = difflib.get_close_matches(name, [*known, *self._aliases], n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
        raise ConfigError(
            f"unknown {self.kind} {name!r}", f"{hint}known: {', '.join(known)}"
        )

    def entry(self, name: str) -> Entry[T]:
        """The entry for ``name`` (aliases allowed)."""
        return self._entries[self.resolve(name)]

    def get(self, name: str) -> T:
        """The registered object for ``name``, loading it if lazy."""
        return self.entry(name).load()

    def aliases_of(self, name: str) -> list[str]:
        """The aliases registered for ``name`` (its canonical name or an alias)."""
        key = self.resolve(name)
        return [alias for alias, target in self._aliases.items() if target == key]

    def names(self) -> list[str]:
        """Canonical names in registration order (entry points after the built-in ones)."""
        self._load_entry_points()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries and name not in self._aliases:
            self._load_entry_points()
        return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[Entry[T]]:
        self._load_entry_points()
        return iter(self._entries.values())
