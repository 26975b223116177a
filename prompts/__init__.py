"""Prompt templates as data (STYLE.md §4) and the one function that loads them.

Each framework has a folder ``prompts/<set>/`` with ``prompts.yaml``: a ``version`` string (recorded
in every run's metadata) and named templates with ``system`` and ``user`` parts using ``{named}``
placeholders. Label instructions per task live in ``prompts/labels.yaml``. Rendering fails loudly
on a missing placeholder; values are inserted verbatim (never re-parsed), so evidence text with
braces is safe.
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


def _read_all() -> dict[str, PromptSet]:
    sets = {}
    for path in sorted(PROMPTS_DIR.glob("*/prompts.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        name = path.parent.name
        sets[name] = PromptSet(name=name, version=str(data.pop("version")), templates=data)
    return sets


# Read once at import: nodes run on the event loop and must not do file I/O per call (the
# LangGraph server flags blocking calls in async code).
_PROMPT_SETS = _read_all()
_LABELS = yaml.safe_load((PROMPTS_DIR / "labels.yaml").read_text(encoding="utf-8"))


def load_prompts(name: str) -> PromptSet:
    """The prompt set in ``prompts/<name>/prompts.yaml``."""
    if name not in _PROMPT_SETS:
        raise ConfigError(f"unknown prompt set {name!r}", f"known: {', '.join(_PROMPT_SETS)}")
    return _PROMPT_SETS[name]


def label_instructions() -> dict[str, dict[str, str]]:
    """Per label set: ``subject``, ``task`` (what to decide) and ``labels`` (how to answer)."""
    return dict(_LABELS["label_sets"])
