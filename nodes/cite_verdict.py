"""``cite_verdict``: the evidence a verdict rests on, the last node of every graph.

Reads the run's ``citations`` (one checked record per labelled reply), the verdict (``label`` or,
for multi-answer tasks, ``answers``) and the passages the run saw, and writes

* ``verdict_evidence`` - the passages cited by the deciding reply (judge, summariser, aggregator,
  a baseline's final answer) and by the last reply of every agent whose label became the verdict,
  in citation order, with ``cited_by`` and ``stance`` (``factdebate.core.citations``);
* ``retrieved_evidence`` - every other passage the run retrieved or was shown (turns' evidence,
  the passages of citation records, and what the framework says it showed besides: MADKE's
  knowledge pool, MERMAID's recalled memory, the item's documents for MADAM-RAG), never called
  cited.

It makes no model call; it runs once per claim, after whichever node ended the debate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from factdebate.core.citations import evidence_behind_verdict, passage_key, uncited_passages
from factdebate.nodes.progress import emit

SeenPassages = Callable[[dict[str, Any]], Iterable[dict[str, Any]]]
"""A framework's passages shown outside ``turns`` (its pool, memory, documents), from the state."""


def verdict_evidence(state: dict[str, Any], seen: SeenPassages | None = None) -> dict[str, Any]:
    """``{"verdict_evidence": ..., "retrieved_evidence": ...}`` of a finished run's state."""
    cited = evidence_behind_verdict(state.get("citations") or [], state.get("label"),
                                    state.get("answers") or [])
    shown: list[dict[str, Any]] = []
    for turn in state.get("turns") or []:
        shown.extend(turn.get("evidence") or [])
    for record in state.get("citations") or []:
        shown.extend(record.get("passages") or [])
    if seen is not None:
        shown.extend(seen(state))
    return {"verdict_evidence": cited,
            "retrieved_evidence": uncited_passages(shown, [dict(e) for e in cited])}


def make_cite_verdict(seen: SeenPassages | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The ``cite_verdict`` node of a graph whose prompts also show the passages ``seen`` returns."""

    def cite_verdict(state: dict[str, Any]) -> dict[str, Any]:
        """The graph's final node: the verdict's cited evidence and the rest (nodes/cite_verdict.py)."""
        out = verdict_evidence(state, seen)
        emit("verdict", label=state.get("label"), answers=list(state.get("answers") or []),
             stopped_by=state.get("stopped_by"),
             cited=[passage_key(e) for e in out["verdict_evidence"]])  # nodes/progress.py
        return out

    return cite_verdict


cite_verdict = make_cite_verdict()
"""The final node of graphs whose passages are all in ``turns`` and ``citations``."""
