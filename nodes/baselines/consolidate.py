"""Astute RAG (Wang et al. 2024): internal passages, source-aware consolidation.

``generate_passages`` lets the model write up to ``internal_passages`` passages from its own
memory (it may write none - "adaptive"); they join the external documents, tagged by source.
``consolidate`` clusters consistent passages and separates conflicting ones into a smaller set of
source-attributed passages; it may run several passes. ``single_answer("astute_finalize")`` then
proposes an answer per group with a confidence and selects the most reliable.
"""

from __future__ import annotations

from typing import Any, Literal

from factdebate.nodes.baselines.answering import baseline_values, note_turn
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.routing import run_context
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from factdebate.core.baseline_context import AstuteRagContext
from factdebate.core.baseline_state import BaselineState
from factdebate.core.state import Evidence

MEMORY = "memory"


class PassagesOut(BaseModel):
    """Passages generated from the model's memory."""

    passages: list[str] = Field(default_factory=list, description="Generated documents.")


class ConsolidatedPassage(BaseModel):
    """One consolidated, source-attributed passage."""

    source: str = Field(description="memory, external or both.")
    documents: list[int] = Field(default_factory=list, description="Original document numbers.")
    text: str = Field(description="The consolidated document.")


class ConsolidatedOut(BaseModel):
    """The consolidated context."""

    passages: list[ConsolidatedPassage] = Field(default_factory=list)


async def generate_passages(
    state: BaselineState, runtime: Runtime[AstuteRagContext]
) -> dict[str, Any]:
    """Adaptive internal knowledge generation (no documents shown)."""
    ctx = runtime.context
    values = baseline_values(state, ctx) | {"max_passages": ctx.internal_passages}
    calls = CallLog()
    out, raw = await ask(
        ctx, ctx.debater_model,
        prompt_set(ctx).render("astute_passages", **values),
        PassagesOut,
        calls=calls, role="internal", agent=MEMORY, round_=0,
    )
    texts = [p.strip() for p in (out.passages if isinstance(out, PassagesOut) else [])]
    if not isinstance(out, PassagesOut):
        calls.flags.append("astute_rag: internal passages unreadable; none used")
    internal = [
        Evidence(id=f"memory{i}", title=MEMORY, text=text, source=MEMORY, url="", score=0.0)
        for i, text in enumerate([t for t in texts if t][: ctx.internal_passages], 1)
    ]
    turn = note_turn(MEMORY, 0, "\n".join(e["text"] for e in internal), evidence=internal)
    return {"internal": internal, "turns": [turn], **calls.update()}


async def consolidate(state: BaselineState, runtime: Runtime[AstuteRagContext]) -> dict[str, Any]:
    """One source-aware consolidation pass over the initial and the last context."""
    ctx = runtime.context
    round_ = (state.get("round") or 0) + 1
    calls = CallLog()
    out, _ = await ask(
        ctx, ctx.debater_model,
        prompt_set(ctx).render("astute_consolidate", **baseline_values(state, ctx)),
        ConsolidatedOut,
        calls=calls, role="consolidate", agent="consolidate", round_=round_,
    )
    if not isinstance(out, ConsolidatedOut):
        calls.flags.append(f"astute_rag: consolidation pass {round_} unreadable; context kept")
        return {"round": 1, **calls.update()}
    knowledge = [
        Evidence(id=f"group{i}", title=f"{p.source} (documents {p.documents or '-'})",
                 text=p.text, source="consolidated", url="", score=0.0)
        for i, p in enumerate(out.passages, 1) if p.text.strip()
    ]
    turn = note_turn("consolidate", round_, f"{len(knowledge)} consolidated passages",
                     evidence=knowledge)
    return {"round": 1, "knowledge": knowledge, "turns": [turn], **calls.update()}


def route_after_consolidation(
    state: BaselineState, ctx: AstuteRagContext | None = None
) -> Literal["consolidate", "answer"]:
    """Consolidate until ``consolidation_rounds`` passes are done, then answer."""
    done = state.get("round") or 0
    rounds = run_context(state, AstuteRagContext, ctx).consolidation_rounds
    return "consolidate" if done < rounds else "answer"
