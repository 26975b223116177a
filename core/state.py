"""Typed debate state shared by every framework (STYLE.md §2).

``DebateInput`` is what a caller sends, ``DebateState`` what flows through a graph, ``DebateOutput``
what every framework returns (the evaluation harness relies on that one shape). Every key that
parallel branches write has a reducer, so two debaters finishing in the same super-step never
overwrite each other.
"""

from __future__ import annotations

import operator
import types
from copy import copy
from functools import cache
from typing import (
    Annotated,
    Any,
    NotRequired,  # pydantic (Studio schemas) needs these on 3.11
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from langgraph.types import Overwrite
from typing_extensions import TypedDict

# Evidence is defined beside CitedPassage, which extends it; the rest of the code imports it here
from factdebate.core.citations import Citation, CitedPassage, Evidence
from factdebate.core.errors import InputError
from factdebate.core.schema_docs import described  # docstrings -> Studio field descriptions


@described
class Turn(TypedDict):
    """One debater's contribution in one round."""

    agent: str
    """Debater id (``rag``, ``search``, ``vanilla``; ``rag2`` when a kind repeats)."""
    round: int
    """1-based round number."""
    query: str
    """Retrieval query the debater formulated ("" for a tool-less debater)."""
    evidence: list[Evidence]
    """Top-k passages its tool returned for that query."""
    answer: str
    """The debater's reasoning text (the paper's ``reason:`` part)."""
    label: str | None
    """Verdict mapped onto the task's label set; None only when parsing failed outright."""
    parse: str
    """How the label was obtained: ``structured``, ``explicit``, ``guessed`` or ``failed``."""
    answers: NotRequired[list[str]]
    """Answers of this turn in multi-answer mode (baselines with ``answer_mode="answers"``)."""
    cited: NotRequired[list[str]]
    """Keys (``passage_key``) of the passages this answer cited, checked against what it was
    shown, in citation order (the full record is in the state's ``citations``)."""


@described
class RoundScore(TypedDict, total=False):
    """Scores of one debater's answer in one round (keys depend on the scoring mode; ``None``
    where the score could not be computed: the fault is flagged, the consensus check treats it
    as not cleared)."""

    round: int
    """Round the scored answer belongs to."""
    faithfulness: float | None
    """RAGAS faithfulness of the answer w.r.t. its evidence (stability mode)."""
    answer_relevancy: float | None
    """RAGAS answer relevancy of the answer w.r.t. the claim (stability mode)."""
    consistency: float | None
    """Similarity(evidence, answer) (consistency mode)."""
    verifier: float
    """Speculative RAG: the verifier's score of a draft (0 = unsupported, 1 = fully supported)."""


def merge_scores(
    left: dict[str, list[RoundScore]] | None, right: dict[str, list[RoundScore]] | None
) -> dict[str, list[RoundScore]]:
    """Reducer: per-agent score lists are concatenated, agents from both sides are kept."""
    out = {k: list(v) for k, v in (left or {}).items()}
    for agent, rows in (right or {}).items():
        out.setdefault(agent, []).extend(rows)
    return out


def add_ledger(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer: numbers are summed, nested dicts (per-tool counters) are summed key by key."""
    out: dict[str, Any] = dict(left or {})
    for key, value in (right or {}).items():
        if isinstance(value, dict):
            out[key] = add_ledger(out.get(key), value)
        elif isinstance(value, list):
            out[key] = [*out.get(key, []), *value]
        else:
            out[key] = out.get(key, 0) + value
    return out


@described
class DebateRecord(TypedDict):
    """The reducer block: what nodes and parallel branches append to, inherited by every state.

    One definition for every graph: ``DebateState`` and each framework's state inherit it, and a
    fanned-out branch (a debater turn, a self-consistency sample, a Speculative RAG draft) returns
    it to its parent (the turn subgraphs' ``output_schema``), where the reducers merge branches
    that finish in the same super-step.
    """

    turns: Annotated[list[Turn], operator.add]
    """Every turn (debater answer, sample, draft, ReAct step), in completion order."""
    scores: Annotated[dict[str, list[RoundScore]], merge_scores]
    """Per-agent list of per-round scores."""
    ledger: Annotated[dict[str, Any], add_ledger]
    """LLM calls, prompt/completion tokens, per-tool call and fault counts."""
    flags: Annotated[list[str], operator.add]
    """Anything a user should know about how the result was obtained (guessed parses, tool
    faults, stand-in backends)."""
    citations: Annotated[list[Citation], operator.add]
    """One record per labelled reply: the passages it cited (checked against what it was shown)
    and the numbers it cited that it was never shown (core/citations.py)."""


@described
class ReviewChanges(TypedDict):
    """What a reviewer's ``edit`` changed of the machine verdict."""

    label: list[str | None] | None
    """``[machine label, reviewer's label]`` when the label changed, else None."""
    rationale: bool
    """True when the reviewer replaced the rationale with a different one."""
    evidence_ids: list[str] | None
    """Ids of the passages the reviewer made the verdict's evidence, else None."""


@described
class ReviewRecord(TypedDict):
    """A fact-checker's decision on a verdict (nodes/review.py)."""

    decision: str
    """``approve`` (verdict kept), ``edit`` (the reviewer's verdict replaces it) or ``reject``
    (the machine's label is kept and must not be published)."""
    reviewer: str
    """Who decided."""
    at: str
    """When, ISO 8601 in UTC."""
    note: str
    """The reviewer's note ("" when none)."""
    machine_label: str | None
    """The label the run reached before the review."""
    changed: ReviewChanges
    """What an ``edit`` changed."""


@described
class DebateInput(TypedDict):
    """What a caller (CLI, evaluation runner, LangGraph server client) sends."""

    claim: str
    """Claim to verify, or question to answer for QA tasks."""
    task: NotRequired[str | None]
    """Label set name (``fever``, ``binary``, ``averitec``, ``medqa``, ``pubmedqa``); overrides
    the Context's ``label_set`` for this item when given."""
    options: NotRequired[dict[str, str] | None]
    """Answer options for multiple-choice QA (MedQA), letter -> text."""
    documents: NotRequired[list[Evidence] | None]
    """Documents that come with the item (RAMDocs, PubMedQA); frameworks that retrieve ignore it."""
    exclude_titles: NotRequired[list[str] | None]
    """Leakage guard: passages with these titles are dropped from every retrieval."""


class DebateState(DebateInput, DebateRecord):
    """Everything a debate graph carries between nodes (the inputs, the record, the result)."""

    round: Annotated[int, operator.add]
    """Current round; advanced by returning ``{"round": 1}``."""
    label: str | None
    """Final verdict."""
    answers: list[str]
    """Final answers of multi-answer tasks (empty otherwise)."""
    rationale: str
    """Final explanation."""
    stopped_by: str
    """How the run ended: ``consensus`` (early stop), ``judge``, or a framework's own word."""
    verdict_evidence: list[CitedPassage]
    """The passages the verdict rests on: cited by the deciding reply and by the replies whose
    label became the verdict, in citation order, with who cited them and their stance (written
    by the final ``cite_verdict`` node)."""
    retrieved_evidence: list[Evidence]
    """Every other passage the run retrieved or was shown: seen, not cited."""
    review: ReviewRecord | None
    """The fact-checker's decision on the verdict (the ``review`` node); None when not reviewed."""
    routing: dict[str, Any]
    """The run's Context knobs the routers read (``max_rounds``, ``debaters``, ``t_max`` ...),
    written by the first node so that ``update_state``, which has no run context, routes as the
    run did (nodes/routing.py)."""


class DebateOutput(DebateRecord):
    """The one result shape every framework returns: the result plus the full record."""

    claim: str
    """The verified claim (echoed for the results file)."""
    label: str | None
    """Final verdict on the task's label set."""
    answers: NotRequired[list[str]]
    """Multi-answer tasks (RAMDocs): every answer the framework accepts as correct."""
    rationale: str
    """Final explanation."""
    round: int
    """Rounds used."""
    stopped_by: str
    """``consensus``, ``judge`` or a framework's own word."""
    verdict_evidence: NotRequired[list[CitedPassage]]
    """The passages the verdict rests on (cited), with ``cited_by`` and ``stance``."""
    retrieved_evidence: NotRequired[list[Evidence]]
    """Passages retrieved or shown but not cited."""
    review: NotRequired[ReviewRecord | None]
    """The fact-checker's decision on the verdict when the run's ``review`` setting is on
    (nodes/review.py); None otherwise."""


class DebaterState(DebateRecord):
    """State of one debater's turn (the ``debate_turn`` subgraph, fanned out with ``Send``).

    It returns its ``DebateRecord`` (this turn, its scores, calls and caveats) to the parent.
    """

    agent: str
    """Debater id."""
    round: int
    """Round of this turn."""
    claim: str
    """Claim or question."""
    task: str
    """Resolved label set name."""
    options: NotRequired[dict[str, str] | None]
    """Multiple-choice options."""
    exclude_titles: NotRequired[list[str] | None]
    """Leakage guard."""
    previous_query: str
    """This agent's query of the previous round ("" in round 1)."""
    opponents: list[Turn]
    """The other agents' turns of the previous round (empty in round 1)."""
    query: str
    """Query formulated this round."""
    evidence: list[Evidence]
    """Passages retrieved this round."""
    answer: str
    """Reasoning of this round's answer."""
    label: str | None
    """Label of this round's answer."""
    parse: str
    """How the label was parsed."""


INPUT_KEYS: tuple[str, ...] = tuple(DebateInput.__annotations__)
"""Keys a caller sends; every other state key belongs to one claim's debate."""


def complete_input(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` with every optional input key present (``None`` when absent).

    A LangGraph input writes only the keys it carries: on a thread that already verified a claim,
    an omitted ``options`` or ``exclude_titles`` would otherwise keep the previous claim's value.
    """
    return {**dict.fromkeys(INPUT_KEYS), **item}


def item_documents(raw: Any) -> list[Evidence]:
    """The documents an item brings (RAMDocs, PubMedQA) as ``Evidence``, for every framework.

    A document is a dict with a non-empty ``text`` (or a bare string); only ``Evidence`` fields
    are kept, so dataset annotations such as RAMDocs' ``type`` (correct/misinfo/noise) and
    ``answer`` are gold information that never reaches a prompt. Raises ``InputError`` naming the
    first unusable document.
    """
    if not isinstance(raw, list):
        raise InputError(f"documents must be a list, got {type(raw).__name__}",
                         "pass documents as [{'text': ...}, ...]")
    docs: list[Evidence] = []
    for i, doc in enumerate(raw, 1):
        if isinstance(doc, str):
            doc = {"text": doc}
        text = doc.get("text") if isinstance(doc, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"document {i} has no text", "give every document a non-empty 'text'")
        docs.append(Evidence(
            id=str(doc.get("id") or f"doc{i}"), title=str(doc.get("title") or ""), text=text,
            source=str(doc.get("source") or "item"), url=str(doc.get("url") or ""),
            score=float(doc.get("score") or 0.0),
        ))
    return docs


def _empty(hint: Any) -> Any:
    """The empty value of a state key's type: ``[]``, ``{}``, ``0``, ``""``, ``False`` or None."""
    origin = get_origin(hint)
    if origin is Annotated:
        return _empty(get_args(hint)[0])
    if origin in (Union, types.UnionType):
        return None if type(None) in get_args(hint) else _empty(get_args(hint)[0])
    base = origin or hint
    for kind in (list, dict, bool, int, float, str):
        if isinstance(base, type) and issubclass(base, kind):
            return kind()
    return None


@cache
def _claim_keys(schema: type) -> tuple[tuple[str, Any, bool], ...]:
    """(key, empty value, has a reducer) of every per-claim key of ``schema``."""
    hints = get_type_hints(schema, include_extras=True)
    return tuple(
        (key, _empty(hint), get_origin(hint) is Annotated
         and any(callable(meta) for meta in get_args(hint)[1:]))
        for key, hint in hints.items() if key not in INPUT_KEYS
    )


def fresh_claim(schema: type, update: dict[str, Any]) -> dict[str, Any]:
    """The first node's ``update`` plus the empty value of every other per-claim key of ``schema``.

    One claim per run: a new input on a used thread (Studio's normal use) starts a fresh debate.
    Keys with a reducer are written as LangGraph's ``Overwrite`` so the previous claim's turns,
    rounds, ledger and flags are replaced, not added to; the thread's history stays browsable.
    """
    out: dict[str, Any] = {}
    for key, empty, reduced in _claim_keys(schema):
        value = update[key] if key in update else copy(empty)
        out[key] = Overwrite(value) if reduced else value
    return {**update, **out}
