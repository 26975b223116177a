"""``aggregate``: MADAM-RAG's aggregator (MADAM-RAG (arXiv:2504.13079) §4 "Aggregator Module", Appendix E).

(y^(t), e^(t)) = A(R^(t)): the aggregator reads this round's agent responses, shuffled against
position bias - deterministically, seeded by ``shuffle_seed``, the claim and the round, so runs
and resumed runs see the same order - and returns every correct answer with an explanation. With
``aggregator`` off (the paper's ablation) the answers are concatenated: every distinct answer an
agent gave ('unknown' and empty answers left out), with all responses as the explanation. The
final answer list also becomes the ``label`` when it is one answer that names a label of the task.

Citations (not in the paper): the aggregator is shown, besides the responses, the
opening of the document behind each one, numbered as the responses are
(``<document n="2">``, "Agent 2 (document [2]): Answer: ..."; a document two agents read keeps
one number), and cites the documents behind the answers it keeps. The reply's citations are
checked and counted every round; the record is kept with the aggregate and becomes the verdict's
deciding citation (``decides=True``, with the final answers) only for the aggregate that ends the
debate (``final_citation``, called by ``check_convergence``), so an earlier round's citations of
since-dropped answers never count.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from factdebate.core.citations import Citation, citations_in_text, with_citations
from factdebate.core.labels import get_label_set
from factdebate.core.state import Evidence
from factdebate.nodes.citations import Shown, cite
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.madam_rag.answer_from_document import without_citations
from factdebate.nodes.madam_rag.state import Aggregate, DocResponse, MadamRagContext, MadamRagState
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.render import render_evidence

_FORMAT = re.compile(r"all\s+correct\s+answers\s*:\s*\[(.*?)\]\.?\s*(?:explanation\s*:\s*(.*))?",
                     re.IGNORECASE | re.DOTALL)
_ANSWER_LIST = re.compile(r"all\s+correct\s+answers\s*:\s*\[.*?\]", re.IGNORECASE | re.DOTALL)
"""The answer list of the paper's free-text format: '[3]' there is an answer, not a citation."""
_QUOTED = re.compile(r"[\"“”']([^\"“”']+)[\"“”']")
NO_ANSWER = "unknown"
EXCERPT_CHARS = 300
"""The aggregator sees this much of the document behind each response (enough to tell which
source, or which of two namesakes, an answer comes from; the agents read the whole document)."""


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


def document_of(state: MadamRagState, agent: str) -> Evidence | None:
    """The document agent ``agent`` (``doc3``) answered from."""
    docs = state.get("agent_documents") or []
    n = int(agent.removeprefix("doc") or 0)
    return docs[n - 1] if 1 <= n <= len(docs) else None


def render_cited_responses(
    responses: list[DocResponse], state: MadamRagState, shown: Shown, blocks: dict[str, str]
) -> tuple[str, str]:
    """``(documents, responses)`` of the aggregator's prompt: the opening of each response's
    document, numbered by ``shown`` in response order, and 'Agent n (document [k]): ...' lines."""
    documents: list[str] = []
    lines: list[str] = []
    for n, r in enumerate(responses, 1):
        doc = document_of(state, r["agent"])
        answer = blocks["answer"].format_map({"answer": r["answer"] or NO_ANSWER,
                                              "explanation": r["explanation"]})
        if doc is None:
            lines.append(blocks["response"].format_map({"n": n, "answer": answer}))
            continue
        before = len(shown)
        number = shown.add(doc)
        if len(shown) > before:  # a document two agents read is shown once
            documents.append(render_evidence([_opening(doc)], numbers=[number]))
        lines.append(blocks["cited_response"].format_map({"n": n, "d": number, "answer": answer}))
    return "\n".join(documents) or "(none)", "\n\n".join(lines)


def _opening(doc: Evidence) -> Evidence:
    text = doc["text"] if len(doc["text"]) <= EXCERPT_CHARS \
        else doc["text"][: EXCERPT_CHARS - 3] + "..."
    return Evidence(**{**doc, "text": text})  # type: ignore[typeddict-item]


def final_citation(state: MadamRagState) -> dict[str, Any]:
    """``{"citations": [...]}``: the deciding citation of the aggregate that ends the debate (the
    latest one, when its aggregator reply was read), else ``{}``."""
    latest = (state.get("aggregates") or [])[-1:]
    if not latest or latest[0]["round"] != state.get("round") or "citation" not in latest[0]:
        return {}
    return {"citations": [latest[0]["citation"]]}


async def aggregate(state: MadamRagState, runtime: Runtime[MadamRagContext]) -> dict[str, Any]:
    """This round's aggregated answers and explanation (also the current final answer)."""
    ctx = runtime.context
    blocks = prompt_set(ctx).templates["blocks"]
    responses = this_round(state)
    calls = CallLog()
    record: Citation | None = None
    label_set = get_label_set(state["task"] or ctx.label_set)
    if not responses:
        calls.flags.append("documents: no documents to answer from; no answer given")
        answers, explanation = [], "No documents were available to answer from."
    elif not ctx.aggregator:
        answers, explanation = concatenate(responses), render_responses(responses, blocks)
    else:
        answers, explanation, record = await _ask_aggregator(
            state, ctx, responses, blocks, calls, label_set.normalise)
    label = label_set.normalise(answers[0]) if len(answers) == 1 else None
    summary = Aggregate(round=state["round"], answers=answers, explanation=explanation)
    if record is not None:
        summary["citation"] = record
    return {"answers": answers, "rationale": explanation, "label": label,
            "aggregates": [summary], **calls.update()}


async def _ask_aggregator(
    state: MadamRagState, ctx: MadamRagContext, responses: list[DocResponse],
    blocks: dict[str, str], calls: CallLog, normalise: Callable[[str], str | None],
) -> tuple[list[str], str, Citation | None]:
    shuffled = list(responses)
    random.Random(f"{ctx.shuffle_seed}:{state['claim']}:{state['round']}").shuffle(shuffled)
    prompts = prompt_set(ctx)
    shown = Shown()  # the documents behind the responses, numbered in the shuffled order
    documents, rendered = render_cited_responses(shuffled, state, shown, blocks)
    values = common_values(state, ctx, "aggregator") | {"documents": documents,
                                                        "responses": rendered}
    structured, raw = await ask(ctx, ctx.judge_model_spec, prompts.render("aggregate", **values),
                                with_citations(AggregateOut, len(shown)), calls=calls,
                                role="aggregator", round_=state["round"])
    parsed = structured if isinstance(structured, AggregateOut) \
        else without_citations(raw, AggregateOut)
    numbers = getattr(structured, "citations", None) if structured is not None \
        else citations_in_text(_ANSWER_LIST.sub(" ", raw or ""))
    if parsed is not None:
        reply: tuple[list[str], str] | None = (
            [a.strip() for a in parsed.answers if a.strip()], parsed.explanation.strip())
    else:
        reply = parse_aggregate(raw)
    if reply is None:
        calls.flags.append(f"parse: aggregator round {state['round']} reply unreadable; "
                           "fell back to the concatenated answers")
        return concatenate(responses), render_responses(responses, blocks), None
    answers, explanation = reply
    label = normalise(answers[0]) if len(answers) == 1 else None
    kept = [a for a in answers if key(a) != NO_ANSWER]
    record = cite(shown, numbers, calls, by="aggregator", role="aggregator",
                  round_=state["round"], label=label,
                  answers=[] if label is not None else kept, decides=True)
    calls.citations.remove(record)  # recorded once this aggregate ends the debate (final_citation)
    return answers, explanation, record
