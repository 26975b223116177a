"""Prompt templates as data (STYLE.md §4) and the one function that loads them.

Each framework has a folder ``prompts/<set>/`` with ``prompts.yaml``: a ``version`` string (recorded
in every run's metadata) and named templates with ``system`` and ``user`` parts using ``{named}``
placeholders. Label instructions per task live in ``prompts/labels.yaml``. Rendering fails loudly
on a missing placeholder; values are inserted verbatim (never re-parsed), so evidence text with
braces is safe.

A framework that lives outside the package brings its own folder of sets and adds it once with
:func:`add_prompt_sets` (docs/extending.md); its sets are checked as the built-in ones are and
may not take a name already in use.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from factdebate.core.errors import ConfigError

PROMPTS_DIR = Path(__file__).parent


@dataclass(frozen=True)
class PromptSet:
    """The templates of one framework."""

    name: str
    version: str
    templates: dict[str, dict[str, str]]

    def render(self, template: str, **values: Any) -> list[BaseMessage]:
        """System + user messages of ``template`` with ``values`` filled in."""
        if template not in self.templates:
            raise ConfigError(
                f"prompt set {self.name!r} has no template {template!r}",
                f"known: {', '.join(sorted(self.templates))}",
            )
        parts = self.templates[template]
        messages: list[BaseMessage] = []
        if parts.get("system"):
            messages.append(SystemMessage(_fill(parts["system"], values, template)))
        messages.append(HumanMessage(_fill(parts["user"], values, template)))
        return messages


@lru_cache(maxsize=256)
def _placeholders(text: str) -> frozenset[str]:
    """The ``{named}`` placeholders of a template text (parsed once per text)."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(text) if name)


def _fill(text: str, values: dict[str, Any], template: str) -> str:
    missing = _placeholders(text) - values.keys()
    if missing:
        raise KeyError(f"template {template!r} needs {sorted(missing)}")
    return text.format_map(values)


def _read_set(path: Path) -> PromptSet:
    """The set in ``<set>/prompts.yaml``: a mapping with a ``version`` whose other entries are
    templates (``user`` and an optional ``system`` text), tables (``formats``) or texts.

    Raises:
        ConfigError: The file is unreadable, no YAML mapping, lacks ``version`` or holds an
            entry that is neither mapping nor text, or a template part that is no text (named).
    """
    name = path.parent.name
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"prompt set {name!r} in {path} cannot be read: {problem}",
                          "fix the file (UTF-8 YAML)") from exc
    if not isinstance(data, dict) or "version" not in data:
        raise ConfigError(f"prompt set {name!r} in {path} is no YAML mapping with a 'version'",
                          "start the file with version: <text>, then the named templates")
    templates = {k: v for k, v in data.items() if k != "version"}
    for key, entry in templates.items():
        if not isinstance(entry, dict | str):
            raise ConfigError(f"prompt set {name!r} in {path}: entry {key!r} is neither a "
                              "mapping nor a text", "give a template as system: and user: texts")
        parts = [p for p in ("system", "user")
                 if isinstance(entry, dict) and p in entry and not isinstance(entry[p], str)]
        if parts:
            raise ConfigError(f"prompt set {name!r} in {path}: {key}.{parts[0]} is no text",
                              "write the template part as a YAML string")
    return PromptSet(name=name, version=str(data["version"]), templates=templates)


def _read_folder(folder: Path) -> dict[str, PromptSet]:
    """Every ``<set>/prompts.yaml`` directly under ``folder``, by set name."""
    return {path.parent.name: _read_set(path)
            for path in sorted(folder.glob("*/prompts.yaml"))}


# Read once at import: nodes run on the event loop and must not do file I/O per call (the
# LangGraph server flags blocking calls in async code).
_PROMPT_SETS = _read_folder(PROMPTS_DIR)
_SOURCES = {name: PROMPTS_DIR / name for name in _PROMPT_SETS}
"""Where each set was read from: adding the same folder twice (a module imported under two names,
as langgraph-api imports a graph file) is no clash."""
_LABELS = yaml.safe_load((PROMPTS_DIR / "labels.yaml").read_text(encoding="utf-8"))


def add_prompt_sets(folder: str | Path) -> list[str]:
    """Add every ``<set>/prompts.yaml`` under ``folder`` to the known sets; returns their names.

    Call it once, at import of the module that registers a framework of your own (not in a node:
    it reads files). The sets are checked as the built-in ones are; all of the folder's sets are
    added or none.

    Raises:
        ConfigError: ``folder`` holds no set, a set is malformed, or a set name is taken by a set
            read from another folder (the built-in ones included).
    """
    folder = Path(folder).expanduser().resolve()
    sets = _read_folder(folder) if folder.is_dir() else {}
    if not sets:
        raise ConfigError(f"no prompt set in {folder}",
                          "put each set in <folder>/<set name>/prompts.yaml")
    for name in sets:
        known = _SOURCES.get(name)
        if known is not None and known.resolve() != folder / name:
            raise ConfigError(f"prompt set {name!r} in {folder / name} clashes with the set "
                              f"of that name in {known}", "rename its folder")
    _PROMPT_SETS.update(sets)
    _SOURCES.update({name: folder / name for name in sets})
    return list(sets)


def load_prompts(name: str) -> PromptSet:
    """The prompt set in ``prompts/<name>/prompts.yaml``."""
    if name not in _PROMPT_SETS:
        raise ConfigError(f"unknown prompt set {name!r}", f"known: {', '.join(_PROMPT_SETS)}")
    return _PROMPT_SETS[name]


def label_instructions() -> dict[str, dict[str, str]]:
    """Per label set: ``subject``, ``task`` (what to decide) and ``labels`` (how to answer)."""
    return dict(_LABELS["label_sets"])
