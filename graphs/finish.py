"""The shared last steps of every graph: ``cite_verdict`` (nodes/cite_verdict.py), then
``review`` (nodes/review.py).

A graph adds them with :func:`add_cite_verdict` and sends every path that would end the run to
``CITE_VERDICT`` instead of ``END``: direct edges (``g.add_edge("judge", CITE_VERDICT)``) and
routers through a path map (``{END: CITE_VERDICT, ...}``, the routers themselves still return
``END``). ``cite_verdict`` writes the verdict's cited evidence and goes to ``review``, which goes
to ``END``.

``review`` is a fact-checker's review before the verdict is final. With the run's ``review``
setting off (the default) it passes the verdict through: no interrupt, no cost, the output's
``review`` is None. With it on, the run stops at ``review`` with an interrupt whose payload holds
the claim, the draft verdict (label, rationale, cited passages, a summary of the debate, scores)
and the allowed labels; the run is resumed with ``Command(resume={"decision": "approve" | "edit"
| "reject", "reviewer": ..., ...})`` and the output's ``review`` records the decision. A run that
reviews needs a checkpointer (the CLI, the LangGraph server and Studio have one).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, StateGraph

from factdebate.nodes.cite_verdict import SeenPassages, make_cite_verdict
from factdebate.nodes.review import make_review

CITE_VERDICT = "cite_verdict"
"""Name of the node that cites the verdict's evidence."""
REVIEW = "review"
"""Name of the final node: the reviewer's decision on the verdict (a pass-through when off)."""


def framework_of_context(ctx: Any) -> str:
    """The registered framework whose Context class ``ctx`` is, when only one has it."""
    from factdebate.graphs.registry import FRAMEWORKS, context_class

    names = [name for name in FRAMEWORKS.names() if context_class(name) is type(ctx)]
    return names[0] if len(names) == 1 else ""


def add_cite_verdict(g: StateGraph, seen: SeenPassages | None = None,
                     framework: str = "") -> StateGraph:
    """Add ``cite_verdict`` -> ``review`` -> END to ``g``; returns ``g``.

    ``seen`` returns the passages the graph's prompts showed outside ``turns`` (a knowledge pool,
    recalled memory, the item's documents), so they are listed as retrieved when not cited.
    ``framework`` names the graph in the review's payload (else the run's metadata names it)."""
    g.add_node(CITE_VERDICT, make_cite_verdict(seen))
    g.add_node(REVIEW, make_review(framework, framework_of_context))
    g.add_edge(CITE_VERDICT, REVIEW)
    g.add_edge(REVIEW, END)
    return g
