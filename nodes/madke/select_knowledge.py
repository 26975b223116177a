"""``select_knowledge``: MADKE's adaptive knowledge selection (arXiv:2312.04854, §3.1.2, Eq. 2,
Prompt 3.1).

Before every answer each debater picks up to 3 items of the shared pool by number - from the
question alone in round 1, from the question and its own previous answer later - or declares
"[No Found]" and answers without external knowledge. With ``knowledge_selection`` off (the
"w/o AKS" ablation) the whole pool is used; with an empty pool there is nothing to select and no
call is made. The reply is read from JSON, else from the paper's free-text tokens (``[2]``,
``[No Found]``); numbers outside the pool are dropped and an unreadable reply means no knowledge,
both flagged.
"""

from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from factdebate.core.state import Evidence
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.madke.speak import render_stance
from factdebate.nodes.madke.state import MadkeContext, SpeakerState
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.render import render_evidence

MAX_SELECTED = 3
"""Prompt 3.1: "return up to 3 of the most helpful knowledge"."""

_NO_FOUND = re.compile(r"\[\s*no\s*found\s*\]", re.IGNORECASE)
_NUMBERS = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")


class KnowledgeChoice(BaseModel):
    """Structured reply of adaptive knowledge selection."""

    reasoning: str = Field(description="Why these knowledge items help (or none does).")
    selected: list[int] = Field(default_factory=list,
                                description="Numbers of up to 3 helpful knowledge items.")
    no_found: bool = Field(default=False,
                           description="True when no knowledge item helps ([No Found]).")


def parse_selection(text: str) -> tuple[list[int], bool] | None:
    """``(numbers, no_found)`` from a free-text reply, or None when it holds neither."""
    if _NO_FOUND.search(text or ""):
        return [], True
    numbers = [int(n) for m in _NUMBERS.finditer(text or "") for n in m.group(1).split(",")]
    return (numbers, False) if numbers else None


def pick(pool: list[Evidence], numbers: list[int]) -> tuple[list[Evidence], list[int]]:
    """The first ``MAX_SELECTED`` distinct valid items (1-based) and the numbers dropped."""
    chosen: list[int] = []
    dropped: list[int] = []
    for n in numbers:
        if not 1 <= n <= len(pool):
            dropped.append(n)
        elif n not in chosen and len(chosen) < MAX_SELECTED:
            chosen.append(n)
    return [pool[n - 1] for n in chosen], dropped


async def select_knowledge(state: SpeakerState, runtime: Runtime[MadkeContext]) -> dict[str, Any]:
    """The knowledge this debater uses this round."""
    ctx = runtime.context
    pool = list(state.get("pool") or [])
    if not pool:
        return {"selected": []}
    if not ctx.knowledge_selection:
        return {"selected": pool}
    prompts = prompt_set(ctx)
    values = common_values(state, ctx, "debater") | {
        "role": prompts.templates["roles"]["debater"],
        "knowledges": render_evidence(pool),
        "agent_history_answer": _history(state, prompts.templates["knowledge_blocks"]["history"]),
    }
    calls = CallLog()
    parsed, raw = await ask(ctx, ctx.debater_model, prompts.render("select_knowledge", **values),
                            KnowledgeChoice, calls=calls, role="select_knowledge",
                            agent=state["agent"], round_=state["round"])
    where = f"agent {state['agent']} round {state['round']}"
    reply = (parsed.selected, parsed.no_found) if isinstance(parsed, KnowledgeChoice) \
        else parse_selection(raw)
    if reply is None:
        calls.flags.append(f"knowledge selection: {where} reply unreadable; no knowledge used")
        return {"selected": [], **calls.update()}
    numbers, no_found = reply
    if no_found:
        return {"selected": [], **calls.update()}
    selected, dropped = pick(pool, numbers)
    if dropped:
        calls.flags.append(f"knowledge selection: {where} named items {dropped} outside the pool "
                           f"of {len(pool)}")
    return {"selected": selected, **calls.update()}


def _history(state: SpeakerState, template: str) -> str:
    """Prompt 3.1's {agent_history_answer}: the debater's own previous answer (rounds > 1)."""
    own = state.get("own_previous")
    return template.format_map({"answer": render_stance(own)}) if own else ""
