"""MADAM-RAG's configuration (``MadamRagContext``) and the state its graph adds to ``DebateState``.

Lives with the framework's nodes, not in ``factdebate.core``: only this framework
reads it. Shared nodes read what ``factdebate.core.context``'s protocols declare.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import (
    Annotated,
    NotRequired,  # pydantic (Studio schemas) needs these on 3.11
)

from typing_extensions import TypedDict

from factdebate.core.citations import Citation
from factdebate.core.context import JudgedContext
from factdebate.core.settings import knob
from factdebate.core.state import DebateState, Evidence

MAX_DOCUMENTS = 20


@dataclass(kw_only=True)
class MadamRagContext(JudgedContext):
    """Context of MADAM-RAG runs: the shared ``Context`` plus the paper's knobs.

    ``judge_model`` is the aggregator's model.
    """

    max_rounds: int = knob(
        3, "MADAM-RAG: maximum rounds T; it stops earlier when the aggregated answers hold "
        "(1-10).", range=(1, 10))
    aggregator: bool = knob(
        True,
        "MADAM-RAG: an aggregator LLM reconciles the agents' answers each round; off = the "
        "agents' answers are concatenated (the 'w/o aggregator' ablation).",
    )
    num_documents: int = knob(
        5, "MADAM-RAG: documents retrieved (rag_backend, one agent each) when an item has none.",
        range=(1, MAX_DOCUMENTS),
    )
    shuffle_seed: int = knob(
        0, "MADAM-RAG: seed of the per-round shuffle of responses shown to the aggregator.",
        range=(0, 2**32 - 1),
    )
    prompt_set: str = knob("madam_rag", "Prompt set (folder under prompts/).", operator=True)

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
    citation: NotRequired[Citation]
    """The aggregator reply's checked citations; it becomes the deciding citation
    when this aggregate is the final answer (``check_convergence``). Absent without an aggregator
    reply (aggregator off, reply unreadable)."""


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
