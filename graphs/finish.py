"""The shared last step of every graph: ``cite_verdict`` (nodes/cite_verdict.py).

A graph adds it with :func:`add_cite_verdict` and sends every path that would end the run to
``CITE_VERDICT`` instead of ``END``: direct edges (``g.add_edge("judge", CITE_VERDICT)``) and
routers through a path map (``{END: CITE_VERDICT, ...}``, the routers themselves still return
``END``). ``cite_verdict`` then writes the verdict's cited evidence and goes to ``END``.
"""

from __future__ import annotations

from langgraph.graph import END, StateGraph

from factdebate.nodes.cite_verdict import SeenPassages, make_cite_verdict

CITE_VERDICT = "cite_verdict"
"""Name of the final node."""


def add_cite_verdict(g: StateGraph, seen: SeenPassages | None = None) -> StateGraph:
    """Add the final ``cite_verdict`` node (-> END) to ``g``; returns ``g``.

    ``seen`` returns the passages the graph's prompts showed outside ``turns`` (a knowledge pool,
    recalled memory, the item's documents), so they are listed as retrieved when not cited."""
    g.add_node(CITE_VERDICT, make_cite_verdict(seen))
    g.add_edge(CITE_VERDICT, END)
    return g
