"""``respond``: a debater answers from its evidence (Tool-MAD Alg. 1, Respond(A, D, c[, a_opp])).

Round 1 uses the initial-debate template; later rounds add the other agents' previous answers.
The label is read from the model's structured ``label`` field, else parsed from its own text
(never from the documents); how it was obtained is kept in the turn and flagged when guessed. The
reply cites the documents it relies on by their numbers; the citations are checked against what
was shown (``nodes/citations.py``) and kept in the turn (``cited``) and the state's ``citations``.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.context import Context, debater_kind
from factdebate.core.state import DebaterState, Turn
from factdebate.nodes.citations import Shown
from factdebate.nodes.llm import CallLog, ask_debater_verdict
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.render import render_opponents


async def respond(state: DebaterState, runtime: Runtime[Context]) -> dict[str, Any]:
    """This round's answer of one debater, appended to ``turns``."""
    ctx = runtime.context
    values = common_values(state, ctx, debater_kind(state["agent"]))
    shown = Shown(state.get("evidence"))
    values["evidence"] = shown.render()
    if state["round"] > 1 and state.get("opponents"):
        values["opponents"] = render_opponents(state["opponents"])
        messages = prompt_set(ctx).render("debate_followup", **values)
    else:
        messages = prompt_set(ctx).render("debate_initial", **values)
    calls = CallLog()
    reasoning, parsed, cited = await ask_debater_verdict(messages, state, ctx, calls, shown)
    turn = Turn(
        agent=state["agent"],
        round=state["round"],
        query=state.get("query", ""),
        evidence=list(state.get("evidence") or []),
        answer=reasoning,
        label=parsed.label,
        parse=parsed.how,
        cited=cited,
    )
    return {"answer": reasoning, "label": parsed.label, "parse": parsed.how, "turns": [turn],
            **calls.update()}
