"""``speak``: a MADKE debater states its answer (MADKE (arXiv:2312.04854) §3.2.2, Eqs. 3-4, Prompts 3.2-3.3).

Round 1 is simultaneous talk: s_i = D_i(q, K_i) from the question and the selected knowledge
only. Later rounds are orderly talk: s_i = D_i(q, s_1..s_m, K_i) with the other debaters' latest
answers (this round's for those who already spoke, the previous round's for the rest) and the
debater's own previous answer. The turn's evidence is exactly the knowledge it was shown.

Citations: the selected knowledge is shown numbered 1..k in the order it was selected
(the numbers of this prompt, not the pool numbers of ``select_knowledge``'s prompt), the verdict
cites those numbers; they are checked against the selection (``nodes/citations.py``) and the
cited passages kept in the turn (``cited``) and the state's ``citations``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.state import Turn
from factdebate.nodes.citations import Shown
from factdebate.nodes.llm import CallLog, ask_debater_verdict
from factdebate.nodes.madke.state import MadkeContext, SpeakerState
from factdebate.nodes.prompting import common_values, prompt_set


def render_stance(turn: Turn) -> str:
    """One answer in the paper's convention: reasoning, then the answer in square brackets."""
    answer = " ".join((turn["answer"] or "").split())
    return f"{answer} The answer is [{turn['label'] or 'no answer'}]."


def render_stances(turns: Sequence[Turn]) -> str:
    """Several debaters' answers, one per line, named by debater."""
    if not turns:
        return "(none)"
    return "\n".join(f"{t['agent']}: {render_stance(t)}" for t in turns)


async def speak(state: SpeakerState, runtime: Runtime[MadkeContext]) -> dict[str, Any]:
    """This round's answer of one debater, appended to ``turns``."""
    ctx = runtime.context
    prompts = prompt_set(ctx)
    blocks = prompts.templates["knowledge_blocks"]
    selected = list(state.get("selected") or [])
    shown = Shown(selected)  # numbered 1..k as this prompt shows them
    values = common_values(state, ctx, "debater") | {
        "role": prompts.templates["roles"]["debater"],
        "knowledges": blocks["selected"].format_map({"documents": shown.render()})
        if selected else blocks["none"],
    }
    own = state.get("own_previous")
    if state["round"] > 1 and own is not None:
        values |= {"answer_from_other_agents": render_stances(state.get("others") or []),
                   "your_historical_answer": render_stance(own)}
        messages = prompts.render("orderly_talk", **values)
    else:
        messages = prompts.render("simultaneous_talk", **values)
    calls = CallLog()
    reasoning, parsed, cited = await ask_debater_verdict(messages, state, ctx, calls, shown)
    turn = Turn(agent=state["agent"], round=state["round"], query="", evidence=selected,
                answer=reasoning, label=parsed.label, parse=parsed.how, cited=cited)
    return {"turns": [turn], **calls.update()}
