"""State of the baseline graphs (issue #3): ``DebateState`` plus the baselines' working keys.

Every baseline returns the shared ``DebateOutput``; the extra keys here carry what single-agent
and retrieval baselines work from (the evidence, Astute RAG's internal and consolidated passages)
and per-branch payloads of the fanned-out steps (self-consistency samples, Speculative RAG drafts).
"""

from __future__ import annotations

import operator
from typing import (
    Annotated,
    Any,
    NotRequired,  # pydantic (Studio schemas) needs these on 3.11
)

from typing_extensions import TypedDict

from factdebate.core.state import DebateState, Evidence, RoundScore, Turn, add_ledger, merge_scores


class BaselineTurn(Turn, total=False):
    """A ``Turn`` that may also carry a multi-answer result."""

    answers: list[str]
    """Answers of this step in multi-answer mode (``answer_mode="answers"``)."""


class BaselineState(DebateState):
    """What a baseline graph carries between nodes."""

    multi_answer: bool
    """True when the run answers with a list of answers (``answer_mode="answers"``), not a label."""
    evidence: list[Evidence]
    """Documents the baseline reasons over: the item's documents or one retrieval for the claim."""
    internal: list[Evidence]
    """Astute RAG: passages the model generated from its own memory (source ``memory``)."""
    knowledge: list[Evidence]
    """Astute RAG: the consolidated, source-attributed passages of the last consolidation pass."""


class BranchState(TypedDict):
    """Payload of one fanned-out branch (a self-consistency sample, a Speculative RAG draft)."""

    agent: str
    """Branch id (``sample3``, ``draft2``)."""
    round: int
    """Round the branch belongs to."""
    claim: str
    """Claim or question."""
    task: str
    """Resolved label set."""
    options: NotRequired[dict[str, str] | None]
    """Multiple-choice options."""
    multi_answer: bool
    """Answer with a list of answers instead of a label."""
    evidence: list[Evidence]
    """Documents this branch sees (a draft's subset; empty for samples)."""
    internal: NotRequired[list[Evidence]]
    """Unused by branches; keeps ``baseline_values`` uniform."""
    answer: NotRequired[str]
    """Draft rationale (set by ``draft``, read by ``verify_draft``)."""
    label: NotRequired[str | None]
    """Draft label."""
    answers: NotRequired[list[str]]
    """Draft answers (multi-answer mode)."""
    turns: Annotated[list[Turn], operator.add]
    """This branch's turn, handed back to the parent graph."""
    scores: Annotated[dict[str, list[RoundScore]], merge_scores]
    """Verifier scores, handed back to the parent graph."""
    ledger: Annotated[dict[str, Any], add_ledger]
    """Calls made in this branch."""
    flags: Annotated[list[str], operator.add]
    """Caveats raised in this branch."""


class BranchOutput(TypedDict):
    """What a branch writes back into the parent state (reducer keys only)."""

    turns: list[Turn]
    scores: dict[str, list[RoundScore]]
    ledger: dict[str, Any]
    flags: list[str]
