"""Citations: which passages a reply relies on, and the evidence a verdict rests on.

Every reply that gives a label or an answer cites the passages it was shown by their numbers in
the prompt (``<document n="3" ...>``), in the same structured reply (``citations: [3]``) or, in
free text, as ``[3]`` markers. A node checks the numbers against what it showed
(``nodes/citations.py``): an unshown number is dropped and flagged (a hallucinated citation), a
labelled reply with passages shown and nothing cited is flagged as uncited. What survives is one
:class:`Citation` record per reply in the state's ``citations`` list.

The evidence behind a verdict (:func:`evidence_behind_verdict`) is what the *deciding* replies
cited: the deciding role (judge, summariser, aggregator, a baseline's final answer) and the last
reply of every agent whose label (or answers) became the verdict. Retrieved but uncited passages
are kept apart (``retrieved_evidence``) and never called cited.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Annotated, Any, NotRequired

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model
from typing_extensions import TypedDict

from factdebate.core.labels import NEI
from factdebate.core.schema_docs import described

PASSAGE_IDS = ("page", "sentences", "pool")
"""Keys of an imported passage kept on its citation (``tools/sources``: the page id as the
dataset's gold names it, the sentence ids it holds, its knowledge-store pool): evidence scoring
matches gold sentences by them (``evaluation/evidence_metrics.py``)."""


@described
class Evidence(TypedDict):
    """One retrieved passage, as every retriever returns it (tools/base.py).

    Defined here, beside :class:`CitedPassage` that extends it; ``core/state.py`` (which the
    rest of the code imports it from) builds on this module.
    """

    id: str
    """Stable id of the passage in its source (corpus doc_id, URL, ...)."""
    title: str
    """Page or document title."""
    text: str
    """Passage text handed to the model (always delimited as data in prompts)."""
    source: str
    """Backend that produced it: ``milvus``, ``keyword``, ``tavily``, ``item`` ..."""
    url: str
    """Link where one exists, else ``""``."""
    score: float
    """Backend's relevance score (higher is better; scales differ across backends)."""


@described
class CitedPassage(Evidence):
    """A passage with who cited it: an :class:`Evidence` plus ``cited_by`` and ``stance``."""

    cited_by: list[str]
    """Who cited it: a role (``judge``) or ``agent@round`` (``rag@2``)."""
    stance: str
    """The stance of the replies that cited it: ``supports``, ``refutes``, ``not enough info``,
    ``conflicting``, another label lower-cased, or ``answers: ...`` for answer tasks."""


@described
class Citation(TypedDict):
    """One labelled reply's citations, checked against the passages its prompt showed."""

    by: str
    """Agent id (``rag``, ``doc3``, ``sample2``) or role (``judge``, ``aggregator``)."""
    role: str
    """``debater``, ``judge``, ``summarizer``, ``aggregator``, ``answer`` ..."""
    round: int
    """Round or step of the reply (0 when the framework has none)."""
    label: str | None
    """The label of the citing reply (None for answer-only replies)."""
    answers: list[str]
    """The answers of the citing reply (multi-answer tasks), else ``[]``."""
    decides: bool
    """True for the reply that decides the verdict (judge, summariser, aggregator, final answer)."""
    passages: list[dict[str, Any]]
    """The cited passages (``Evidence``), validated, in citation order."""
    unshown: list[str]
    """Numbers the reply cited that its prompt never showed (dropped, flagged)."""
    shown: NotRequired[int]
    """How many passages the prompt showed."""


def passage_key(e: dict[str, Any]) -> str:
    """The identity of a passage across prompts: its id, else URL, title or opening text."""
    return str(e.get("id") or e.get("url") or e.get("title") or (e.get("text") or "")[:80])


_STANCES = {"SUPPORTS": "supports", "REFUTES": "refutes", NEI: "not enough info",
            "CONFLICTING": "conflicting"}


def stance_of(label: str | None, answers: Sequence[str] = ()) -> str:
    """The stance a citing reply gives its passages: its label as a word, or its answers."""
    if label:
        return _STANCES.get(label, label.lower())
    if answers:
        return "answers: " + "; ".join(answers)
    return "no label"


def _normal(answer: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", answer.lower())).strip()


def _on_verdict_side(c: Citation, label: str | None, answers: Sequence[str]) -> bool:
    if c.get("decides"):
        return True
    if label is not None:
        return c.get("label") == label
    wanted = {_normal(a) for a in answers}
    return bool(wanted & {_normal(a) for a in c.get("answers") or []})


def evidence_behind_verdict(
    citations: Iterable[Citation], label: str | None, answers: Sequence[str] = ()
) -> list[CitedPassage]:
    """The passages the verdict rests on, in citation order, each with who cited it and how.

    Deciding replies come first (the last one of each deciding role, in the order they were
    made), then the last reply of every
    agent on the verdict's side (same label; for answer tasks, an answer among the final ones),
    latest round first. A run with no verdict (no label and no answers) rests on nothing.
    """
    records = list(citations or [])
    if label is None and not answers:
        return []
    deciding: dict[str, Citation] = {}  # a role that decides every round: its last decision
    for c in records:
        if c.get("decides"):
            deciding.pop(c["by"], None)
            deciding[c["by"]] = c
    deciders = list(deciding.values())
    last: dict[str, Citation] = {}
    for c in records:
        if not c.get("decides"):
            prev = last.get(c["by"])
            if prev is None or int(c.get("round") or 0) >= int(prev.get("round") or 0):
                last[c["by"]] = c
    sides = sorted((c for c in last.values() if _on_verdict_side(c, label, answers)),
                   key=lambda c: -int(c.get("round") or 0))
    out: dict[str, CitedPassage] = {}
    for c in [*deciders, *sides]:
        who = c["by"] if c.get("decides") or not c.get("round") else f"{c['by']}@{c['round']}"
        stance = stance_of(c.get("label"), c.get("answers") or ())
        for p in c.get("passages") or []:
            key = passage_key(p)
            if key not in out:
                out[key] = CitedPassage(
                    id=str(p.get("id", "")), title=str(p.get("title", "")),
                    text=str(p.get("text", "")), source=str(p.get("source", "")),
                    url=str(p.get("url", "")), score=float(p.get("score") or 0.0),
                    cited_by=[], stance=stance,
                    **{k: p[k] for k in PASSAGE_IDS if k in p})  # type: ignore[typeddict-item]
            if who not in out[key]["cited_by"]:
                out[key]["cited_by"].append(who)
    return list(out.values())


def uncited_passages(
    seen: Iterable[dict[str, Any]], cited: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Passages of ``seen`` (de-duplicated, in order) that are not among ``cited``."""
    taken = {passage_key(p) for p in cited}
    out: dict[str, dict[str, Any]] = {}
    for p in seen:
        key = passage_key(p)
        if key not in taken and key not in out:
            out[key] = dict(p)
    return list(out.values())


# -- reading citations out of replies ---------------------------------------------------------
_BRACKETS = re.compile(r"\[\s*(?:(?:doc(?:ument)?|passage|source)\s*)?(\d{1,3}(?:\s*,\s*\d{1,3})*)\s*\]",
                       re.IGNORECASE)


def citations_in_text(text: str) -> list[str]:
    """Citation numbers in a free-text reply: a JSON ``"citations": [...]`` (the last one wins,
    as the last JSON verdict does in ``parse_label``), else ``[3]`` / ``[1, 4]`` markers."""
    text = text or ""
    decoder = json.JSONDecoder()
    for match in reversed(list(re.finditer(r'"citations"\s*:\s*(?=\[)', text))):
        try:
            values, _end = decoder.raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(values, list):
            return normalise_numbers(values)
    found: list[str] = []
    for match in _BRACKETS.finditer(text):
        found.extend(n.strip() for n in match.group(1).split(","))
    return normalise_numbers(found)


def normalise_numbers(values: Any) -> list[str]:
    """Citation numbers as strings, de-duplicated in order (``[3, "3", "[4]"]`` -> ``["3", "4"]``);
    anything that is not a whole number is kept as written, to be reported as unshown."""
    if not isinstance(values, (list, tuple)):
        values = [values] if values not in (None, "") else []
    out: list[str] = []
    for v in values:
        s = str(v).strip().strip("[]").strip()
        if re.fullmatch(r"(?:doc(?:ument)?\s*)?\d+", s, re.IGNORECASE):
            s = str(int(re.sub(r"\D", "", s)))
        if s and s not in out:
            out.append(s)
    return out


# -- reply schemas with a citations field -----------------------------------------------------
CITATIONS_DESCRIPTION = (
    "Numbers n of the documents (<document n=...>) your reply relies on, most important first; "
    "[] if none of them bears on it."
)


def _require_citations(schema: dict[str, Any]) -> None:
    required = schema.setdefault("required", [])
    if "citations" not in required:
        required.append("citations")


class _AsksForCitations(BaseModel):
    """Mixin: ``citations`` is required in the JSON schema a model is asked to fill (a grammar
    or provider writes it) while validation defaults it to ``[]`` (a reply without it reads)."""

    model_config = ConfigDict(json_schema_extra=_require_citations)


@cache
def with_citations(schema: type[BaseModel], shown: int) -> type[BaseModel]:
    """``schema`` plus ``citations``: a list of the numbers 1..``shown``, each at most once.

    The JSON schema gives the numbers as an enum, so a grammar (the embedded model) can write only
    shown ids and a provider's strict JSON schema refuses others; validation itself accepts any
    whole number, so a reply that cites an unshown id (json_mode, text, a loose provider) still
    reads, and the node drops and flags that id instead of losing the whole reply; a reply that
    leaves the field out reads as citing nothing (flagged as uncited), not as unreadable. With
    nothing shown the schema is unchanged.
    The class keeps ``schema``'s name (scripts and traces know replies by it).
    """
    if shown <= 0 or "citations" in schema.model_fields:
        return schema
    number = Annotated[int, WithJsonSchema({"type": "integer", "enum": list(range(1, shown + 1))})]
    return create_model(  # type: ignore[call-overload,no-any-return]
        schema.__name__,
        __base__=(schema, _AsksForCitations),
        __module__=schema.__module__,
        __doc__=schema.__doc__,
        citations=(list[number],  # type: ignore[valid-type]  # built at run time
                   Field(default_factory=list, description=CITATIONS_DESCRIPTION,
                         json_schema_extra={"maxItems": shown})),
    )
