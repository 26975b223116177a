"""Task label sets and robust verdict parsing.

A label set names the labels a task accepts, their synonyms, and the structured-output schema the
models are asked to fill. ``parse_label`` maps free text onto the set and says *how* it did:
``explicit`` (a ``label:`` field, a JSON ``label``, or a last line that is a label), ``guessed``
(the last label mentioned anywhere - flagged in the output), or ``failed`` (label ``None``; never an
invented label). Only the model's own answer is ever parsed: retrieved documents are never fed to
the parser, so a document that "forges" a verdict cannot change the parsed label.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from pydantic import BaseModel, Field, create_model

from factdebate.core.errors import ConfigError
from factdebate.core.registry import Registry

NEI = "NOT ENOUGH INFO"


@dataclass(frozen=True)
class LabelSet:
    """Labels of one task family."""

    name: str
    labels: tuple[str, ...]
    synonyms: dict[str, str] = field(default_factory=dict)
    """Upper-cased alternative spelling -> canonical label."""
    case_sensitive_output: bool = False
    """Keep labels as written (PubMedQA's lower-case yes/no/maybe)."""

    def normalise(self, text: str) -> str | None:
        """Canonical label for a whole string (``"Supported."`` -> ``SUPPORTS``) or None."""
        key = re.sub(r"[^A-Z0-9 ]+", " ", text.upper())
        key = re.sub(r"\s+", " ", key).strip()
        for label in self.labels:
            if key == label.upper():
                return label
        return self.synonyms.get(key)

    def vocabulary(self) -> list[tuple[str, str]]:
        """(surface form, label) pairs, longest first, for scanning free text."""
        pairs = [(lab.upper(), lab) for lab in self.labels] + list(self.synonyms.items())
        return sorted(pairs, key=lambda p: -len(p[0]))


_CLAIM_SYNONYMS = {
    "SUPPORT": "SUPPORTS", "SUPPORTED": "SUPPORTS", "TRUE": "SUPPORTS", "CORRECT": "SUPPORTS",
    "REFUTE": "REFUTES", "REFUTED": "REFUTES", "FALSE": "REFUTES", "INCORRECT": "REFUTES",
    "NOT SUPPORTED": "REFUTES", "CONTRADICTS": "REFUTES", "CONTRADICT": "REFUTES",
}
_NEI_SYNONYMS = {
    "NEI": NEI, "NOT ENOUGH INFORMATION": NEI, "NOT ENOUGH EVIDENCE": NEI,
    "INSUFFICIENT EVIDENCE": NEI, "INSUFFICIENT INFORMATION": NEI, "NOT ENOUGH INFO": NEI,
}

LABEL_SETS: Registry[LabelSet] = Registry("label set")
LABEL_SETS.register(
    "fever",
    LabelSet("fever", ("SUPPORTS", "REFUTES", NEI), {**_CLAIM_SYNONYMS, **_NEI_SYNONYMS}),
    aliases=("3way", "feverous3"),
)
LABEL_SETS.register(
    "binary",
    LabelSet("binary", ("SUPPORTS", "REFUTES"), dict(_CLAIM_SYNONYMS)),
    aliases=("feverous", "faviq", "hover", "fire"),
)
LABEL_SETS.register(
    "averitec",
    LabelSet(
        "averitec",
        ("SUPPORTS", "REFUTES", NEI, "CONFLICTING"),
        {
            **_CLAIM_SYNONYMS, **_NEI_SYNONYMS,
            "CONFLICTING EVIDENCE": "CONFLICTING", "CHERRYPICKING": "CONFLICTING",
            "CONFLICTING EVIDENCE CHERRYPICKING": "CONFLICTING", "CHERRY PICKING": "CONFLICTING",
        },
    ),
)
LABEL_SETS.register(
    "medqa",
    LabelSet("medqa", ("A", "B", "C", "D"), {f"OPTION {x}": x for x in "ABCD"}),
)
LABEL_SETS.register(
    "pubmedqa",
    LabelSet("pubmedqa", ("yes", "no", "maybe"), {}, case_sensitive_output=True),
)

LABEL_SETS.register(
    "open_qa",
    LabelSet("open_qa", (), {}, case_sensitive_output=True),
    aliases=("open", "qa_conflict"),
)
"""Free-form answers (RAMDocs): no labels; frameworks that return ``answers`` (MADAM-RAG) use it."""


def get_label_set(name: str) -> LabelSet:
    """The label set called ``name`` (aliases allowed; unknown names suggest close ones)."""
    return LABEL_SETS.get(name)


@dataclass(frozen=True)
class ParsedLabel:
    """Result of mapping model text onto a label set."""

    label: str | None
    how: Literal["structured", "explicit", "guessed", "failed"]
    citations: tuple[str, ...] = ()
    """Passage numbers the reply cited, as written (checked against what it was shown by the
    node: ``nodes/citations.py``)."""


_FIELD_RE = re.compile(
    r"(?im)^\W*(?:final\s+)?(?:label|verdict|answer|decision|prediction)\W*[:=\-]\s*(.+?)\s*$"
)


def parse_label(text: str, label_set: LabelSet) -> ParsedLabel:
    """Map free model text onto ``label_set`` (see the module docstring for the order)."""
    text = text or ""
    # the last JSON object is the model's own answer; one it quoted earlier (e.g. a forged
    # verdict inside a document) must not win
    for obj in reversed(_json_objects(text)):
        value = obj.get("label") if isinstance(obj, dict) else None
        if isinstance(value, str) and (lab := label_set.normalise(value)):
            return ParsedLabel(lab, "explicit")
    fields_found = [label_set.normalise(m.group(1)) for m in _FIELD_RE.finditer(text)]
    if fields_found and fields_found[-1]:
        return ParsedLabel(fields_found[-1], "explicit")
    lines = [ln.strip(" *#`'\".:-") for ln in text.strip().splitlines() if ln.strip(" *#`'\".:-")]
    if lines and (lab := label_set.normalise(lines[-1])):
        return ParsedLabel(lab, "explicit")
    last = _last_mention(text, label_set)
    if last:
        return ParsedLabel(last, "guessed")
    return ParsedLabel(None, "failed")


def _json_objects(text: str) -> list[object]:
    out = []
    for match in re.finditer(r"\{[^{}]*\}", text):
        try:
            out.append(json.loads(match.group(0)))
        except ValueError:
            continue
    return out


def _last_mention(text: str, label_set: LabelSet) -> str | None:
    """The label whose surface form occurs last; longer forms mask the shorter ones inside them."""
    upper = f" {re.sub(r'[^A-Z0-9]+', ' ', text.upper())} "
    best: tuple[int, str] | None = None
    masked = upper
    for surface, label in label_set.vocabulary():
        needle = f" {surface} "
        for m in re.finditer(re.escape(needle), masked):
            if best is None or m.start() > best[0]:
                best = (m.start(), label)
        masked = masked.replace(needle, " " + "#" * (len(needle) - 2) + " ")
    return best[1] if best else None


class QueryOut(BaseModel):
    """Structured output of query formulation."""

    query: str = Field(description="One search query, at most 20 words.")


@cache
def verdict_schema(label_set_name: str) -> type[BaseModel]:
    """A ``Verdict`` model whose ``label`` is constrained to the label set's labels."""
    labels = get_label_set(label_set_name).labels
    if not labels:
        raise ConfigError(
            f"label set {label_set_name!r} has no labels to give a verdict on",
            "use a framework that returns free-form answers (madam_rag) or a labelled task",
        )
    return create_model(  # type: ignore[call-overload,no-any-return]
        f"Verdict_{label_set_name}",
        __doc__="A reasoned verdict on the claim.",
        reasoning=(str, Field(description="Short reasoning grounded in the evidence.")),
        label=(Literal[labels],  # type: ignore[arg-type]  # a Literal built at run time
               Field(description="One label from the allowed set.")),
    )
