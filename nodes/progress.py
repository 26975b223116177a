"""Progress events on LangGraph's ``custom`` stream mode: what a UI shows while a debate runs.

Each event is a small JSON dict with an ``"event"`` key, written with LangGraph's
``get_stream_writer()`` (a no-op unless the caller streams ``custom``):

* ``{"event": "round_opened", "round": 2}`` - ``open_round`` numbered a new round;
* ``{"event": "turn_finished", "turn": "debate_turn", "agent": "rag", "round": 2,
  "label": "SUPPORTS", "cited": ["doc-7", ...]}`` - one agent's turn (a debater, a draft) ended;
  ``cited`` are the keys of the passages its answer cited;
* ``{"event": "scores", "round": 2, "scores": {"rag": {"faithfulness": 0.9, ...}, ...}}`` -
  the round's per-agent scores (Tool-MAD's ``check_consensus``);
* ``{"event": "stop_decision", "round": 2, "stop": false, "by": null}`` - whether the debate
  ends after this round (``by``: ``consensus``, ``max_rounds``, ``no_change``, ``no_documents``;
  null to go on; Tool-MAD's ``check_consensus``, MADKE's ``judge_consensus``, MADAM-RAG's
  ``check_convergence``);
* ``{"event": "verdict", "label": "SUPPORTS", "answers": [], "stopped_by": "consensus",
  "cited": ["doc-7", ...]}`` - the final verdict and the passages behind it (``cite_verdict``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.config import get_stream_writer

EVENTS = ("round_opened", "turn_finished", "scores", "stop_decision", "verdict")
"""Every ``event`` value this module writes."""


def emit(event: str, **fields: Any) -> None:
    """Write ``{"event": event, **fields}`` to the run's ``custom`` stream (nothing outside a run)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a LangGraph run (a node function tested on its own)
        return
    writer({"event": event, **fields})


def stop_decision(round_: int | None, update: dict[str, Any]) -> dict[str, Any]:
    """``update`` (a node's return value) after a ``stop_decision`` event read from its
    ``stopped_by`` (absent: the debate goes on)."""
    by = update.get("stopped_by")
    emit("stop_decision", round=round_, stop=by is not None, by=by)
    return update


def turns_finished(node: str, turns: Iterable[Mapping[str, Any]]) -> None:
    """A ``turn_finished`` event per turn a turn node returned."""
    for turn in turns:
        emit("turn_finished", turn=node, agent=turn.get("agent"), round=turn.get("round"),
             label=turn.get("label"), cited=list(turn.get("cited") or []))
