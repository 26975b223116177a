"""``summarize``: MADKE's summariser writes the final answer (MADKE (arXiv:2312.04854) Eq. 6, Prompt 3.5).

It condenses the debaters' answers of the last round, ReaResult = S(s_1^r, ..., s_m^r), into one
label on the task's label set. If its reply cannot be read even after a re-ask, the most common
label of the last round (earliest debater on ties) is used and flagged - never a label nobody gave.

Citations: the summariser's prompt (Prompt 3.5) shows the debaters' answers, no
knowledge, so it cites nothing (its record is the deciding one, with no passages); the verdict's
evidence is what the last round's debaters whose label became the verdict cited
(``cite_verdict``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.state import Turn
from factdebate.nodes.citations import Shown
from factdebate.nodes.llm import ask_final_verdict
from factdebate.nodes.madke.speak import render_stances
from factdebate.nodes.madke.state import MadkeContext, MadkeState
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.routing import round_turns


def majority(turns: list[Turn]) -> str | None:
    """Most common label among ``turns`` (first to reach the top count wins ties)."""
    labels = [t["label"] for t in turns if t["label"]]
    if not labels:
        return None
    counts = Counter(labels)
    top = max(counts.values())
    return next(label for label in labels if counts[label] == top)


async def summarize(state: MadkeState, runtime: Runtime[MadkeContext]) -> dict[str, Any]:
    """The final label and rationale from the last round's answers."""
    ctx = runtime.context
    prompts = prompt_set(ctx)
    last = round_turns(state)
    values = common_values(state, ctx, "summarizer") | {
        "role": prompts.templates["roles"]["summarizer"],
        "all_answers_from_agents": render_stances(last),
    }
    reasoning, label, calls = await ask_final_verdict(
        prompts.render("summarize", **values), state, ctx, role="summarizer",
        shown=Shown())  # Prompt 3.5 shows answers, no passages: nothing to cite
    if label is None:
        label = majority(last)
        calls.flags.append(f"parse: summarizer reply unreadable; fell back to the last round's "
                           f"majority label {label}")
    return {"label": label, "rationale": reasoning, **calls.update()}
