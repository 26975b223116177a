"""The ``static`` retriever: four fixed passages, ranked by word overlap (test double only).

Graph-logic tests and tutorials run a framework end to end without an index, a model or a network
with ``rag_backend="static"`` (and ``search_backend="static"``) and a ``scripted:<scenario>``
model: the passages below are the whole corpus, ranked for a query by how many of its words they
share (title and text), ties in this order. The backend is registered in the core's retriever
registry under the name ``static`` as a lazy ``"module:attr"`` entry
(``factdebate.core.retrievers``), so it works from an installed package - the CLI, Python, a
plug-in's own tests - and nothing in core, tools or nodes imports this module. It is never a
default; its results say so (``source`` is the backend's name, ``static``).
"""

from __future__ import annotations

import re
from typing import Any

from factdebate.core.state import Evidence

PASSAGES: list[tuple[str, str, str]] = [
    ("p1", "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, France, "
     "completed in 1889 for the World's Fair."),
    ("p2", "Mount Everest", "Mount Everest, on the border of Nepal and China, is Earth's highest "
     "mountain above sea level at 8,849 metres."),
    ("p3", "Marie Curie", "Marie Curie was a physicist and chemist who won Nobel Prizes in "
     "physics (1903) and chemistry (1911)."),
    ("p4", "Paris", "Paris is the capital and largest city of France, on the river Seine."),
]
"""The corpus: (id, title, text)."""

_WORD = re.compile(r"\w+")
_WORDS = [set(_WORD.findall((title + text).lower())) for _, title, text in PASSAGES]


class StaticRetriever:
    """Word-overlap ranking over :data:`PASSAGES`: a deterministic retriever for tests.

    ``queries`` records every query it was asked, in order.
    """

    def __init__(self, name: str = "static") -> None:
        """A retriever whose results name ``name`` as their source."""
        self.name = name
        self.queries: list[str] = []

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """The ``k`` passages sharing the most words with ``query`` (ties in corpus order)."""
        self.queries.append(query)
        words = set(_WORD.findall(query.lower()))
        ranked = sorted(range(len(PASSAGES)), key=lambda i: -len(words & _WORDS[i]))
        return [Evidence(id=PASSAGES[i][0], title=PASSAGES[i][1], text=PASSAGES[i][2],
                         source=self.name, url="", score=1.0) for i in ranked[:k]]


def open_static_retriever(settings: Any) -> StaticRetriever:
    """The ``static`` backend's factory (``factdebate.core.retrievers``): settings are unused."""
    return StaticRetriever("static")
