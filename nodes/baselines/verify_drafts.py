"""Speculative RAG verification (Wang et al. 2024): score every draft, the best one is the answer.

The paper's generalist verifier scores a draft by its own likelihoods (self-consistency score
P(draft, rationale | question) times self-reflection score P("Yes" | "Do you think the rationale
supports the answer?")). Chat APIs do not expose those probabilities uniformly, so
``verify_draft`` asks the verifier model (the judge model) for that judgement as a score in
[0, 1], once per draft, inside the draft's own branch. ``select_draft`` takes the highest score
(the first draft on ties).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from factdebate.nodes.baselines.ask_answer import baseline_values, result_fields
from factdebate.nodes.baselines.context import SpeculativeRagContext
from factdebate.nodes.baselines.state import BaselineState, BranchState
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import prompt_set


class DraftScore(BaseModel):
    """The verifier's judgement of one draft."""

    reasoning: str = Field(default="", description="Short check of the draft.")
    score: float = Field(ge=0.0, le=1.0, description="0 = unsupported, 1 = fully supported.")


async def verify_draft(
    state: BranchState, runtime: Runtime[SpeculativeRagContext]
) -> dict[str, Any]:
    """The verifier's score of this branch's draft (0 and a flag when unreadable)."""
    ctx = runtime.context
    shown = ", ".join(state.get("answers") or []) or state.get("label") or "no answer"
    values = baseline_values(state, ctx) | {"draft_answer": shown,
                                            "draft_rationale": state.get("answer", "")}
    calls = CallLog()
    out, _ = await ask(
        ctx, ctx.judge_model_spec,
        prompt_set(ctx).render("speculative_verify", **values),
        DraftScore,
        calls=calls, role="verifier", agent=state["agent"], round_=1,
    )
    score = out.score if isinstance(out, DraftScore) else 0.0
    if not isinstance(out, DraftScore):
        calls.flags.append(f"speculative_rag: verifier reply for {state['agent']} unreadable; "
                           "scored 0")
    row = {"round": 1, "verifier": score}
    return {"scores": {state["agent"]: [row]}, **calls.update()}


def select_draft(state: BaselineState) -> dict[str, Any]:
    """The best-scored draft is the answer."""
    drafts = sorted((t for t in state.get("turns") or [] if t["agent"].startswith("draft")),
                    key=lambda t: int(t["agent"].removeprefix("draft") or 0))
    scores = state.get("scores") or {}

    def score(agent: str) -> float:
        rows = scores.get(agent) or [{}]
        return float(rows[-1].get("verifier", 0.0))  # type: ignore[misc]

    best = max(drafts, key=lambda t: score(t["agent"]))  # max keeps the first on ties
    rationale = f"{best['answer']} (verifier score {score(best['agent']):.2f}, {best['agent']})"
    # the verdict rests on what the selected draft cited, not on other drafts with its label
    chosen = [dict(c, by="verifier", role="verifier", decides=True)
              for c in state.get("citations") or [] if c["by"] == best["agent"]][-1:]
    return {**result_fields(best), "rationale": rationale, "stopped_by": "verifier",
            "round": 1, **({"citations": chosen} if chosen else {})}
