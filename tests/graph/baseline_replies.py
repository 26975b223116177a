"""Scripted replies shared by the graph tests of the baselines: the question-answering case with
conflicting documents (two correct people named Michael Jordan, one piece of misinformation) and a
valid reply for every structured output the baselines ask for."""

from __future__ import annotations

from typing import Any

from factdebate.testing.scenarios import verdict
from factdebate.testing.scripted import ScriptCall

QUESTION = "In which year was Michael Jordan born?"
DOCS = [
    {"text": "Michael Jeffrey Jordan (born 1963) is a basketball player.", "type": "correct",
     "answer": "1963"},
    {"text": "Michael Irwin Jordan (born 1956) is a scientist.", "type": "correct",
     "answer": "1956"},
    {"text": "Michael Jeffrey Jordan was born in 1998.", "type": "misinfo", "answer": "1998"},
]
"""The documents of :data:`QUESTION`: two correct answers and one misinformation."""

REPLIES: dict[str, Any] = {
    "AnswersOut": {"answers": ["1963", "1956"], "explanation": "Documents 1 and 2."},
    "ReactStepOut": {"thought": "I know enough.", "action": "finish", "query": ""},
    "FollowUpOut": {"follow_up": ""},
    "ReviewOut": {"feedback": "No problems."},
    "PassagesOut": {"passages": ["memory passage: the tower stands in Paris"]},
    "ConsolidatedOut": {"passages": [{"source": "both", "documents": [1],
                                      "text": "consolidated: tower in Paris"}]},
    "DraftScore": {"reasoning": "supported", "score": 0.5},
    "ModeratorOut": {"preference": False, "supported_side": "none", "reasoning": "go on"},
}
"""A valid reply per output schema (by class name) of the baselines."""


def baseline_reply(call: ScriptCall, **replies: Any) -> Any:
    """The reply in :data:`REPLIES` (or ``replies``, by schema name, which take precedence) for the
    call's schema; a verdict of the first label for a call without one of them."""
    name = call.schema.__name__ if call.schema else ""
    return {**REPLIES, **replies}.get(name) or verdict(call, 0, "The documents bear on it.")
