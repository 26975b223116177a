"""Retrieval shared by every node that searches: a tool per debater kind, timeouts, retries, faults.

Used by Tool-MAD's ``retrieve`` (``nodes/tool_mad/retrieve.py``), MADKE's ``gather_knowledge``,
MADAM-RAG's ``gather_documents``, the baselines' ``gather_evidence``, MERMAID's tools and
``prepare``. Backends come from the Context (``rag_backend``, ``search_backend``); ``search_backend="auto"``
means Tavily when ``TAVILY_API_KEY`` is set, else the offline keyword stand-in, which is flagged in
the output. Calls are bounded by a timeout and retried with back-off (honouring a 429's
``Retry-After``, capped); a tool that still fails - timeout, 429, 5xx, unreachable host - yields
no evidence, a flag and a ``tool_faults`` ledger entry, and the debate goes on. Errors only the
user can fix (no index, a rejected API key) are raised, and so is a damaged local index
(``IndexDamagedError``: missing data files, unreadable segments): its empty answer would otherwise
look like a legitimate "nothing found", so ``verify`` stops and ``eval`` records an error row,
while a query that matches nothing stays an ordinary empty result. A retriever that asks for it
(``summarize``, e.g. OpenAlex) has its passages summarised by the run's model
(nodes/summarize_evidence.py).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from factdebate.core.context import Context
from factdebate.core.errors import ConfigError, FactDebateError
from factdebate.core.retrievers import search_backend_of
from factdebate.core.secrets_filter import redact
from factdebate.core.state import Evidence, add_ledger
from factdebate.nodes.llm import is_retryable, with_retries
from factdebate.nodes.render import MAX_EVIDENCE_CHARS, clip_evidence
from factdebate.nodes.summarize_evidence import summarize_passages
from factdebate.tools.base import RetrieverSettings, cached_retriever, get_retriever
from factdebate.tools.traced import traced_search

STAND_IN_FLAG = (
    "search: no TAVILY_API_KEY, so the 'search' debater used the offline keyword index "
    "(local_search) as a stand-in for web search"
)


def resolve_backend(kind: str, ctx: Context) -> tuple[str | None, str | None]:
    """``(backend name or None for tool-less debaters, flag to report or None)``."""
    if kind == "rag":
        return ctx.rag_backend, None
    if kind == "search":
        backend = search_backend_of(ctx.search_backend)
        if ctx.search_backend == "auto":
            return backend, STAND_IN_FLAG if backend == "local_search" else None
        if backend == "tavily" and not os.environ.get("TAVILY_API_KEY"):
            raise ConfigError(
                "search backend 'tavily' needs TAVILY_API_KEY",
                "export TAVILY_API_KEY=... or use --search-backend local_search offline",
            )
        return backend, None
    return None, None


def retriever_settings(ctx: Context) -> RetrieverSettings:
    """Backend settings derived from the Context."""
    return RetrieverSettings(
        index_dir=str(ctx.index_path),
        milvus_uri=ctx.resolved_milvus_uri,
        embedding_model=ctx.embedding_model,
        langchain_factory=ctx.langchain_factory,
        pool=ctx.pool,
    )


async def search_tool(
    backend: str,
    query: str,
    ctx: Context,
    *,
    k: int,
    exclude_titles: list[str] | None,
    who: str,
) -> dict[str, Any]:
    """Top-``k`` passages of ``backend`` for ``query`` as a node update (evidence, ledger, flags).

    Shared by every node that calls a retriever: bounded by ``tool_timeout_s``, retried with
    back-off, counted in ``tool_calls``; a tool that still fails yields no evidence, a flag naming
    ``who`` asked and a ``tool_faults`` entry. Passages titled as in ``exclude_titles`` are dropped.
    """
    excluded = {t.casefold() for t in exclude_titles or []}
    settings = retriever_settings(ctx)
    retriever = cached_retriever(backend, settings) or await asyncio.to_thread(
        get_retriever, backend, settings)

    async def once() -> list[Evidence]:
        return await asyncio.wait_for(  # a retriever run in traces (tools/traced.py)
            traced_search(retriever, query, k=k + len(excluded), name=backend),
            timeout=ctx.tool_timeout_s,
        )

    ledger: dict[str, Any] = {"tool_calls": {backend: 1}}
    try:
        found = await with_retries(once, retries=ctx.tool_retries, what=f"{backend} search")
    except Exception as exc:
        if isinstance(exc, FactDebateError) and not is_retryable(exc):
            raise  # an index that does not exist or a bad key is the user's to fix
        fault = redact(f"{type(exc).__name__}: {exc}")[:300]  # a URL or key in a library's text
        return {
            "evidence": [],
            "ledger": {**ledger, "tool_faults": {backend: 1}},
            "flags": [f"tool fault: {backend} failed for {who} after {ctx.tool_retries} "
                      f"retries ({fault})"],
        }
    kept, cut = clip_evidence([e for e in found if e["title"].casefold() not in excluded][:k])
    flags = [f"tool: {cut} passage(s) from {backend} for {who} cut to {MAX_EVIDENCE_CHARS} "
             "characters"] if cut else []
    if kept and getattr(retriever, "summarize", False):  # tools/openalex.py: the paper's step
        kept, used, notes = await summarize_passages(kept, query, ctx, backend=backend)
        ledger, flags = add_ledger(ledger, used), flags + notes
    return {"evidence": kept, "ledger": ledger, "flags": flags}
