"""MADAM-RAG's document agents (arXiv:2504.13079, §4 "Role of a Single LLM Agent",
"Multi-round Debate").

One agent per document, all in parallel (``Send``): r_i = L_i(q, d_i) in round 1 and
r_i = L_i(q, d_i, y^(t-1), e^(t-1)) later, where (y, e) is the previous round's aggregated answer
and explanation. An agent sees its own document only. The reply is read from JSON
{answer, explanation}, else from the paper's 'Answer: ... Explanation: ...' format; an unreadable
reply is an empty answer, flagged.

Citations: the agent's one document is shown as document 1; its reply cites [1] when
its answer rests on the document (or nothing), checked like every citation (``cite``: any other
number is dropped and flagged). The record carries the agent's label (claim tasks) or its answer
(open questions; 'unknown' is no answer), so the verdict's evidence holds the documents of the
agents whose answers became the verdict.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, TypeVar

from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel, Field, ValidationError

from factdebate.core.citations import citations_in_text, with_citations
from factdebate.core.labels import get_label_set
from factdebate.core.models.negotiation import json_candidates
from factdebate.core.state import Turn
from factdebate.nodes.citations import Shown, cite, cited_keys
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.madam_rag.state import AgentTask, Aggregate, DocResponse, MadamRagContext, MadamRagState
from factdebate.nodes.prompting import common_values, prompt_set

_FORMAT = re.compile(r"answer\s*:\s*(.+?)(?:\.?\s*explanation\s*:\s*(.*))?$",
                     re.IGNORECASE | re.DOTALL)
_BRACKETED_ANSWER = re.compile(r"answer\s*:\s*\[[^\]]*\]", re.IGNORECASE)
"""'Answer: [7]' in the paper's free-text format is an answer, not a citation."""


class DocAnswer(BaseModel):
    """Structured reply of one document agent."""

    answer: str = Field(description="The answer in a few words ('unknown' if the document "
                                     "does not answer it).")
    explanation: str = Field(description="Step-by-step reasoning explanation.")


R = TypeVar("R", bound=BaseModel)


def without_citations(raw: str, schema: type[R]) -> R | None:
    """The last JSON object of ``raw`` that validates as ``schema`` (the reply schema without
    ``citations``): a reply that left the citations out (json_mode, text) still reads."""
    for obj in reversed(json_candidates(raw or "")):
        try:
            return schema.model_validate(obj)
        except ValidationError:
            continue
    return None


def cited_answers(answer: str, label: str | None) -> list[str]:
    """The answers a reply's citation record carries: ``answer`` unless it is a label (then the
    record carries the label) or 'unknown'/empty (no answer, nothing to cite for)."""
    if label is not None or not answer.strip() or answer.strip(" .").casefold() == "unknown":
        return []
    return [answer]


def parse_agent_reply(text: str) -> tuple[str, str] | None:
    """``(answer, explanation)`` from the paper's free-text format, or None."""
    match = _FORMAT.search((text or "").strip())
    if not match:
        return None
    answer = match.group(1).strip().strip("[]\"' ").rstrip(".")
    return (answer, (match.group(2) or "").strip()) if answer else None


def render_summary(aggregate: Aggregate, template: str) -> str:
    """The previous round's (y, e) in the aggregator's own format."""
    return template.format_map({"answers": json.dumps(aggregate["answers"], ensure_ascii=False),
                                "explanation": aggregate["explanation"]})


def route_agents(state: MadamRagState) -> list[Send] | Literal["aggregate"]:
    """One ``answer_from_document`` branch per document (none -> straight to ``aggregate``)."""
    docs = state.get("agent_documents") or []
    if not docs:
        return "aggregate"
    aggregates = [a for a in state.get("aggregates") or [] if a["round"] == state["round"] - 1]
    return [
        Send("answer_from_document", AgentTask(
            agent=f"doc{i}", round=state["round"], claim=state["claim"],
            task=state["task"],  # type: ignore[typeddict-item]
            options=state.get("options"), document=doc,
            query=state.get("retrieval_query") or "",
            previous=aggregates[-1] if aggregates else None,
        ))
        for i, doc in enumerate(docs, 1)
    ]


async def answer_from_document(task: AgentTask, runtime: Runtime[MadamRagContext]) -> dict[str, Any]:
    """This round's answer of one document agent."""
    ctx = runtime.context
    prompts = prompt_set(ctx)
    blocks = prompts.templates["blocks"]
    previous = task.get("previous")
    shown = Shown([task["document"]])  # the agent's one document, as document 1
    values = common_values(task, ctx, "agent") | {
        "document": shown.render(),
        "history": blocks["history"].format_map(
            {"summary": render_summary(previous, blocks["summary"])}) if previous else "",
    }
    calls = CallLog()
    structured, raw = await ask(ctx, ctx.debater_model, prompts.render("agent", **values),
                                with_citations(DocAnswer, len(shown)), calls=calls, role="agent",
                                agent=task["agent"], round_=task["round"])
    parsed = structured if isinstance(structured, DocAnswer) \
        else without_citations(raw, DocAnswer)
    numbers = getattr(structured, "citations", None) if structured is not None \
        else citations_in_text(_BRACKETED_ANSWER.sub(" ", raw or ""))
    how = "structured"
    reply = (parsed.answer.strip(), parsed.explanation.strip()) \
        if isinstance(parsed, DocAnswer) else parse_agent_reply(raw)
    if reply is None:
        how, reply = "failed", ("", (raw or "").strip())
        calls.flags.append(f"parse: agent {task['agent']} round {task['round']} answer unreadable")
    elif not isinstance(parsed, DocAnswer):
        how = "explicit"
    answer, explanation = reply
    label = get_label_set(task["task"]).normalise(answer) if answer else None
    cited = cited_keys(cite(shown, numbers, calls, by=task["agent"], role="debater",
                            round_=task["round"], label=label,
                            answers=cited_answers(answer, label))) if answer else []
    response = DocResponse(agent=task["agent"], round=task["round"], answer=answer,
                           explanation=explanation)
    turn = Turn(
        agent=task["agent"], round=task["round"], query=task.get("query", ""),
        evidence=[task["document"]],
        answer=blocks["answer"].format_map({"answer": answer or "unknown",
                                            "explanation": explanation}),
        label=label, parse=how, cited=cited,
    )
    return {"responses": [response], "turns": [turn], **calls.update()}
