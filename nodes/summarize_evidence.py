"""Summaries of long retrieved passages (Tool-MAD's medical set-up: OpenAlex abstracts).

A retriever whose ``summarize`` attribute is true (tools/openalex.py) has each passage it returns
summarised before a debater sees it, as the Tool-MAD papers do for PubMedQA with DistilBART. That
model is not available offline, so the run's debater model writes the summaries, from the
``evidence`` prompt set (``summarize_abstract``). The passages are summarised concurrently - this
is one step of one tool call, traced under it, not a debate branch. A summary that fails (after
the model retries) or comes back empty leaves the passage's own text in place, with a flag.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.language_models import BaseChatModel

from factdebate.core.context import Context
from factdebate.core.errors import FactDebateError
from factdebate.core.state import Evidence
from factdebate.nodes.llm import CallLog, call_config, model_for, with_retries
from factdebate.prompts import load_prompts

MAX_SENTENCES = 3
SUMMARY_FLAG = ("tool: {backend} abstracts summarised by {model} (the paper's DistilBART "
                "summariser is not available offline)")


async def _summary(model: BaseChatModel, passage: Evidence, query: str, ctx: Context,
                   calls: CallLog) -> str:
    messages = load_prompts("evidence").render(
        "summarize_abstract", query=query, title=passage["title"], text=passage["text"],
        max_sentences=MAX_SENTENCES)
    config = call_config(calls, role="evidence_summary", agent=passage["id"])
    reply = await with_retries(lambda: model.ainvoke(messages, config=config),
                               retries=ctx.llm_retries, what="evidence summary")
    return " ".join(str(reply.content or "").split())


async def summarize_passages(
    passages: list[Evidence], query: str, ctx: Context, *, backend: str
) -> tuple[list[Evidence], dict[str, Any], list[str]]:
    """``(passages with summarised text, ledger delta, flags)``."""
    calls = CallLog()
    model = await model_for(ctx.debater_model, ctx)
    results = await asyncio.gather(
        *(_summary(model, p, query, ctx, calls) for p in passages), return_exceptions=True)
    out: list[Evidence] = []
    failed = 0
    for passage, result in zip(passages, results, strict=True):
        if isinstance(result, FactDebateError) and not getattr(result, "retryable", False):
            raise result  # a missing key or an unknown model is the user's to fix
        if isinstance(result, BaseException) or not result:
            failed += 1
            out.append(passage)
        else:
            out.append(Evidence(**{**passage, "text": result}))
    flags = [SUMMARY_FLAG.format(backend=backend, model=ctx.debater_model)]
    if failed:
        flags.append(f"tool: {failed} {backend} summary call(s) failed or came back empty; "
                     "the abstract itself was used")
    return out, calls.tracker.delta(), flags
