"""``retrieve``: a debater runs its query against its own tool (Tool-MAD Alg. 1, Retrieve(A, q)).

The tools, timeouts, retries and fault handling are shared (``nodes/retrieval.py``); this node is
Tool-MAD's per-round call with the debater's query and ``top_k``.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.context import debater_kind
from factdebate.core.state import DebaterState
from factdebate.nodes.retrieval import resolve_backend, search_tool
from factdebate.nodes.tool_mad.state import ToolMadContext


async def retrieve(state: DebaterState, runtime: Runtime[ToolMadContext]) -> dict[str, Any]:
    """Top-k evidence for this round's query from the debater's tool."""
    ctx = runtime.context
    backend, _ = resolve_backend(debater_kind(state["agent"]), ctx)
    if backend is None or not state.get("query"):
        return {"evidence": []}
    return await search_tool(
        backend, state["query"], ctx, k=ctx.top_k, exclude_titles=state.get("exclude_titles"),
        who=f"agent {state['agent']} in round {state['round']}",
    )
