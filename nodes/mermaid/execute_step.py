"""MERMAID's ReAct executor nodes ``execute_step`` and ``force_answer`` (paper §3.2, Alg. 1, A.2).

``execute_step`` is one (thought, action) = pi(P_{t-1}) call: the executor sees the claim, the
decomposition, the recalled memory and every previous step, and replies with a tool action or an
answer. The loop is the graph's: ``execute_step -> call_tool -> execute_step ...`` wired by
``route_after_execute_step`` / ``route_after_call_tool``, so every step is checkpointed. An answer
is mapped onto the task's label set with ``parse_label``; a reply with neither a valid action nor
a readable answer is a step with an empty observation (Alg. 1 l.20). If no answer has come by
step T_max, ``force_answer`` asks for a verdict on the whole history (ForceAnswer, l.26).
(The single-agent ReAct baseline's step is ``react_step`` in ``nodes/baselines/react_step.py``.)
"""

from __future__ import annotations

from typing import Any, Literal

from factdebate.nodes.llm import CallLog, ask, ask_label
from factdebate.nodes.mermaid.call_tool import enabled_tools
from factdebate.nodes.mermaid.executor_prompt import executor_values
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.routing import run_context
from factdebate.prompts.mermaid.schemas import ReactStep
from langgraph.runtime import Runtime

from factdebate.core.labels import get_label_set, parse_label
from factdebate.core.mermaid import MermaidContext, MermaidState, ReactTurn


def _turn(step: int, thought: str, label: str | None, parse: str) -> ReactTurn:
    return ReactTurn(agent="executor", round=step, query="", evidence=[], answer=thought,
                     label=label, parse=parse, action="", reason="")


async def execute_step(state: MermaidState, runtime: Runtime[MermaidContext]) -> dict[str, Any]:
    """One Thought -> Action step: a pending tool action, or the final answer."""
    ctx = runtime.context
    step = state.get("round", 0) + 1
    values = executor_values(state, ctx, await enabled_tools(ctx)) | {"step": step}
    calls = CallLog()
    parsed, raw = await ask(ctx, ctx.executor_model_spec, prompt_set(ctx).render("execute", **values),
                            ReactStep, calls=calls, role="executor", agent="executor", round_=step)
    out: dict[str, Any] = {"round": 1, **calls.update()}
    if not isinstance(parsed, ReactStep):
        out["flags"].append(f"executor: step {step} reply could not be read ({raw[:120]!r})")
        return out | {"turns": [_turn(step, raw, None, "failed")]}
    if parsed.answer:
        label = parse_label(parsed.answer, get_label_set(state["task"] or ctx.label_set))
        if label.label is None:
            out["flags"].append(f"executor: step {step} answer {parsed.answer!r} is not a label")
            return out | {"turns": [_turn(step, parsed.thought, None, "failed")]}
        if label.how == "guessed":
            out["flags"].append(f"parse: executor answer guessed as {label.label}")
        return out | {"turns": [_turn(step, parsed.thought, label.label, label.how)],
                      "label": label.label, "rationale": parsed.thought, "stopped_by": "answer"}
    if parsed.action is None:
        out["flags"].append(f"executor: step {step} gave neither an action nor an answer")
        return out | {"turns": [_turn(step, parsed.thought, None, "failed")]}
    return out | {"pending": {"thought": parsed.thought, "name": parsed.action.name,
                              "input": parsed.action.input, "reason": parsed.action.reason}}


async def force_answer(state: MermaidState, runtime: Runtime[MermaidContext]) -> dict[str, Any]:
    """ForceAnswer: a verdict from the claim, decomposition, memory and all T_max steps."""
    ctx = runtime.context
    calls = CallLog()
    reasoning, parsed = await ask_label(
        ctx, ctx.executor_model_spec,
        prompt_set(ctx).render("force_answer", **executor_values(state, ctx, [])),
        state["task"] or ctx.label_set,
        calls=calls, role="force_answer", agent="executor", round_=state["round"],
    )
    if parsed.how == "guessed":
        calls.flags.append(f"parse: forced answer guessed as {parsed.label}")
    if parsed.label is None:
        calls.flags.append("parse: forced answer unreadable; no label")
    return {"label": parsed.label, "rationale": reasoning, "stopped_by": "forced_at_t_max",
            **calls.update()}


def route_after_execute_step(
    state: MermaidState, ctx: MermaidContext | None = None
) -> Literal["call_tool", "execute_step", "force_answer", "update_memory"]:
    """Answer -> store evidence; action -> run the tool; else next step, or force at T_max."""
    if state.get("label") and state.get("stopped_by") == "answer":
        return "update_memory"
    if state.get("pending"):
        return "call_tool"
    t_max = run_context(state, MermaidContext, ctx).t_max
    return "force_answer" if state["round"] >= t_max else "execute_step"


def route_after_call_tool(
    state: MermaidState, ctx: MermaidContext | None = None
) -> Literal["execute_step", "force_answer"]:
    """Another step while t < T_max, else the forced answer."""
    t_max = run_context(state, MermaidContext, ctx).t_max
    return "force_answer" if state["round"] >= t_max else "execute_step"
