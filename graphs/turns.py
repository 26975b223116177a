"""A per-agent turn subgraph as one parent node, in two variants: ``visible`` and ``lean``.

Tool-MAD's ``debate_turn`` (query -> retrieve -> respond -> score), MADKE's ``debater_turn``,
Speculative RAG's ``draft_branch`` and Du et al.'s ``debate_turn`` are fanned out with ``Send``;
``turn_node`` makes the async node function that runs one of them. Every ``build_<x>`` takes
``turns`` (graphs/exported.py) and passes it here:

* ``turns="visible"`` - what langgraph.json exports, what ``build_<x>()`` gives by default and
  what Studio, the LangGraph server and Python users run. The turn is compiled twice from the same
  nodes: once without a checkpointer of its own, so it inherits the parent's, and once with
  ``checkpointer=False``. ``get_graph(xray=True)`` draws the first one's nodes
  (``debate_turn:formulate_query`` ... ``debate_turn:score``; LangGraph finds the compiled turn in
  the node function's closure and skips the one without checkpointing). A run that needs the
  turn's inner checkpoints runs the first: a run with a breakpoint on a node inside the turn
  (the run's breakpoints reach the turn as its own ``interrupt_before``/``interrupt_after``,
  carried in ``configurable`` by ``DebateGraph``), a resumed run (input ``None`` or a
  ``Command``: it may continue inside a turn) and a run whose Context sets
  ``inner_checkpoints``; there each node inside a turn writes a checkpoint, the run pauses inside
  the turn, both parallel turns alike, its state inspectable and editable at the turn's
  checkpoint namespace, and resumes there (a static breakpoint does not fire twice at the same
  checkpoint). Every other run - a new claim with no breakpoint inside a turn, most server and
  Studio runs - runs the second and writes the lean variant's checkpoints (the parent's
  supersteps only), for state nobody reads unless they asked to stop or look inside a turn
  (checkpoints per claim of each: ``factdebate bench profile``, BENCHMARKS.md). What such a run
  gives up is what the lean variant gives up: a turn that fails (a provider error) is redone from
  its first node when the run is resumed, and its state inside is not kept for inspection; set
  ``inner_checkpoints`` to keep it. A resumed run writes inner checkpoints in every turn it runs,
  not only in the one it paused in.
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

from factdebate.graphs.exported import (
    NODE_ERRORS,
    Turns,
    check_turns,
    turn_breakpoints,
    turn_checkpoints_wanted,
)
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
        # the same nodes without inner checkpoints, for the runs that need none (module doc);
        # get_graph(xray=True) finds ``compiled`` (it skips subgraphs without checkpointing)
        unsaved = subgraph.compile(name=name, checkpointer=False)
        inner = frozenset(subgraph.nodes)

        async def run_turn(state: Any, config: RunnableConfig) -> Any:
            before, after = turn_breakpoints(config, name, inner)
            if before or after or turn_checkpoints_wanted(config):
                out = await compiled.ainvoke(state, config, interrupt_before=before,
                                             interrupt_after=after)
            else:
                out = await unsaved.ainvoke(state, config, durability=TURN_DURABILITY)
            turns_finished(name, (out or {}).get("turns") or ())
            return out

    run_turn.__name__ = run_turn.__qualname__ = name
    run_turn.__doc__ = f"One {name} (subgraph {name!r}, {turns} turns: graphs/turns.py)."
    run_turn.compiled = compiled  # type: ignore[attr-defined]
    return run_turn
