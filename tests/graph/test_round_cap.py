"""Loop caps hold on what the graph recorded, whatever a client writes into the state.

The attack: ``runs.create(command={"update": {"round": -N}, "goto": "open_round"})`` (or the same
through ``update_state``) used to run N rounds past ``max_rounds`` (N=150: 606 model calls), since
every router compared ``round`` - a state key any client can write - with the cap. Now every loop
counts its rounds or steps from the turns it recorded, its opening node refuses to start one past
the cap, and routers stop on the larger of that count and ``round``.

Every framework with a loop is run with the scripted double scripted never to stop early (debaters
disagree, judges see no consensus, agents change their answers, ReAct agents keep searching ...),
then attacked three ways with a negative and a huge ``round``: a ``Command`` that writes it and goes
to the loop's opening node on the finished thread, ``update_state`` as the loop's closing node and
a resume, and the same write in the middle of a run (a fork of the checkpoint after the first
round). The model calls are counted by the scripted model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from factdebate.core.errors import InputError
from factdebate.graphs.registry import build_framework, context_class
from factdebate.nodes.baselines.consolidate import CONSOLIDATE
from factdebate.nodes.baselines.follow_up import QUESTION
from factdebate.nodes.baselines.react_step import THOUGHT
from factdebate.nodes.baselines.reflect import REVIEW
from factdebate.nodes.mermaid.execute_step import EXECUTOR
from factdebate.nodes.routing import rounds_done, steps_done
from factdebate.testing.scenarios import answer_role, madke_role
from factdebate.testing.scripted import ScriptCall

CLAIM = "The Eiffel Tower is located in Paris."
DOCUMENTS = [
    {"id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a tower in Paris, France.",
     "source": "item", "url": "", "score": 1.0},
    {"id": "d2", "title": "Paris", "text": "Paris is the capital of France.", "source": "item",
     "url": "", "score": 0.5},
]
CAP = 3
EDITS = [-150, 10**6]
"""A negative ``round`` (the reported attack) and a huge one."""

REPLIES: dict[str, Any] = {  # schema name -> a reply that keeps the loop going
    "ReactStepOut": {"thought": "Search again.", "action": "search", "query": "Eiffel Tower"},
    "FollowUpOut": {"follow_up": "Where is the tower?"},
    "ReviewOut": {"feedback": "Check it once more."},
    "PassagesOut": {"passages": ["memory passage: the tower stands in Paris"]},
    "ConsolidatedOut": {"passages": [{"source": "both", "documents": [1],
                                      "text": "consolidated: tower in Paris"}]},
    "ModeratorOut": {"preference": False, "supported_side": "none", "reasoning": "go on"},
    "ReactStep": {"thought": "More evidence.", "action": {
        "name": "search_wikipedia", "reason": "look", "input": "Eiffel Tower"}},
}


def never_stops(call: ScriptCall) -> Any:
    """Replies that never end a loop early, for every framework's roles."""
    name = call.schema.__name__ if call.schema is not None else ""
    if name in REPLIES:
        return REPLIES[name]
    if name == "ConsensusOut" or call.role == "select_knowledge":
        return madke_role(call, consensus_round=0)  # MADKE's judge never sees consensus
    if name == "DocAnswer":  # MADAM-RAG: every agent changes its answer every round
        return {"answer": f"answer {call.round}", "explanation": "Read again."}
    if name == "AggregateOut":
        return {"answers": [f"answer {call.round}"], "explanation": "The agents changed."}
    if call.role == "decomposer":
        return {"triplets": [{"subject": "tower", "relation": "is in", "object": "Paris"}],
                "topic": "landmarks"}
    # Tool-MAD and the debate baselines: the first agent says one label, the others another
    first = call.agent in ("rag", "affirmative", "agent1", "debater1")
    return answer_role(call, debater_label=0 if first else 1)


def rounds(state: dict[str, Any]) -> int:
    return rounds_done(state)


def steps(agents: tuple[str, ...]) -> Callable[[dict[str, Any]], int]:
    return lambda state: steps_done(state, agents)


@dataclass
class Loop:
    """How one framework's loop is set up, entered, closed and counted."""

    overrides: dict[str, Any]
    entry: str
    """The node that opens a round/step (where the attack's ``goto`` points)."""
    closing: str
    """The node whose router decides whether another round/step follows (``update_state``)."""
    count: Callable[[dict[str, Any]], int]
    reopen: dict[str, Any] = field(default_factory=dict)
    """What the attacker also clears so the loop looks unfinished."""


LOOPS: dict[str, Loop] = {
    "tool_mad": Loop({"max_rounds": CAP, "scoring_mode": "none"}, "open_round",
                     "check_consensus", rounds, {"stopped_by": ""}),
    "madke": Loop({"max_rounds": CAP}, "open_round", "judge_consensus", rounds,
                  {"stopped_by": ""}),
    "madam_rag": Loop({"max_rounds": CAP}, "open_round", "check_convergence", rounds,
                      {"stopped_by": ""}),
    "mad": Loop({"max_rounds": CAP}, "open_round", "moderate", rounds, {"stopped_by": ""}),
    "multi_agent_debate": Loop({"max_rounds": CAP}, "open_round", "vote", rounds),
    "mermaid": Loop({"t_max": CAP, "tool_provider": "in_process", "wiki_backend": "static",
                     "memory": False}, "execute_step", "call_tool", steps(EXECUTOR)),
    "react": Loop({"max_steps": CAP}, "react_step", "react_tool", steps((THOUGHT,)),
                  {"stopped_by": ""}),
    "self_ask": Loop({"max_follow_ups": CAP}, "follow_up", "answer_follow_up",
                     steps((QUESTION,)), {"stopped_by": ""}),
    "self_reflection": Loop({"reflection_rounds": CAP}, "critique", "refine", steps(REVIEW)),
    "astute_rag": Loop({"consolidation_rounds": CAP}, "consolidate", "consolidate",
                       steps(CONSOLIDATE)),
}


class Counted:
    """A compiled framework on an in-memory saver, with its model calls counted."""

    def __init__(self, name: str, scenario: Callable[[Callable[[ScriptCall], Any]], str]) -> None:
        self.loop = LOOPS[name]
        self.calls: list[tuple[str, str, int]] = []

        def respond(call: ScriptCall) -> Any:
            self.calls.append((call.role, call.agent, call.round))
            return never_stops(call)

        self.graph = build_framework(name).compile(checkpointer=InMemorySaver())
        self.ctx = context_class(name)(debater_model=scenario(respond), rag_backend="static",
                                       search_backend="static", **self.loop.overrides)
        self.config: dict[str, Any] = {"configurable": {"thread_id": f"cap-{name}"}}

    async def run(self, payload: Any, config: dict[str, Any] | None = None) -> int:
        """Model calls of one invocation."""
        before = len(self.calls)
        await self.graph.ainvoke(payload, config or self.config, context=self.ctx)
        return len(self.calls) - before

    async def recorded(self, config: dict[str, Any] | None = None) -> int:
        return self.loop.count((await self.graph.aget_state(config or self.config)).values)


async def full_run(name: str, scenario: Any) -> tuple[Counted, int]:
    counted = Counted(name, scenario)
    calls = await counted.run({"claim": CLAIM, "documents": DOCUMENTS})
    assert await counted.recorded() == CAP, name  # the script never stops early: the cap does
    return counted, calls


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("name", list(LOOPS))
async def test_goto_the_loop_with_a_round_edit_on_a_finished_run_is_refused(name, edit, scenario):
    counted, _ = await full_run(name, scenario)
    loop = counted.loop
    before = len(counted.calls)
    for update in ({"round": edit, **loop.reopen}, {"round": edit}):
        with pytest.raises(InputError, match=r"its cap \w+=3; no more are started"):
            await counted.run(Command(update=update, goto=loop.entry))
    assert len(counted.calls) == before  # refused before any model call
    assert await counted.recorded() == CAP


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("name", list(LOOPS))
async def test_update_state_round_edit_cannot_reopen_the_loop(name, edit, scenario):
    counted, _ = await full_run(name, scenario)
    loop = counted.loop
    await counted.graph.aupdate_state(counted.config, {"round": edit, **loop.reopen},
                                      as_node=loop.closing)
    assert loop.entry not in (await counted.graph.aget_state(counted.config)).next
    extra = await counted.run(None)
    assert extra <= 1  # at most the final answer (judge, summariser, forced answer) again
    assert await counted.recorded() == CAP


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("name", list(LOOPS))
async def test_round_edit_in_the_middle_of_a_run_stops_at_the_cap(name, edit, scenario):
    counted, full_calls = await full_run(name, scenario)
    loop = counted.loop
    after_first = [s async for s in counted.graph.aget_state_history(counted.config)
                   if s.next == (loop.entry,) and loop.count(s.values) == 1]
    assert after_first, name
    fork = after_first[0].config
    calls = await counted.run(Command(update={"round": edit}), fork)
    state = (await counted.graph.aget_state({"configurable": {
        "thread_id": counted.config["configurable"]["thread_id"]}})).values
    assert loop.count(state) == CAP
    assert calls <= full_calls  # before the fix, -150 bought 150 more rounds (606 model calls)


async def test_tool_mad_reported_attack_stays_within_one_run_s_calls(scenario):
    """The issue's numbers: N=150 used to make 606 model calls; the attack now makes none."""
    counted, full_calls = await full_run("tool_mad", scenario)
    with pytest.raises(InputError):
        await counted.run(Command(update={"round": -150}, goto="open_round"),
                          {**counted.config, "recursion_limit": 10**6})
    await counted.graph.aupdate_state(counted.config, {"round": -150, "stopped_by": ""},
                                      as_node="check_consensus")
    assert await counted.run(None) == 1  # the judge decides again; no round is opened
    assert len(counted.calls) <= full_calls + 1


async def test_recorded_routing_knobs_are_checked_before_routers_obey_them(scenario):
    """``state["routing"]`` is state a client can write: out-of-range knobs give the defaults,
    and a run resumed after an in-range edit still obeys its own Context."""
    counted, _ = await full_run("tool_mad", scenario)
    await counted.graph.aupdate_state(
        counted.config, {"round": -150, "stopped_by": "",
                         "routing": {"max_rounds": 10**6, "debaters": ["rag"] * 1000}},
        as_node="check_consensus")
    assert (await counted.graph.aget_state(counted.config)).next == ("judge",)  # default T=3
    await counted.graph.aupdate_state(
        counted.config, {"stopped_by": "", "routing": {"max_rounds": 10}},
        as_node="check_consensus")
    assert (await counted.graph.aget_state(counted.config)).next == ("open_round",)
    before = len(counted.calls)
    with pytest.raises(InputError, match="max_rounds=3"):  # the run's Context says 3
        await counted.run(None)
    assert len(counted.calls) == before
