"""Astute RAG (Wang et al. 2024): internal passages, source-aware consolidation.

``generate_passages`` lets the model write up to ``internal_passages`` passages from its own
memory (it may write none - "adaptive"); they join the external documents, tagged by source.
``consolidate`` clusters consistent passages and separates conflicting ones into a smaller set of
source-attributed passages; it may run several passes. ``single_answer("astute_finalize")`` then
proposes an answer per group with a confidence and selects the most reliable.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import BaseModel, Field

from factdebate.core.state import Evidence
from factdebate.nodes.baselines.ask_answer import baseline_values, note_turn
from factdebate.nodes.baselines.context import AstuteRagContext
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.routing import refuse_past_cap, rounds_used, run_context, steps_done

MEMORY = "memory"
CONSOLIDATE = ("consolidate",)
"""The agent of each consolidation pass's turn (one per pass): the passes are counted from them."""


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
    """One source-aware consolidation pass over the initial and the last context.

    Every pass records a turn (an unreadable one too), so the passes are counted from the turns;
    one past ``consolidation_rounds`` is refused (only a state edit with ``goto`` asks for it).
    """
    ctx = runtime.context
    done = steps_done(state, CONSOLIDATE)
    refuse_past_cap(done, ctx.consolidation_rounds, what="consolidation pass(es)",
                    knob="consolidation_rounds")
    round_ = done + 1
    calls = CallLog()
    out, _ = await ask(
        ctx, ctx.debater_model,
        prompt_set(ctx).render("astute_consolidate", **baseline_values(state, ctx)),
        ConsolidatedOut,
        calls=calls, role="consolidate", agent="consolidate", round_=round_,
    )
    if not isinstance(out, ConsolidatedOut):
        calls.flags.append(f"astute_rag: consolidation pass {round_} unreadable; context kept")
        return {"round": Overwrite(round_), **calls.update(),
                "turns": [note_turn("consolidate", round_, "unreadable; context kept")]}
    knowledge = [
        Evidence(id=f"group{i}", title=f"{p.source} (documents {p.documents or '-'})",
                 text=p.text, source="consolidated", url="", score=0.0)
        for i, p in enumerate(out.passages, 1) if p.text.strip()
    ]
    turn = note_turn("consolidate", round_, f"{len(knowledge)} consolidated passages",
                     evidence=knowledge)
    return {"round": Overwrite(round_), "knowledge": knowledge, "turns": [turn], **calls.update()}


def route_after_consolidation(
    state: BaselineState, ctx: AstuteRagContext | None = None
) -> Literal["consolidate", "answer"]:
    """Consolidate until ``consolidation_rounds`` passes are done (counted from the turns)."""
    done = rounds_used(state, steps_done(state, CONSOLIDATE))
    rounds = run_context(state, AstuteRagContext, ctx).consolidation_rounds
    return "consolidate" if done < rounds else "answer"
