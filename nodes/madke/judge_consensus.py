"""``judge_consensus``: MADKE's judge after every round (arXiv:2312.04854, Eq. 5, Prompt 3.4,
Alg. 1 l. 14).

The judge reads this round's answers and says [Yes] (consistent: the debate ends early) or [No]
(debate on). The reply is read from JSON, else from the paper's ``[Yes]``/``[No]`` tokens; an
unreadable reply counts as [No] and is flagged. ``stopped_by`` becomes ``consensus`` on [Yes] and
``max_rounds`` when round T ends without it; the summariser runs either way.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.madke.speak import render_stances
from factdebate.nodes.madke.state import MadkeContext, MadkeState
from factdebate.nodes.progress import stop_decision
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.routing import round_turns, rounds_done, rounds_used, run_context

_TOKEN = re.compile(r"\[\s*(yes|no)\s*\]", re.IGNORECASE)


class ConsensusOut(BaseModel):
    """Structured reply of the consensus judge."""

    reasoning: str = Field(description="Each agent's extracted answer and whether they agree.")
    consensus: Literal["Yes", "No"] = Field(description="Yes if all answers are consistent.")


def parse_consensus(text: str) -> bool | None:
    """The last ``[Yes]``/``[No]`` token of a free-text reply, or None."""
    found = _TOKEN.findall(text or "")
    return found[-1].lower() == "yes" if found else None


async def judge_consensus(state: MadkeState, runtime: Runtime[MadkeContext]) -> dict[str, Any]:
    """Whether this round's answers agree; ends the debate on [Yes] or after round T."""
    ctx = runtime.context
    prompts = prompt_set(ctx)
    values = common_values(state, ctx, "judge") | {
        "role": prompts.templates["roles"]["judge"],
        "all_answers_from_agents": render_stances(round_turns(state)),
    }
    calls = CallLog()
    parsed, raw = await ask(ctx, ctx.judge_model_spec, prompts.render("judge", **values),
                            ConsensusOut, calls=calls, role="judge", round_=state["round"])
    agreed = parsed.consensus == "Yes" if isinstance(parsed, ConsensusOut) \
        else parse_consensus(raw)
    if agreed is None:
        calls.flags.append(f"judge: round {state['round']} verdict unreadable; counted as [No]")
    if agreed:
        return stop_decision(state["round"], {"stopped_by": "consensus", **calls.update()})
    if rounds_used(state, rounds_done(state)) >= ctx.max_rounds:  # counted from the turns
        return stop_decision(state["round"], {"stopped_by": "max_rounds", **calls.update()})
    return stop_decision(state["round"], calls.update())  # progress event (nodes/progress.py)


def route_after_judge_consensus(
    state: MadkeState, ctx: MadkeContext | None = None
) -> Literal["open_round", "summarize"]:
    """Summarise once the debate has stopped or used its rounds, else debate another round."""
    if state.get("stopped_by"):
        return "summarize"
    done = rounds_used(state, rounds_done(state))
    return "summarize" if done >= run_context(state, MadkeContext, ctx).max_rounds else "open_round"
