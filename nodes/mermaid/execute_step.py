"""MERMAID's ReAct executor nodes ``execute_step`` and ``force_answer`` (paper §3.2, Alg. 1, A.2).

``execute_step`` is one (thought, action) = pi(P_{t-1}) call: the executor sees the claim, the
decomposition, the recalled memory and every previous step, and replies with a tool action or an
answer. The loop is the graph's: ``execute_step -> call_tool -> execute_step ...`` wired by
``route_after_execute_step`` / ``route_after_call_tool``, so every step is checkpointed. An answer
is mapped onto the task's label set with ``parse_label``; a reply with neither a valid action nor
a readable answer is a step with an empty observation (Alg. 1 l.20). If no answer has come by
step T_max, ``force_answer`` asks for a verdict on the whole history (ForceAnswer, l.26).
(The single-agent ReAct baseline's step is ``react_step`` in ``nodes/baselines/react_step.py``.)

Citations: the history numbers every passage it shows - recalled memory, then each
step's observation - once across the whole history (``executor_view``); the final answer (a step's
Answer or the forced answer) cites those numbers, checked against them, as the deciding citation
of the verdict's evidence (``cite(..., decides=True)``). Action steps' citations are not kept.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import ValidationError

from factdebate.core.citations import citations_in_text, with_citations
from factdebate.core.labels import get_label_set, parse_label
from factdebate.core.models.negotiation import json_candidates
from factdebate.nodes.citations import cite, cited_keys
from factdebate.nodes.llm import CallLog, ask, ask_label
from factdebate.nodes.mermaid.call_tool import enabled_tools
from factdebate.nodes.mermaid.executor_prompt import executor_view
from factdebate.nodes.mermaid.state import MermaidContext, MermaidState, ReactTurn
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.routing import refuse_past_cap, rounds_used, run_context, steps_done
from factdebate.prompts.mermaid.schemas import ReactStep

EXECUTOR = ("executor",)
"""The agent of every ReAct step's turn: one turn per step (``execute_step`` or ``call_tool``),
so the recorded steps are counted from the turns, whatever a client writes into ``round``."""


def _turn(step: int, thought: str, label: str | None, parse: str,
          cited: list[str] | None = None) -> ReactTurn:
    turn = ReactTurn(agent="executor", round=step, query="", evidence=[], answer=thought,
                     label=label, parse=parse, action="", reason="")
    if cited is not None:
        turn["cited"] = cited
    return turn


def without_citations(raw: str) -> ReactStep | None:
    """The last JSON object of ``raw`` that is a ``ReactStep`` without ``citations`` (a reply
    that left the field out, e.g. an action step under json_mode/text), or None."""
    for obj in reversed(json_candidates(raw or "")):
        try:
            return ReactStep.model_validate(obj)
        except ValidationError:
            continue
    return None


async def execute_step(state: MermaidState, runtime: Runtime[MermaidContext]) -> dict[str, Any]:
    """One Thought -> Action step: a pending tool action, or the final answer.

    The step is numbered from the steps the turns record, and refused past ``t_max`` (a state
    edit with ``goto``; the routers never send a run there).
    """
    ctx = runtime.context
    done = steps_done(state, EXECUTOR)
    refuse_past_cap(done, ctx.t_max, what="ReAct step(s)", knob="t_max")
    step = done + 1
    values, shown = executor_view(state, ctx, await enabled_tools(ctx))
    calls = CallLog()
    reply, raw = await ask(ctx, ctx.executor_model_spec,
                           prompt_set(ctx).render("execute", **values, step=step),
                           with_citations(ReactStep, len(shown)),
                           calls=calls, role="executor", agent="executor", round_=step)
    parsed = reply if isinstance(reply, ReactStep) else without_citations(raw)
    numbers = getattr(reply, "citations", None) if reply is not None else citations_in_text(raw)
    out: dict[str, Any] = {"round": Overwrite(step), **calls.update()}
    if parsed is None:
        out["flags"].append(f"executor: step {step} reply could not be read ({raw[:120]!r})")
        return out | {"turns": [_turn(step, raw, None, "failed")]}
    if parsed.answer:
        label = parse_label(parsed.answer, get_label_set(state["task"] or ctx.label_set))
        if label.label is None:
            out["flags"].append(f"executor: step {step} answer {parsed.answer!r} is not a label")
            return out | {"turns": [_turn(step, parsed.thought, None, "failed")]}
        if label.how == "guessed":
            out["flags"].append(f"parse: executor answer guessed as {label.label}")
        check = CallLog()  # the answer's citations: record, flags, ledger counts
        record = cite(shown, numbers, check, by="executor", role="executor", round_=step,
                      label=label.label, decides=True)
        return out | {
            "ledger": out["ledger"] | check.counts, "flags": out["flags"] + check.flags,
            "citations": check.citations,
            "turns": [_turn(step, parsed.thought, label.label, label.how, cited_keys(record))],
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
    values, shown = executor_view(state, ctx, [])
    reasoning, parsed = await ask_label(
        ctx, ctx.executor_model_spec, prompt_set(ctx).render("force_answer", **values),
        state["task"] or ctx.label_set,
        calls=calls, role="force_answer", agent="executor", round_=state["round"],
        shown=len(shown),
    )
    if parsed.label is not None:
        cite(shown, parsed.citations, calls, by="executor", role="executor",
             round_=state["round"], label=parsed.label, decides=True)
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
    return "force_answer" if rounds_used(state, steps_done(state, EXECUTOR)) >= t_max \
        else "execute_step"


def route_after_call_tool(
    state: MermaidState, ctx: MermaidContext | None = None
) -> Literal["execute_step", "force_answer"]:
    """Another step while t < T_max (steps counted from the turns), else the forced answer."""
    t_max = run_context(state, MermaidContext, ctx).t_max
    return "force_answer" if rounds_used(state, steps_done(state, EXECUTOR)) >= t_max \
        else "execute_step"
