"""``ask_answer`` and its helpers: how baseline steps get an answer.

Prompt values, the answer call in either answer mode, turns (named after ``ask_answer``, its
entry point: the module holds no node).

In label mode the answer is a verdict on the task's label set (``ask_label``: structured, then
free text, then one re-ask). In multi-answer mode (``answer_mode="answers"``, RAMDocs-style
questions) it is ``AnswersOut`` - every correct answer plus an explanation - with MADAM-RAG's
"All Correct Answers: [...]" format parsed from free text as the fallback.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field

from factdebate.core.citations import citations_in_text, with_citations
from factdebate.core.context import Context
from factdebate.core.state import Evidence, Turn
from factdebate.nodes.citations import Shown, cite, cited_keys
from factdebate.nodes.llm import CallLog, ask, ask_label
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.render import render_options
from factdebate.prompts import label_instructions


class AnswersOut(BaseModel):
    """Multi-answer reply: every correct answer and why."""

    answers: list[str] = Field(description="All correct answers (short), [] if none is known.")
    explanation: str = Field(description="Step-by-step reasoning naming the documents used.")


@dataclass
class Answer:
    """One answer step's result in either mode."""

    reasoning: str
    label: str | None = None
    answers: list[str] = field(default_factory=list)
    parse: str = "structured"
    cited: list[str] = field(default_factory=list)
    """Keys of the passages the answer cited (checked against what its prompt showed)."""


_ALL_ANSWERS = re.compile(r"All Correct Answers:\s*(\[.*?\])", re.IGNORECASE | re.DOTALL)


def parse_answers(text: str) -> list[str] | None:
    """Answers from MADAM-RAG's ``All Correct Answers: [...]`` line (None when absent)."""
    match = _ALL_ANSWERS.search(text or "")
    if not match:
        return None
    raw = match.group(1).replace("\u201d", '"').replace("\u201c", '"')
    try:
        items = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        items = [part.strip(" '\"") for part in raw.strip("[]").split(",")]
    return clean_answers([str(x) for x in items]) if isinstance(items, list) else None


def clean_answers(answers: list[str]) -> list[str]:
    """Trimmed, de-duplicated (case-insensitive) answers in their order; 'unknown' dropped."""
    seen: set[str] = set()
    out = []
    for answer in answers:
        text = " ".join(str(answer).split())
        key = text.casefold()
        if text and key not in seen and key != "unknown":
            seen.add(key)
            out.append(text)
    return out


def baseline_values(state: Any, ctx: Context) -> dict[str, Any]:
    """Placeholders every baseline template may use (subject, claim, task, answer format, evidence).

    ``shown`` (not a placeholder) numbers the passages the templates show, ``{evidence}`` first and
    ``{knowledge}`` after it under continued numbers, so an answer cites them unambiguously; a node
    passes it on to :func:`ask_answer` (and to a trajectory renderer that shows more)."""
    shown = Shown()
    formats = prompt_set(ctx).templates["formats"]
    if state.get("multi_answer"):
        subject, task, answer_format = "Question", formats["answers_task"], formats["answers"]
    else:
        instructions = label_instructions()[state["task"]]
        subject, task = instructions["subject"], instructions["task"]
        answer_format = f"{instructions['labels']}\n{formats['label']}"
    return {
        "subject": subject,
        "subject_lower": subject.lower(),
        "example": formats["answers_example"] if state.get("multi_answer") else "",
        "claim": state["claim"],
        "options": render_options(state.get("options")),
        "task": task,
        "answer_format": answer_format,
        "evidence": shown.render([*(state.get("internal") or []), *(state.get("evidence") or [])]),
        "knowledge": shown.render(state.get("knowledge") or []),
        "shown": shown,
    }


async def ask_answer(
    ctx: Context,
    spec: str,
    messages: list[BaseMessage],
    state: Any,
    *,
    calls: CallLog,
    role: str,
    agent: str = "",
    round_: int = 0,
    shown: Shown | None = None,
    decides: bool = False,
) -> Answer:
    """The answer of one step: a label (label mode, ``ask_label``) or a list of answers
    (multi-answer mode, ``ask`` with ``AnswersOut``), from the model of ``spec``.

    The reply cites the ``shown`` passages (``baseline_values(...)["shown"]``); its citations are
    checked and recorded in ``calls`` (``nodes/citations.cite``), ``decides`` for the answer that
    alone is the verdict (a one-call baseline, a final answer) - samples, drafts and debaters are
    counted by their label instead."""
    shown = shown if shown is not None else Shown()
    if not state.get("multi_answer"):
        reasoning, parsed = await ask_label(ctx, spec, messages, state["task"], calls=calls,
                                            role=role, agent=agent, round_=round_,
                                            shown=len(shown))
        answer = Answer(reasoning, label=parsed.label, parse=parsed.how)
        raw_cited: Any = parsed.citations
    else:
        out, raw = await ask(ctx, spec, messages, with_citations(AnswersOut, len(shown)),
                             calls=calls, role=role, agent=agent, round_=round_)
        if isinstance(out, AnswersOut):  # with_citations subclasses it
            answer = Answer(out.explanation, answers=clean_answers(out.answers))
            raw_cited = getattr(out, "citations", None) or []
        else:
            answers = parse_answers(raw)
            answer = Answer(raw, answers=answers or [],
                            parse="explicit" if answers is not None else "failed")
            raw_cited = citations_in_text(raw)
    if answer.label is not None or answer.answers:
        record = cite(shown, raw_cited, calls, by=agent or role, role=role, round_=round_,
                      label=answer.label, answers=answer.answers, decides=decides)
        answer.cited = cited_keys(record)
    return answer


def answer_turn(
    agent: str, round_: int, answer: Answer, *, query: str = "",
    evidence: list[Evidence] | None = None,
) -> Turn:
    """The turn recording one answer step."""
    return Turn(agent=agent, round=round_, query=query, evidence=list(evidence or []),
                        answer=answer.reasoning, label=answer.label, parse=answer.parse,
                        answers=list(answer.answers), cited=list(answer.cited))


def note_turn(agent: str, round_: int, text: str, *, query: str = "",
              evidence: list[Evidence] | None = None) -> Turn:
    """A turn without an answer (a review, a thought, a follow-up question, an observation)."""
    return Turn(agent=agent, round=round_, query=query, evidence=list(evidence or []),
                        answer=text, label=None, parse="")


def flag_parse(calls: CallLog, agent: str, round_: int, answer: Answer) -> None:
    """Record a guessed or failed parse in the run's flags."""
    if answer.parse in ("guessed", "failed"):
        shown = answer.label or ", ".join(answer.answers)
        calls.flags.append(f"parse: {agent} step {round_} answer {answer.parse}"
                           + (f" as {shown}" if shown else ""))


def result_fields(turn: Mapping[str, Any]) -> dict[str, Any]:
    """The final-result keys taken from one turn."""
    return {"label": turn["label"], "answers": list(turn.get("answers") or []),
            "rationale": turn["answer"]}


def first_round(state: Any) -> int:
    """``{"round": first_round(state)}`` marks a one-shot baseline as having used one round."""
    return 0 if state.get("round") else 1
