"""``cite_verdict``: the evidence a verdict rests on, the last node of every graph (issue #22).

Reads the run's ``citations`` (one checked record per labelled reply), the verdict (``label`` or,
for multi-answer tasks, ``answers``) and the passages the run saw, and writes

* ``verdict_evidence`` - the passages cited by the deciding reply (judge, summariser, aggregator,
  a baseline's final answer) and by the last reply of every agent whose label became the verdict,
  in citation order, with ``cited_by`` and ``stance`` (``factdebate.core.citations``);
* ``retrieved_evidence`` - every other passage the run retrieved or was shown (turns' evidence and
  the passages of citation records), never called cited.

It makes no model call; it runs once per claim, after whichever node ended the debate.
"""

from __future__ import annotations

from typing import Any

from factdebate.core.citations import evidence_behind_verdict, uncited_passages


def verdict_evidence(state: dict[str, Any]) -> dict[str, Any]:
    """``{"verdict_evidence": ..., "retrieved_evidence": ...}`` of a finished run's state."""
    cited = evidence_behind_verdict(state.get("citations") or [], state.get("label"),
                                    state.get("answers") or [])
    seen: list[dict[str, Any]] = []
    for turn in state.get("turns") or []:
        seen.extend(turn.get("evidence") or [])
    for record in state.get("citations") or []:
        seen.extend(record.get("passages") or [])
    seen.extend(state.get("documents") or [])
    return {"verdict_evidence": cited, "retrieved_evidence": uncited_passages(seen, cited)}


def cite_verdict(state: dict[str, Any]) -> dict[str, Any]:
    """The graph's final node: the verdict's cited evidence and the rest (see the module)."""
    return verdict_evidence(state)
