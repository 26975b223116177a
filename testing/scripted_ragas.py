"""A deterministic scripted judge for ragas' Faithfulness and AnswerRelevancy prompts.

Scripted scenarios answer calls whose role is ``ragas`` (``factdebate.tools.scoring`` tags them) with
:func:`respond_ragas`, so real ragas metric code runs against a predictable judge. The reply is
chosen by the output schema the adapter asked for (``call.schema``, a ragas pydantic model) and is
built from the input JSON that ragas places after the prompt's last ``input:`` line:

* ``StatementGeneratorOutput`` -> the answer's sentences;
* ``NLIStatementOutput`` -> verdict 1 for the first ``faithful * n`` (rounded half up)
  statements, 0 for the rest;
* ``AnswerRelevanceOutput`` -> when ``relevant``, a question restating the claim (``claim`` if
  given, else the response's first sentence of 4+ words, which a debater's answer usually devotes
  to the claim), otherwise an unrelated question; noncommittal is always 0.

Schemas are matched by class name so this module does not import ragas.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from factdebate.testing.script import ScriptCall

UNRELATED_QUESTION = "What is the recommended baking temperature for sourdough bread?"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def ragas_input(call: ScriptCall) -> dict[str, Any]:
    """The input JSON of a ragas prompt (the object after its last ``input:`` line)."""
    prompt = call.prompt
    start = prompt.rfind("\ninput:")
    if start < 0:
        raise ValueError("not a ragas metric prompt: no 'input:' section")
    body = prompt[start + len("\ninput:") :]
    end = body.rfind("\nOutput:")
    return json.loads(body[:end] if end >= 0 else body)


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (non-empty, stripped)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _question_about(text: str) -> str:
    """A yes/no question restating the first substantive sentence (skips a leading bare label)."""
    parts = sentences(text) or [text]
    core = next((s for s in parts if len(s.split()) >= 4), parts[0]).rstrip(".!? ")
    return f"Is it true that {core}?"


def respond_ragas(
    call: ScriptCall, *, faithful: float = 1.0, relevant: bool = True, claim: str = ""
) -> dict[str, Any]:
    """Reply to one ragas prompt with schema-valid JSON.

    Args:
        call: The scripted model call (``call.schema`` is the ragas output model).
        faithful: Share of statements judged supported by the context (0..1).
        relevant: Whether generated questions restate the claim (high answer relevancy) or not.
        claim: The claim text to restate; defaults to the response's first substantive sentence
            (ragas' relevancy prompt holds only the response, not the question).

    Returns:
        A dict that validates against ``call.schema``.

    Raises:
        ValueError: The call is not a Faithfulness/AnswerRelevancy prompt.
    """
    schema = call.schema_name
    data = ragas_input(call)
    if schema == "StatementGeneratorOutput":
        return {"statements": sentences(data["answer"]) or [data["answer"]]}
    if schema == "NLIStatementOutput":
        statements = list(data["statements"])
        supported = math.floor(faithful * len(statements) + 0.5)
        return {
            "statements": [
                {
                    "statement": s,
                    "reason": "scripted: stated in the context"
                    if i < supported
                    else "scripted: not in the context",
                    "verdict": 1 if i < supported else 0,
                }
                for i, s in enumerate(statements)
            ]
        }
    if schema == "AnswerRelevanceOutput":
        question = _question_about(claim or data["response"]) if relevant else UNRELATED_QUESTION
        return {"question": question, "noncommittal": 0}
    raise ValueError(f"respond_ragas: no scripted reply for schema {schema or None!r}")
