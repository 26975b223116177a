"""Single-agent ReAct (Yao et al. 2023) with the RAG tool: thought/action steps as a graph loop.

``react_step`` writes one Thought and picks an Action (``search`` with a query, or ``finish``);
``react_tool`` runs the search and records the Observation; after ``finish`` or ``max_steps``
searches the ``answer`` node gives the final answer from the whole trajectory.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import BaseModel, Field

from factdebate.core.context import Context
from factdebate.core.state import Turn
from factdebate.nodes.baselines.ask_answer import baseline_values, note_turn
from factdebate.nodes.baselines.context import ReactContext
from factdebate.nodes.baselines.gather_evidence import retrieval_step
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.citations import Shown
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.render import render_evidence
from factdebate.nodes.routing import refuse_past_cap, rounds_used, run_context, steps_done

THOUGHT, OBSERVATION = "react", "tool"


class ReactStepOut(BaseModel):
    """One ReAct step."""

    thought: str = Field(description="Reasoning about what is known and what is still needed.")
    action: Literal["search", "finish"] = Field(description="search the index, or finish.")
    query: str = Field(default="", description="Search query (empty when finishing).")


def react_trajectory(state: BaselineState, ctx: Context, shown: Shown | None = None) -> dict[str, Any]:
    """``{"trajectory": "Thought 1 / Action 1 / Observation 1 ..."}`` from the turns.

    Observations are numbered across the trajectory by ``shown`` (the final answer cites them);
    without it each observation counts from 1."""
    lines: list[str] = []
    for turn in state.get("turns") or []:
        n = turn["round"]
        if turn["agent"] == THOUGHT:
            lines.append(f"Thought {n}: {turn['answer']}")
            action = f"search[{turn['query']}]" if turn["query"] else "finish"
            lines.append(f"Action {n}: {action}")
        elif turn["agent"] == OBSERVATION:
            lines.append(f"Observation {n}: " + (shown.render(turn["evidence"]) if shown is not None
                                                  else render_evidence(turn["evidence"])))
    return {"trajectory": "\n".join(lines) or "(no steps yet)"}


def _last_thought(state: BaselineState) -> Turn:
    return next(t for t in reversed(state.get("turns") or []) if t["agent"] == THOUGHT)


async def react_step(state: BaselineState, runtime: Runtime[ReactContext]) -> dict[str, Any]:
    """The next Thought and Action (numbered from the recorded thoughts; refused past
    ``max_steps``, which only a state edit with ``goto`` can ask for)."""
    ctx = runtime.context
    done = steps_done(state, (THOUGHT,))
    refuse_past_cap(done, ctx.max_steps, what="ReAct step(s)", knob="max_steps")
    step = done + 1
    values = baseline_values(state, ctx) | react_trajectory(state, ctx) | {"step": step}
    calls = CallLog()
    out, raw = await ask(
        ctx, ctx.debater_model,
        prompt_set(ctx).render("react_step", **values),
        ReactStepOut,
        calls=calls, role="react", agent=THOUGHT, round_=step,
    )
    if not isinstance(out, ReactStepOut):
        calls.flags.append(f"react: step {step} unreadable; the agent answers now")
        out = ReactStepOut(thought=raw, action="finish")
    query = (out.query.strip() or state["claim"]) if out.action == "search" else ""
    update = {"round": Overwrite(step), "turns": [note_turn(THOUGHT, step, out.thought, query=query)],
              **calls.update()}
    return update | ({"stopped_by": "finish"} if out.action == "finish" else {})


async def react_tool(state: BaselineState, runtime: Runtime[ReactContext]) -> dict[str, Any]:
    """Run the step's search; the passages are the Observation."""
    return await retrieval_step(OBSERVATION, _last_thought(state)["query"], state, runtime,
                                limit=runtime.context.max_steps)


def route_after_react_step(state: BaselineState) -> Literal["react_tool", "answer"]:
    """Search, or answer once the agent finishes."""
    return "answer" if state.get("stopped_by") == "finish" else "react_tool"


def route_after_react_tool(
    state: BaselineState, ctx: ReactContext | None = None
) -> Literal["react_step", "answer"]:
    """Another step, or answer once ``max_steps`` searches are used (counted from the turns)."""
    if state.get("stopped_by") == "max_steps":
        return "answer"
    done = rounds_used(state, steps_done(state, (THOUGHT,)))
    return "answer" if done >= run_context(state, ReactContext, ctx).max_steps else "react_step"
