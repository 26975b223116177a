"""``decompose``: MERMAID's Claim Decomposer, D_c = phi(c) = (triplets, topic) (paper §3.1, A.1).

The node first validates the input (the same checks as Tool-MAD's ``prepare``) and resolves the
task. With the decomposer on, one structured call turns the claim into knowledge triplets
(subject, relation, object, attributes) and a topic; subjects and objects become the entity keys
of the evidence memory. An unreadable reply is flagged and the run continues without a
decomposition (no background, no memory keys) rather than failing. As MERMAID's first node it
also starts the claim: every other per-claim key is emptied (``fresh_claim``, one claim per run)
and the routers' knobs are recorded (nodes/routing.py).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.errors import InputError
from factdebate.core.labels import LABEL_SETS
from factdebate.core.state import fresh_claim
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.mermaid.state import MermaidContext, MermaidState
from factdebate.nodes.prepare import clean_claim, guard_server_run
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.retrieval import resolve_backend
from factdebate.nodes.routing import routing_settings
from factdebate.prompts.mermaid.schemas import Decomposition


def _start(state: MermaidState, ctx: MermaidContext) -> dict[str, Any]:
    """Validated claim and task, an empty ledger, and the web stand-in flag when it applies."""
    guard_server_run(ctx)
    task = LABEL_SETS.resolve(state.get("task") or ctx.label_set)
    if task == "medqa" and not state.get("options"):
        raise InputError("task 'medqa' needs answer options", "pass options {'A': ..., 'D': ...}")
    flags = []
    if not ctx.memory_only and "search_web" in ctx.mcp_tools:
        _, flag = resolve_backend("search", ctx)
        if flag:
            flags.append(flag.replace("the 'search' debater", "MERMAID's search_web tool"))
    return {
        "claim": clean_claim(state.get("claim")), "task": task, "flags": flags,
        "decomposition": {}, "entities": [], "recalled": [], "pending": None,
        "ledger": {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                   "tool_calls": {}, "memory_hits": 0},
        "routing": routing_settings(ctx),
    }


async def decompose(state: MermaidState, runtime: Runtime[MermaidContext]) -> dict[str, Any]:
    """Validated input plus the claim's triplets, topic and entity keys."""
    ctx = runtime.context
    out = _start(state, ctx)
    if not ctx.decomposer:
        return fresh_claim(MermaidState, out)
    calls = CallLog()
    values = common_values({**state, **out}, ctx, "decomposer")
    parsed, raw = await ask(ctx, ctx.decomposer_model_spec,
                            prompt_set(ctx).render("decompose", **values), Decomposition,
                            calls=calls, role="decomposer")
    update = calls.update()
    if not isinstance(parsed, Decomposition):
        flag = f"decomposer: reply could not be read ({raw[:120]!r}); continued without triplets"
        return fresh_claim(MermaidState, {**out, "ledger": out["ledger"] | update["ledger"],
                                          "flags": out["flags"] + update["flags"] + [flag]})
    return fresh_claim(MermaidState, {
        **out, "decomposition": parsed.model_dump(), "entities": parsed.entities(),
        "ledger": out["ledger"] | update["ledger"], "flags": out["flags"] + update["flags"]})
