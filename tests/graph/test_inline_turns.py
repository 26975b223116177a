"""graphs/turns.py: a turn run inline and the same turn run in LangGraph's loop give one state.

Every framework with turns (and ``check_text``, whose verifier runs Tool-MAD inside one of its
nodes), on the CLI's lean variant and on the exported visible one, runs twice on the same claim
and scripted model (debaters that disagree: every round and the judge run): once as it runs when
nobody watches (straight turns inline) and once with a caller's callback handler attached, which
makes every turn run in LangGraph's loop (``graphs.turns.watched``). Every key of the final state
is compared: verdict, turns, scores, ledger, flags, citations, evidence.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.graphs import turns
from factdebate.graphs.registry import build_framework, context_class

CLAIM = "The Eiffel Tower is located in Paris."
TEXT = "The Eiffel Tower is located in Paris. Marie Curie won two Nobel Prizes."
TURN_STEPS = {"tool_mad": ("formulate_query", "retrieve", "respond", "score"),
              "madke": ("select_knowledge", "speak"), "multi_agent_debate": ("respond",),
              "speculative_rag": ("draft", "verify_draft")}
"""The frameworks whose graphs have turn nodes (graphs/turns.py), and their turns' steps."""


class Watcher(AsyncCallbackHandler):
    """A caller's handler: it sees chain runs, so turns run in LangGraph's loop."""

    def __init__(self) -> None:
        self.names: list[str] = []

    async def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names.append(str(kwargs.get("name")))


async def final_state(name: str, variant: str, spec: str, watcher: Watcher | None) -> dict:
    context = context_class(name)
    rounds = {"max_rounds": 2} if "max_rounds" in {f.name for f in fields(context)} else {}
    ctx = context(debater_model=spec, rag_backend="static", search_backend="static", **rounds)
    graph = build_framework(name, turns=variant).compile(checkpointer=InMemorySaver())
    item = {"text": TEXT} if name == "check_text" else {"claim": CLAIM}
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    if watcher is not None:
        config["callbacks"] = [watcher]
    return await graph.ainvoke(item, config, context=ctx)


@pytest.mark.parametrize("variant", ["lean", "visible"])
@pytest.mark.parametrize("name", [*TURN_STEPS, "check_text"])
async def test_inline_and_loop_turns_end_in_the_same_state(name: str, variant: str,
                                                           monkeypatch: pytest.MonkeyPatch):
    spec = "scripted:disagree"  # every round, then the judge: every step of every turn runs
    inline_runs = 0
    real = turns.InlineSteps.run

    async def counted(steps: turns.InlineSteps, state: Any, runtime: Any) -> Any:
        nonlocal inline_runs
        inline_runs += 1
        return await real(steps, state, runtime)
    monkeypatch.setattr(turns.InlineSteps, "run", counted)

    inline = await final_state(name, variant, spec, None)
    ran_inline, inline_runs = inline_runs, 0
    watcher = Watcher()
    looped = await final_state(name, variant, spec, watcher)
    assert inline_runs == 0
    assert inline == looped
    assert inline.get("label") or inline.get("claims")
    assert ran_inline >= 2  # both debaters' turns of the first round at least
    steps = set(TURN_STEPS.get(name, TURN_STEPS["tool_mad"]))
    assert steps <= set(watcher.names)  # in the loop, each step was a run of its own
