"""MADKE's configuration (``MadkeContext``) and the state its graph adds to ``DebateState``.

The shared knowledge pool is retrieved once per question, so it lives in the graph state
(checkpointed, shown in Studio) rather than being recomputed per debater.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,  # pydantic (Studio schemas) needs these on 3.11
)

from typing_extensions import TypedDict

from factdebate.core.context import Context
from factdebate.core.errors import ConfigError
from factdebate.core.state import DebateState, Evidence, Turn, add_ledger

KnowledgeSources = Literal["none", "wiki", "search", "both"]

SOURCE_KINDS: dict[str, list[str]] = {
    "none": [],
    "wiki": ["rag"],
    "search": ["search"],
    "both": ["rag", "search"],
}
"""Knowledge-source setting -> retriever kinds, in pool order (the paper's WR(q) then GSE(q))."""

MAX_DEBATERS = 6


def _knob(default: Any, description: str) -> Any:
    return field(default=default, metadata={"description": description})


@dataclass(kw_only=True)
class MadkeContext(Context):
    """Context of MADKE runs: the shared ``Context`` plus the paper's knobs."""

    num_debaters: int = _knob(2, "MADKE: number of debaters m (the paper uses 2; 2-6).")
    knowledge_sources: KnowledgeSources = _knob(
        "both",
        "MADKE: shared knowledge pool sources: 'none', 'wiki' (rag_backend), 'search' "
        "(search_backend) or 'both' (the paper's Wikipedia + Google union).",
    )
    knowledge_selection: bool = _knob(
        True,
        "MADKE: adaptive knowledge selection (each debater picks up to 3 pool items per round); "
        "off = every debater sees the whole pool (the 'w/o AKS' ablation).",
    )
    pool_size: int = _knob(5, "MADKE: passages retrieved per knowledge source (the paper: 5).")
    prompt_set: str = _knob("madke", "Prompt set (folder under prompts/).")

    def validate(self) -> None:
        """The shared checks plus MADKE's ranges."""
        super().validate()
        if not 2 <= self.num_debaters <= MAX_DEBATERS:
            raise ConfigError(f"num_debaters={self.num_debaters} is out of range",
                              f"use 2 to {MAX_DEBATERS}")
        if self.knowledge_sources not in SOURCE_KINDS:
            raise ConfigError(f"unknown knowledge_sources {self.knowledge_sources!r}",
                              f"use {', '.join(SOURCE_KINDS)}")
        if self.pool_size < 1:
            raise ConfigError(f"pool_size={self.pool_size} must be positive", "use 1 or more")

    def tool_kinds(self) -> list[str]:
        """Retriever kinds of the knowledge pool (not the Tool-MAD ``debaters``)."""
        return list(SOURCE_KINDS[self.knowledge_sources])

    def debater_ids(self) -> list[str]:
        """``debater1`` ... ``debater<m>``, in speaking order."""
        return [f"debater{i}" for i in range(1, self.num_debaters + 1)]


def merge_pool(
    left: dict[str, list[Evidence]] | None, right: dict[str, list[Evidence]] | None
) -> dict[str, list[Evidence]]:
    """Reducer: each knowledge source's passages, written by its own parallel branch."""
    return {**(left or {}), **(right or {})}


class MadkeState(DebateState):
    """``DebateState`` plus the shared knowledge pool."""

    knowledge: Annotated[dict[str, list[Evidence]], merge_pool]
    """Retriever kind (``rag``/``search``) -> its top ``pool_size`` passages for the question."""


class SourceTask(TypedDict):
    """Payload of one ``gather_knowledge`` branch."""

    source: str
    """Retriever kind to query."""
    claim: str
    """The question/claim (the query, as in the paper)."""
    exclude_titles: NotRequired[list[str] | None]
    """Leakage guard."""


class SpeakerState(TypedDict):
    """State of one debater's turn (the ``debater_turn`` subgraph, entered with ``Send``)."""

    agent: str
    """Debater id (``debater1`` ...)."""
    round: int
    """Round of this turn."""
    claim: str
    """Claim or question."""
    task: str
    """Resolved label set name."""
    options: NotRequired[dict[str, str] | None]
    """Multiple-choice options."""
    pool: list[Evidence]
    """The shared knowledge pool, numbered from 1 in prompts."""
    own_previous: Turn | None
    """This debater's answer of the previous round (None in round 1)."""
    others: list[Turn]
    """The other debaters' latest answers (empty in the simultaneous-talk round)."""
    selected: list[Evidence]
    """Knowledge this debater selected this round (the whole pool with AKS off)."""
    turns: Annotated[list[Turn], operator.add]
    """This turn, handed back to the parent graph."""
    ledger: Annotated[dict[str, Any], add_ledger]
    """Calls made in this turn."""
    flags: Annotated[list[str], operator.add]
    """Caveats raised in this turn."""


class SpeakerOutput(TypedDict):
    """What a debater turn writes back into the parent state."""

    turns: list[Turn]
    ledger: dict[str, Any]
    flags: list[str]
