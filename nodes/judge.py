"""``judge``: the final decision when the debaters reach no consensus within T rounds.

Tool-MAD Alg. 1 (both papers): Judge(A_J, H, S, c) - the claim, the full debate history with every
agent's evidence, and each agent's average scores over the rounds (stability or consistency; left
out in scoring mode ``none`` and in the "w/o scoring feedback" ablation unless
``judge_scores_without_feedback`` keeps them). If the judge's reply
cannot be read even after a re-ask, the fallback is flagged: the label of the agent with the best
average score in the last round (first agent on ties), never a label nobody proposed. The judge
cites the passages of the history it relies on (one number per passage across the debate); they
are the deciding citations of the verdict's evidence. A
prompt set whose judge template has ``{documents}`` (Tool-MAD's) gets every passage once there and
the history as ``{debate}`` with each turn's passages by number; otherwise ``{history}`` repeats
each turn's passages.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.context import JudgedContext
from factdebate.core.state import DebateState, Turn
from factdebate.nodes.citations import Shown
from factdebate.nodes.llm import ask_final_verdict
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.render import average_scores, render_debate, render_history, render_scores
from factdebate.nodes.routing import round_turns


def _fallback(turns: list[Turn], averages: dict[str, dict[str, float]]) -> Turn | None:
    labelled = [t for t in turns if t["label"]]
    if not labelled:
        return None
    return max(labelled, key=lambda t: sum(averages.get(t["agent"], {}).values()))


async def judge(state: DebateState, runtime: Runtime[JudgedContext]) -> dict[str, Any]:
    """The judge's verdict over the whole debate."""
    ctx = runtime.context
    mode = ctx.judge_score_mode()  # "none" without scoring or with scoring feedback off
    use_scores = mode != "none"
    averages = average_scores(state.get("scores", {})) if use_scores else {}
    prompts = prompt_set(ctx)
    values = common_values(state, ctx, "judge")
    shown = Shown()  # one number per passage across the whole history: the judge cites them
    turns = state.get("turns", [])
    template = prompts.templates["judge"]
    if "{documents}" in template.get("system", "") + template["user"]:
        # every passage once, the history citing numbers (render_debate)
        values |= {"debate": render_debate(turns, shown.add), "documents": shown.render()}
    else:
        values["history"] = render_history(turns, shown.add)
    values |= {
        "scores": render_scores(averages),
        "score_guide": prompts.templates["score_guides"][mode],
    }
    reasoning, label, calls = await ask_final_verdict(
        prompts.render("judge", **values), state, ctx, role="judge", shown=shown)
    if label is None:
        best = _fallback(round_turns(state), averages)
        label = best["label"] if best else None
        reasoning = best["answer"] if best else reasoning
        calls.flags.append(
            "parse: judge reply unreadable; fell back to "
            + (f"the {best['agent']} agent's last label {label}" if best else "no label")
        )
    return {"label": label, "rationale": reasoning, "stopped_by": "judge", **calls.update()}
