"""State of the baseline graphs: ``DebateState`` plus the baselines' working keys.

Every baseline returns the shared ``DebateOutput`` (its turns may carry ``answers``); the extra
keys here carry what single-agent and retrieval baselines work from (the evidence, Astute RAG's
internal and consolidated passages) and per-branch payloads of the fanned-out steps
(self-consistency samples, Speculative RAG drafts).

Lives with the framework's nodes, not in ``factdebate.core``: only this framework
reads it. Shared nodes read what ``factdebate.core.context``'s protocols declare.
"""

from __future__ import annotations

from typing import NotRequired  # pydantic (Studio schemas) needs it on 3.11

from factdebate.core.state import DebateRecord, DebateState, Evidence


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


class BranchState(DebateRecord):
    """Payload of one fanned-out branch (a self-consistency sample, a Speculative RAG draft).

    It returns its ``DebateRecord`` (its turn, verifier scores, calls, caveats) to the parent.
    """

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
