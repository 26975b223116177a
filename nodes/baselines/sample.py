"""Self-consistency sampling (Wang et al. 2022): k reasoning paths as parallel ``Send`` branches.

Each branch answers with the zero-shot CoT template at the sampling temperature; ``vote`` then
takes the majority answer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send

from factdebate.nodes.baselines.ask_answer import answer_turn, ask_answer, baseline_values, flag_parse
from factdebate.nodes.baselines.context import SelfConsistencyContext
from factdebate.nodes.baselines.state import BaselineState, BranchState
from factdebate.nodes.llm import CallLog
from factdebate.nodes.prompting import prompt_set
from factdebate.nodes.routing import run_context

SAMPLE_TEMPLATE = "cot"


def route_samples(
    state: BaselineState, ctx: SelfConsistencyContext | None = None
) -> list[Send]:
    """One ``sample`` branch per reasoning path."""
    return [
        Send("sample", BranchState(
            agent=f"sample{i}", round=1, claim=state["claim"], task=state["task"],  # type: ignore[typeddict-item]
            options=state.get("options"), multi_answer=state.get("multi_answer", False),
            evidence=[], turns=[], scores={}, ledger={}, flags=[],
        ))
        for i in range(1, run_context(state, SelfConsistencyContext, ctx).samples + 1)
    ]


async def sample(state: BranchState, runtime: Runtime[SelfConsistencyContext]) -> dict[str, Any]:
    """One sampled chain-of-thought answer, as a turn."""
    ctx = runtime.context
    sampling = dataclasses.replace(ctx, temperature=ctx.sample_temperature)
    calls = CallLog()
    values = baseline_values(state, ctx)
    result = await ask_answer(
        sampling, ctx.debater_model,
        prompt_set(ctx).render(SAMPLE_TEMPLATE, **values),
        state,
        calls=calls, role="sample", agent=state["agent"], round_=1, shown=values["shown"],
    )
    flag_parse(calls, state["agent"], 1, result)
    return {"turns": [answer_turn(state["agent"], 1, result)], **calls.update()}
