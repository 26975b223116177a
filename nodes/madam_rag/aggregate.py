"""``aggregate``: MADAM-RAG's aggregator (madam-rag.txt §4 "Aggregator Module", Appendix E).

(y^(t), e^(t)) = A(R^(t)): the aggregator reads this round's agent responses, shuffled against
position bias - deterministically, seeded by ``shuffle_seed``, the claim and the round, so runs
and resumed runs see the same order - and returns every correct answer with an explanation. With
``aggregator`` off (the paper's ablation) the answers are concatenated: every distinct answer an
agent gave ('unknown' and empty answers left out), with all responses as the explanation. The
final answer list also becomes the ``label`` when it is one answer that names a label of the task.
"""

from __future__ import annotations

import random
import re
from typing import Any

from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import common_values, prompt_set
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from factdebate.core.labels import get_label_set
from factdebate.core.madam_rag import Aggregate, DocResponse, MadamRagContext, MadamRagState

_FORMAT = re.compile(r"all\s+correct\s+answers\s*:\s*\[(.*?)\]\.?\s*(?:explanation\s*:\s*(.*))?",
                     re.IGNORECASE | re.DOTALL)
_QUOTED = re.compile(r"[\"“”']([^\"“”']+)[\"“”']")
NO_ANSWER = "unknown"


class AggregateOut(BaseModel):
    """Structured reply of the aggregator."""

    answers: list[str] = Field(description="Every correct answer (['unknown'] if there is none).")
    explanation: str = Field(description="Step-by-step reasoning explanation.")


def parse_aggregate(text: str) -> tuple[list[str], str] | None:
    """``(answers, explanation)`` from 'All Correct Answers: [...]. Explanation: ...', or None."""
    match = _FORMAT.search(text or "")
    if not match:
        return None
    inside = match.group(1)
    items = _QUOTED.findall(inside) or inside.split(",")
    return [i.strip() for i in items if i.strip()], (match.group(2) or "").strip()


def key(answer: str) -> str:
    """Comparison form of an answer: case, punctuation and spacing ignored."""
    return " ".join(re.sub(r"[^\w\s]", " ", answer.casefold()).split())


def concatenate(responses: list[DocResponse]) -> list[str]:
    """Every distinct answer in document order, without 'unknown' and empty answers."""
    seen: set[str] = set()
    out: list[str] = []
    for r in responses:
        k = key(r["answer"])
        if k and k != NO_ANSWER and k not in seen:
            seen.add(k)
            out.append(r["answer"])
    return out


def this_round(state: MadamRagState) -> list[DocResponse]:
    """This round's responses in document order (doc1, doc2, ..., doc10)."""
    rows = [r for r in state.get("responses") or [] if r["round"] == state["round"]]
    return sorted(rows, key=lambda r: int(r["agent"].removeprefix("doc") or 0))


def render_responses(responses: list[DocResponse], blocks: dict[str, str]) -> str:
    """Numbered 'Agent n: Answer: ... Explanation: ...' lines in the given order."""
    return "\n\n".join(
        blocks["response"].format_map({"n": n, "answer": blocks["answer"].format_map(
            {"answer": r["answer"] or NO_ANSWER, "explanation": r["explanation"]})})
        for n, r in enumerate(responses, 1)
    )


async def aggregate(state: MadamRagState, runtime: Runtime[MadamRagContext]) -> dict[str, Any]:
    """This round's aggregated answers and explanation (also the current final answer)."""
    ctx = runtime.context
    blocks = prompt_set(ctx).templates["blocks"]
    responses = this_round(state)
    calls = CallLog()
    if not responses:
        calls.flags.append("documents: no documents to answer from; no answer given")
        answers, explanation = [], "No documents were available to answer from."
    elif not ctx.aggregator:
        answers, explanation = concatenate(responses), render_responses(responses, blocks)
    else:
        answers, explanation = await _ask_aggregator(state, ctx, responses, blocks, calls)
    label_set = get_label_set(state["task"] or ctx.label_set)
    label = label_set.normalise(answers[0]) if len(answers) == 1 else None
    return {"answers": answers, "rationale": explanation, "label": label,
            "aggregates": [Aggregate(round=state["round"], answers=answers,
                                     explanation=explanation)],
            **calls.update()}


async def _ask_aggregator(
    state: MadamRagState, ctx: MadamRagContext, responses: list[DocResponse],
    blocks: dict[str, str], calls: CallLog,
) -> tuple[list[str], str]:
    shuffled = list(responses)
    random.Random(f"{ctx.shuffle_seed}:{state['claim']}:{state['round']}").shuffle(shuffled)
    prompts = prompt_set(ctx)
    values = common_values(state, ctx, "aggregator") | {
        "responses": render_responses(shuffled, blocks)}
    parsed, raw = await ask(ctx, ctx.judge_model_spec, prompts.render("aggregate", **values),
                            AggregateOut, calls=calls, role="aggregator", round_=state["round"])
    if isinstance(parsed, AggregateOut):
        return [a.strip() for a in parsed.answers if a.strip()], parsed.explanation.strip()
    reply = parse_aggregate(raw)
    if reply is not None:
        return reply
    calls.flags.append(f"parse: aggregator round {state['round']} reply unreadable; "
                       "fell back to the concatenated answers")
    return concatenate(responses), render_responses(responses, blocks)
