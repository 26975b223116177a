"""MADAM-RAG's configuration (``MadamRagContext``) and the state its graph adds to ``DebateState``."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import (
    Annotated,
    Any,
    NotRequired,  # pydantic (Studio schemas) needs these on 3.11
)

from typing_extensions import TypedDict

from factdebate.core.context import Context
from factdebate.core.errors import ConfigError
from factdebate.core.state import DebateState, Evidence

MAX_DOCUMENTS = 20


def _knob(default: Any, description: str) -> Any:
    return field(default=default, metadata={"description": description})


@dataclass(kw_only=True)
class MadamRagContext(Context):
    """Context of MADAM-RAG runs: the shared ``Context`` plus the paper's knobs (T = max_rounds)."""

    aggregator: bool = _knob(
        True,
        "MADAM-RAG: an aggregator LLM reconciles the agents' answers each round; off = the "
        "agents' answers are concatenated (the 'w/o aggregator' ablation).",
    )
    num_documents: int = _knob(
        5, "MADAM-RAG: documents retrieved (rag_backend, one agent each) when an item has none."
    )
    shuffle_seed: int = _knob(
        0, "MADAM-RAG: seed of the per-round shuffle of responses shown to the aggregator."
    )
    prompt_set: str = _knob("madam_rag", "Prompt set (folder under prompts/).")

    def validate(self) -> None:
        """The shared checks plus MADAM-RAG's ranges."""
        super().validate()
        if not 1 <= self.num_documents <= MAX_DOCUMENTS:
            raise ConfigError(f"num_documents={self.num_documents} is out of range",
                              f"use 1 to {MAX_DOCUMENTS}")

    def tool_kinds(self) -> list[str]:
        """Only the rag backend is ever used (for items without documents)."""
        return ["rag"]


class DocResponse(TypedDict):
    """One agent's parsed answer in one round."""

    agent: str
    """Agent id (``doc1`` ...), one per document."""
    round: int
    """1-based round."""
    answer: str
    """Short answer ("" when unreadable)."""
    explanation: str
    """The agent's step-by-step explanation."""


class Aggregate(TypedDict):
    """The aggregated answer of one round (y^(t), e^(t))."""

    round: int
    """Round it summarises."""
    answers: list[str]
    """All answers judged correct."""
    explanation: str
    """The aggregator's explanation (or the concatenated responses without an aggregator)."""


class MadamRagState(DebateState):
    """``DebateState`` plus the documents, the agents' parsed answers and the aggregates."""

    agent_documents: list[Evidence]
    """One document per agent: the item's, or retrieved for the claim."""
    retrieval_query: str
    """Query the documents were retrieved with ("" when the item brought them)."""
    responses: Annotated[list[DocResponse], operator.add]
    """Every agent's parsed answer of every round."""
    aggregates: Annotated[list[Aggregate], operator.add]
    """The aggregated answer of every round."""


class AgentTask(TypedDict):
    """Payload of one ``answer_from_document`` branch."""

    agent: str
    """Agent id."""
    round: int
    """Round of this answer."""
    claim: str
    """Claim or question."""
    task: str
    """Resolved label set name."""
    options: NotRequired[dict[str, str] | None]
    """Multiple-choice options."""
    document: Evidence
    """The agent's one document."""
    query: str
    """Retrieval query of the document ("" for the item's own documents)."""
    previous: Aggregate | None
    """The aggregated answer and explanation of the previous round (None in round 1)."""
