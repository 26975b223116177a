"""MADKE's configuration (``MadkeContext``) and the state its graph adds to ``DebateState``.

The shared knowledge pool is retrieved once per question, so it lives in the graph state
(checkpointed, shown in Studio) rather than being recomputed per debater.

Lives with the framework's nodes, not in ``factdebate.core``: only this framework
reads it. Shared nodes read what ``factdebate.core.context``'s protocols declare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import (
    Annotated,
    Literal,
    NotRequired,  # pydantic (Studio schemas) needs these on 3.11
)

from typing_extensions import TypedDict

from factdebate.core.context import JudgedContext
from factdebate.core.settings import knob
from factdebate.core.state import DebateRecord, DebateState, Evidence, Turn

KnowledgeSources = Literal["none", "wiki", "search", "both"]
OrderlyView = Literal["latest", "previous_round"]

SOURCE_KINDS: dict[str, list[str]] = {
    "none": [],
    "wiki": ["rag"],
    "search": ["search"],
    "both": ["rag", "search"],
}
"""Knowledge-source setting -> retriever kinds, in pool order (the paper's WR(q) then GSE(q))."""

MAX_DEBATERS = 6


@dataclass(kw_only=True)
class MadkeContext(JudgedContext):
    """Context of MADKE runs: the shared ``Context`` plus the paper's knobs."""

    max_rounds: int = knob(
        3, "MADKE: maximum debate rounds before the judge's last check (1-10).", range=(1, 10))
    num_debaters: int = knob(
        2, "MADKE: number of debaters m (the paper uses 2; 2-6).", range=(2, MAX_DEBATERS))
    knowledge_sources: KnowledgeSources = knob(
        "both",
        "MADKE: shared knowledge pool sources: 'none', 'wiki' (rag_backend), 'search' "
        "(search_backend) or 'both' (the paper's Wikipedia + Google union).",
    )
    knowledge_selection: bool = knob(
        True,
        "MADKE: adaptive knowledge selection (each debater picks up to 3 pool items per round); "
        "off = every debater sees the whole pool (the 'w/o AKS' ablation).",
    )
    wiki_pool_size: int = knob(
        5, "MADKE: passages the Wikipedia source (rag_backend) adds to the pool (the paper "
        "keeps the top 5, §3.1.1).", range=(1, 20))
    search_pool_size: int = knob(
        10, "MADKE: results the search source (search_backend) adds to the pool (the paper: "
        "'up to the top 10 search results', §3.1.1).", range=(1, 20))
    temperature: float = knob(
        0.5, "Sampling temperature of every role (MADKE uses 0.5, §4.4; 0 for reproducible runs).",
        range=(0.0, 2.0))
    orderly_view: OrderlyView = knob(
        "latest",
        "MADKE orderly talk: what a debater sees of the others - 'latest' (their answer of this "
        "round if they already spoke, §3.2.2) or 'previous_round' (every other debater's answer "
        "of round r-1, Alg. 1 l. 11).",
    )
    prompt_set: str = knob("madke", "Prompt set (folder under prompts/).", operator=True)

    def tool_kinds(self) -> list[str]:
        """Retriever kinds of the knowledge pool."""
        return list(SOURCE_KINDS[self.knowledge_sources])

    def pool_size(self, source: str) -> int:
        """Passages the knowledge source ``source`` (``rag``/``search``) adds to the pool."""
        return self.search_pool_size if source == "search" else self.wiki_pool_size

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
    """Retriever kind (``rag``/``search``) -> its top ``pool_size(kind)`` passages for the question."""


class SourceTask(TypedDict):
    """Payload of one ``gather_knowledge`` branch."""

    source: str
    """Retriever kind to query."""
    claim: str
    """The question/claim (the query, as in the paper)."""
    exclude_titles: NotRequired[list[str] | None]
    """Leakage guard."""


class SpeakerState(DebateRecord):
    """State of one debater's turn (the ``debater_turn`` subgraph, entered with ``Send``).

    It returns its ``DebateRecord`` (this turn, its calls and caveats) to the parent.
    """

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
