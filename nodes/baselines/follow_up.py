"""Self-Ask (Press et al. 2022) with retrieval: follow-up questions until the final answer.

``follow_up`` asks the model for the next follow-up question (none = ready to answer);
``answer_follow_up`` answers it with the ``rag`` retriever - the passages are the Intermediate
answer, as the search engine's answer is in Self-Ask + Search; the ``answer`` node then
completes "So the final answer is:" from the whole chain.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import BaseModel, Field

from factdebate.core.context import Context
from factdebate.nodes.baselines.ask_answer import baseline_values, note_turn
from factdebate.nodes.baselines.context import SelfAskContext
from factdebate.nodes.baselines.gather_evidence import retrieval_step
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.citations import Shown
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.render import render_evidence
from factdebate.nodes.routing import refuse_past_cap, rounds_used, run_context, steps_done

QUESTION, INTERMEDIATE = "follow_up", "intermediate"
MAX_QUESTION_CHARS = 300


class FollowUpOut(BaseModel):
    """The next Self-Ask step."""

    follow_up: str = Field(
        default="", description="Next follow-up question; empty when none is needed."
    )


def self_ask_chain(state: BaselineState, ctx: Context, shown: Shown | None = None) -> dict[str, Any]:
    """``{"chain": "Follow up: ... / Intermediate answer: ..."}`` from the turns; passages
    numbered across the chain by ``shown`` (the final answer cites them)."""
    lines: list[str] = []
    for turn in state.get("turns") or []:
        if turn["agent"] == QUESTION:
            lines.append(f"Follow up: {turn['query']}")
        elif turn["agent"] == INTERMEDIATE:
            lines.append("Intermediate answer: " + (shown.render(turn["evidence"]) if shown is not None
                                                   else render_evidence(turn["evidence"])))
    return {"chain": "Yes.\n" + "\n".join(lines) if lines else "(no follow-up questions yet)"}


async def follow_up(state: BaselineState, runtime: Runtime[SelfAskContext]) -> dict[str, Any]:
    """The next follow-up question, or the decision that none is needed (numbered from the
    recorded questions; refused past ``max_follow_ups``, only a state edit asks for that)."""
    ctx = runtime.context
    done = steps_done(state, (QUESTION,))
    refuse_past_cap(done, ctx.max_follow_ups, what="follow-up question(s)", knob="max_follow_ups")
    step = done + 1
    calls = CallLog()
    out, _ = await ask(
        ctx, ctx.debater_model,
        prompt_set(ctx).render("self_ask_step",
                               **baseline_values(state, ctx) | self_ask_chain(state, ctx)),
        FollowUpOut,
        calls=calls, role="follow_up", agent=QUESTION, round_=step,
    )
    question = (out.follow_up.strip() if isinstance(out, FollowUpOut) else "")[:MAX_QUESTION_CHARS]
    if not isinstance(out, FollowUpOut):
        calls.flags.append(f"self_ask: step {step} unreadable; answering now")
    if not question:
        return {"stopped_by": "final_answer", **calls.update()}
    return {"round": Overwrite(step), "turns": [note_turn(QUESTION, step, question, query=question)],
            **calls.update()}


async def answer_follow_up(
    state: BaselineState, runtime: Runtime[SelfAskContext]
) -> dict[str, Any]:
    """Retrieve for the follow-up question; the passages are its Intermediate answer."""
    question = next(t for t in reversed(state["turns"]) if t["agent"] == QUESTION)["query"]
    return await retrieval_step(INTERMEDIATE, question, state, runtime,
                                limit=runtime.context.max_follow_ups)


def route_after_follow_up(state: BaselineState) -> Literal["answer_follow_up", "answer"]:
    """Answer the follow-up question, or give the final answer when none was asked."""
    return "answer" if state.get("stopped_by") == "final_answer" else "answer_follow_up"


def route_after_answer_follow_up(
    state: BaselineState, ctx: SelfAskContext | None = None
) -> Literal["follow_up", "answer"]:
    """Ask the next question, or answer once ``max_follow_ups`` were answered (from the turns)."""
    if state.get("stopped_by") == "max_steps":
        return "answer"
    done = rounds_used(state, steps_done(state, (QUESTION,)))
    cap = run_context(state, SelfAskContext, ctx).max_follow_ups
    return "answer" if done >= cap else "follow_up"
