"""``call_tool``: executes the action a ReAct step chose, o_t = tau(a_t) (paper Alg. 1 l.17-18).

Tools come from a ``ToolProvider`` (``tools/tool_providers.py``): the MCP tool server by default
(spawned over stdio with this Context's index settings, or reached at ``mcp_url``), or the same
functions in process. Each call is bounded by ``tool_timeout_s`` and retried ``tool_retries``
times; a tool that still fails - or a tool that is not enabled - yields an empty observation, a
flag and a ``tool_faults`` ledger entry, and the executor goes on. Calls are counted per tool in
``tool_calls``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.errors import FactDebateError
from factdebate.core.secrets_filter import redact
from factdebate.nodes.llm import is_retryable, with_retries
from factdebate.nodes.mermaid.state import MermaidContext, MermaidState, ReactTurn
from factdebate.nodes.render import MAX_EVIDENCE_CHARS, clip_evidence
from factdebate.nodes.retrieval import resolve_backend, retriever_settings
from factdebate.tools.tool_providers import (
    InProcessToolProvider,
    McpToolProvider,
    ToolProvider,
    ToolSpec,
    cached_provider,
)
from factdebate.tools.toolbox import ToolboxSettings

OBSERVATION_ITEMS = 8
"""At most this many evidence items of one tool call enter the history (sections and key facts
of a long article would otherwise crowd the prompt)."""
REPO_ROOT = Path(__file__).resolve().parents[1]


def toolbox_settings(ctx: MermaidContext) -> ToolboxSettings:
    """What the tools read: the Context's index, wiki source and web backend."""
    web, _ = resolve_backend("search", ctx)
    return ToolboxSettings(retriever=retriever_settings(ctx), wiki_backend=ctx.wiki_backend,
                           web_backend=web or "local_search")


def mcp_connection(ctx: MermaidContext) -> dict[str, Any]:
    """The langchain-mcp-adapters connection of the Context's MCP server."""
    if ctx.mcp_url:
        return {"transport": "streamable_http", "url": ctx.mcp_url}
    if ctx.mcp_command:
        command, *args = shlex.split(ctx.mcp_command)
    else:
        s = toolbox_settings(ctx)
        command, args = sys.executable, [
            "-m", "factdebate.tools.mcp_server", "--transport", "stdio",
            "--index-dir", s.retriever.index_dir, "--milvus-uri", s.retriever.milvus_uri,
            "--embedding-model", s.retriever.embedding_model,
            "--wiki-backend", s.wiki_backend, "--web-backend", s.web_backend,
        ]
    return {"transport": "stdio", "command": command, "args": args, "cwd": str(REPO_ROOT)}


def tool_provider(ctx: MermaidContext) -> ToolProvider:
    """The provider for this Context on the running event loop."""
    if ctx.tool_provider == "in_process":
        settings = toolbox_settings(ctx)
        return cached_provider(f"in_process:{settings}", lambda: InProcessToolProvider(settings))
    connection = mcp_connection(ctx)
    key = "mcp:" + json.dumps(connection, sort_keys=True)
    if connection["transport"] == "stdio":
        connection["env"] = dict(os.environ)  # the server needs FACTDEBATE_*, HF_HUB_OFFLINE ...
    return cached_provider(key, lambda: McpToolProvider(connection))


async def enabled_tools(ctx: MermaidContext) -> list[ToolSpec]:
    """Tools offered to the executor: none in memory-only mode, else the served ``mcp_tools``."""
    if ctx.memory_only:
        return []
    served = await tool_provider(ctx).list_tools()
    return [t for t in served if t.name in ctx.mcp_tools]


async def call_tool(state: MermaidState, runtime: Runtime[MermaidContext]) -> dict[str, Any]:
    """Run the pending action and append the step (thought, action, observation) to the turns."""
    ctx = runtime.context
    action = state["pending"] or {}
    name, text, step = action.get("name", ""), action.get("input", ""), state["round"]
    turn = ReactTurn(agent="executor", round=step, query=text, evidence=[],
                     answer=action.get("thought", ""), label=None, parse="none", action=name,
                     reason=action.get("reason", ""))
    out: dict[str, Any] = {"turns": [turn], "pending": None}
    if name not in {t.name for t in await enabled_tools(ctx)}:
        return out | _fault(name, step, "the tool is not available to the executor")
    provider = tool_provider(ctx)

    async def once() -> list[Any]:
        return await asyncio.wait_for(provider.call(name, text), timeout=ctx.tool_timeout_s)

    ledger: dict[str, Any] = {"tool_calls": {name: 1}}
    try:
        found = await with_retries(once, retries=ctx.tool_retries, what=f"{name} call")
    except Exception as exc:
        if isinstance(exc, FactDebateError) and not is_retryable(exc):
            raise  # a missing index or a rejected key is the user's to fix
        fault = _fault(name, step, redact(f"{type(exc).__name__}: {exc}")[:300])
        return out | fault | {"ledger": fault["ledger"] | ledger}
    excluded = {t.casefold() for t in state.get("exclude_titles") or []}
    turn["evidence"], cut = clip_evidence(
        [e for e in found if e["title"].casefold() not in excluded][:OBSERVATION_ITEMS])
    flags = [f"tool: {cut} passage(s) from {name} in ReAct step {step} cut to "
             f"{MAX_EVIDENCE_CHARS} characters"] if cut else []
    return out | {"ledger": ledger, "flags": flags}


def _fault(name: str, step: int, why: str) -> dict[str, Any]:
    return {"ledger": {"tool_faults": {name or "(none)": 1}},
            "flags": [f"tool fault: {name or '(no tool)'} in ReAct step {step} ({why})"]}
