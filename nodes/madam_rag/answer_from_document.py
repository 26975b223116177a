"""MADAM-RAG's document agents (madam-rag.txt §4 "Role of a Single LLM Agent", "Multi-round Debate").

One agent per document, all in parallel (``Send``): r_i = L_i(q, d_i) in round 1 and
r_i = L_i(q, d_i, y^(t-1), e^(t-1)) later, where (y, e) is the previous round's aggregated answer
and explanation. An agent sees its own document only. The reply is read from JSON
{answer, explanation}, else from the paper's 'Answer: ... Explanation: ...' format; an unreadable
reply is an empty answer, flagged.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.render import render_evidence
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel, Field

from factdebate.core.labels import get_label_set
from factdebate.core.madam_rag import AgentTask, Aggregate, DocResponse, MadamRagContext, MadamRagState
from factdebate.core.state import Turn

_FORMAT = re.compile(r"answer\s*:\s*(.+?)(?:\.?\s*explanation\s*:\s*(.*))?$",
                     re.IGNORECASE | re.DOTALL)


class DocAnswer(BaseModel):
    """Structured reply of one document agent."""

    answer: str = Field(description="The answer in a few words ('unknown' if the document "
                                     "does not answer it).")
    explanation: str = Field(description="Step-by-step reasoning explanation.")


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
    values = common_values(task, ctx, "agent") | {
        "document": render_evidence([task["document"]]),
        "history": blocks["history"].format_map(
            {"summary": render_summary(previous, blocks["summary"])}) if previous else "",
    }
    calls = CallLog()
    parsed, raw = await ask(ctx, ctx.debater_model, prompts.render("agent", **values), DocAnswer,
                            calls=calls, role="agent", agent=task["agent"], round_=task["round"])
    how = "structured"
    reply = (parsed.answer.strip(), parsed.explanation.strip()) \
        if isinstance(parsed, DocAnswer) else parse_agent_reply(raw)
    if reply is None:
        how, reply = "failed", ("", (raw or "").strip())
        calls.flags.append(f"parse: agent {task['agent']} round {task['round']} answer unreadable")
    elif not isinstance(parsed, DocAnswer):
        how = "explicit"
    answer, explanation = reply
    response = DocResponse(agent=task["agent"], round=task["round"], answer=answer,
                           explanation=explanation)
    turn = Turn(
        agent=task["agent"], round=task["round"], query=task.get("query", ""),
        evidence=[task["document"]],
        answer=blocks["answer"].format_map({"answer": answer or "unknown",
                                            "explanation": explanation}),
        label=get_label_set(task["task"]).normalise(answer) if answer else None, parse=how,
    )
    return {"responses": [response], "turns": [turn], **calls.update()}
