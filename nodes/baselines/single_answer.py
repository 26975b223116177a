"""``single_answer``: one answer call from a named template - the one-call baselines' node.

Standard prompting, zero-shot CoT, RAG / concatenated-prompt RAG and No-RAG differ only in their
template; ReAct, Self-Ask and Astute RAG end with the same node, given their trajectory through
``extra`` values. The node records the answer as a turn and sets the result keys.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.context import Context
from factdebate.nodes.baselines.ask_answer import (
    answer_turn,
    ask_answer,
    baseline_values,
    first_round,
    flag_parse,
    result_fields,
)
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.citations import Shown
from factdebate.nodes.llm import CallLog
from factdebate.nodes.prompting import prompt_set

ExtraValues = Callable[[BaselineState, Context, Shown], dict[str, Any]]
"""Extra template values (a trajectory) rendered with the answer's passage numbering."""
Node = Callable[[BaselineState, Runtime[Context]], Awaitable[dict[str, Any]]]


def single_answer(
    template: str, *, agent: str = "answer", stop: str | None = "answer",
    extra: ExtraValues | None = None, counts_round: bool = True, decides: bool = True,
) -> Node:
    """A node answering with ``template``.

    ``stop`` (if given) becomes ``stopped_by``; ``extra`` adds template values (a trajectory);
    ``counts_round`` makes a one-shot baseline report one round used; ``decides`` (default) makes
    the answer's citations the verdict's evidence (Self-Reflection's first answer does not decide:
    its refinement does).
    """

    async def answer(state: BaselineState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = runtime.context
        values = baseline_values(state, ctx)
        values |= extra(state, ctx, values["shown"]) if extra else {}
        round_ = max(state.get("round") or 0, 1)
        calls = CallLog()
        result = await ask_answer(
            ctx, ctx.debater_model,
            prompt_set(ctx).render(template, **values),
            state,
            calls=calls, role=agent, agent=agent, round_=round_,
            shown=values["shown"], decides=decides,
        )
        flag_parse(calls, agent, round_, result)
        turn = answer_turn(agent, round_, result, evidence=state.get("evidence") or [])
        update = {"turns": [turn], **result_fields(turn), "round": first_round(state) if counts_round else 0,
                  **calls.update()}
        return update | ({"stopped_by": stop} if stop else {})

    answer.__name__ = answer.__qualname__ = f"answer_{template}"
    answer.__doc__ = f"Answer with the {template!r} template."
    return answer
