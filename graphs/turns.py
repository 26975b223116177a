"""A per-agent turn subgraph as one parent node, in two variants: ``visible`` and ``lean``.

Tool-MAD's ``debate_turn`` (query -> retrieve -> respond -> score), MADKE's ``debater_turn``,
Speculative RAG's ``draft_branch`` and Du et al.'s ``debate_turn`` are fanned out with ``Send``;
``turn_node`` makes the async node function that runs one of them. Every ``build_<x>`` takes
``turns`` (graphs/exported.py) and passes it here:

* ``turns="visible"`` - what langgraph.json exports, what ``build_<x>()`` gives by default and
  what Studio, the LangGraph server and Python users run. The turn is compiled without a
  checkpointer of its own, so it inherits the parent's: ``get_graph(xray=True)`` draws its nodes
  (``debate_turn:formulate_query`` ... ``debate_turn:score``; LangGraph finds the compiled turn in
  the node function's closure), each node inside a turn writes a checkpoint, and the turn runs
  with the run's breakpoints on its nodes as its own ``interrupt_before``/``interrupt_after``
  (carried in ``configurable`` by ``DebateGraph``): the run pauses inside the turn, both parallel
  turns alike, its state inspectable and editable at the turn's checkpoint namespace, and resumes
  there (a static breakpoint does not fire twice at the same checkpoint). Cost: 50 checkpoints
  per 3-round Tool-MAD claim instead of 14, ~12% more CPU per claim (ad-hoc A/B: scripted model
  without latency, SQLite saver, ``durability="sync"``).
* ``turns="lean"`` - what the CLI and ``eval`` compile (``run/claims.py``). The turn is compiled
  with ``checkpointer=False``: the parent still checkpoints every superstep and saves each
  finished turn's writes, so a resumed run continues at the turn boundary and only redoes a turn
  that a crash cut short (and, when one debater's provider error ends the superstep, the sibling
  turn LangGraph cancelled with it). What it gives up, by LangGraph's design:
  ``get_graph(xray=True)`` draws the turn as one node (``find_subgraph_pregel`` skips subgraphs
  that disabled checkpointing) and the turn cannot be interrupted or resumed inside. The budgets
  of BENCHMARKS.md (``bench overhead``, ``floor``, ``scaling``) are measured on this variant.

Either way the turn runs in LangGraph's own loop: inner nodes stream under the turn's namespace
with ``astream(subgraphs=True)`` (every stream mode), traces nest ``debate_turn > debate_turn >
formulate_query``, retry/cache policies and conditional edges inside a turn behave as LangGraph
documents, and each returned turn is a ``turn_finished`` event on the ``custom`` stream
(nodes/progress.py).

**Why a node function and not the compiled subgraph itself as the node.** It reads the run's
breakpoints for the visible turn; and in LangGraph 1.2.22 a ``checkpointer=False`` subgraph that
inherits ``durability="sync"`` from its parent (the CLI and ``eval`` run with it,
``factdebate.run.claims.DURABILITY``) awaits a checkpoint future it never creates
(``AttributeError: ... '_put_checkpoint_fut'``), so the lean turn is invoked with an explicit
``durability="exit"`` (public ``ainvoke`` argument; nothing is written either way), and the
warning LangGraph gives for a durability without checkpointer is filtered for that one message.
``tests/unit/test_turns.py`` fails once LangGraph fixes the bug.
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph

from factdebate.graphs.exported import NODE_ERRORS, Turns, check_turns, turn_breakpoints
from factdebate.nodes.progress import turns_finished

TURN_DURABILITY = "exit"
"""Durability the turn is invoked with: without a checkpointer nothing is written in any mode."""

warnings.filterwarnings(
    "ignore", message="`durability` has no effect when no checkpointer is present",
    category=UserWarning, module=r"langgraph\.pregel\.main",
)


def turn_node(subgraph: StateGraph, name: str, *, turns: Turns) -> Any:
    """An async node function running ``subgraph`` (one agent's turn) on its input.

    ``turns="lean"``: the subgraph is compiled with ``checkpointer=False`` (no inner checkpoints,
    drawn as one node, not interruptible inside). ``turns="visible"``: it inherits the parent's
    checkpointer, is drawn by ``get_graph(xray=True)`` (LangGraph finds it in the function's
    closure) and runs with the run's breakpoints on its nodes (graphs/exported.py). Either way a
    ``turn_finished`` progress event per returned turn goes to the ``custom`` stream
    (nodes/progress.py). The compiled subgraph is the function's ``compiled`` attribute.
    """
    subgraph.set_node_defaults(retry_policy=NODE_ERRORS)  # errors redacted (graphs/exported.py)
    if check_turns(turns) == "lean":
        compiled = subgraph.compile(name=name, checkpointer=False)

        async def run_turn(state: Any, config: RunnableConfig) -> Any:
            out = await compiled.ainvoke(state, config, durability=TURN_DURABILITY)
            turns_finished(name, (out or {}).get("turns") or ())
            return out
    else:
        compiled = subgraph.compile(name=name)
        inner = frozenset(subgraph.nodes)

        async def run_turn(state: Any, config: RunnableConfig) -> Any:
            before, after = turn_breakpoints(config, name, inner)
            out = await compiled.ainvoke(state, config, interrupt_before=before,
                                         interrupt_after=after)
            turns_finished(name, (out or {}).get("turns") or ())
            return out

    run_turn.__name__ = run_turn.__qualname__ = name
    run_turn.__doc__ = f"One {name} (subgraph {name!r}, {turns} turns: graphs/turns.py)."
    run_turn.compiled = compiled  # type: ignore[attr-defined]
    return run_turn
