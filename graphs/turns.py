"""A per-agent turn subgraph as one parent node, without inner checkpoints, on LangGraph's public API.

Tool-MAD's ``debate_turn`` (query -> retrieve -> respond -> score), MADKE's ``debater_turn`` and the
baselines' turn subgraphs are fanned out with ``Send``. Added as plain subgraph nodes they inherit
the parent's checkpointer, so every node inside every turn writes a checkpoint (with
``durability="sync"`` each write is waited for): 49 checkpoints per 3-round Tool-MAD claim, 36 of
them inside turns. ``turn_node`` compiles the turn with ``checkpointer=False`` instead; the parent
still checkpoints every superstep and saves each finished turn's writes, so a resumed run continues
at the turn boundary and only redoes a turn that a crash cut short (and, when one debater's provider
error ends the superstep, the sibling turn LangGraph cancelled with it).

The turn runs in LangGraph's own loop: inner nodes stream under the turn's namespace with
``astream(subgraphs=True)`` (every stream mode, ``tasks``/``checkpoints``/``debug`` included),
traces nest ``debate_turn > debate_turn > formulate_query``, and retry/cache policies or
conditional edges inside a turn behave as LangGraph documents. What a ``checkpointer=False``
subgraph gives up, by LangGraph's design: ``get_graph(xray=True)`` draws the turn as one node
(``find_subgraph_pregel`` skips subgraphs that disabled checkpointing) and the turn cannot be
interrupted or resumed inside.

**Why a node function and not the compiled subgraph itself as the node.** LangGraph 1.2.22: a
``checkpointer=False`` subgraph that inherits ``durability="sync"`` from its parent (the CLI and
``eval`` run with it, ``factdebate.run.claims.DURABILITY``) awaits a checkpoint future it never
creates (``AttributeError: ... '_put_checkpoint_fut'``). The node therefore invokes the subgraph
with an explicit ``durability="exit"`` (public ``ainvoke`` argument; nothing is written either way),
and the warning LangGraph gives for a durability without checkpointer is filtered for that one
message. ``tests/unit/test_turns.py`` fails once LangGraph fixes the bug, so this can go.

**Cost** (this replaced a hand-run linear runner over ``langgraph._internal``; BENCHMARKS.md, "issue
15, before/after"): that runner saved ~13% CPU per claim with the zero-latency test double; with
provider latency nothing measurable changed - ``bench overhead`` 1.067 -> 1.080 x critical path
(budget 1.10), ``bench scaling`` at 1 s per call, c=128, one process: 0.584 -> 0.584 efficiency.
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph

TURN_DURABILITY = "exit"
"""Durability the turn is invoked with: without a checkpointer nothing is written in any mode."""

warnings.filterwarnings(
    "ignore", message="`durability` has no effect when no checkpointer is present",
    category=UserWarning, module=r"langgraph\.pregel\.main",
)


def turn_node(subgraph: StateGraph, name: str) -> Any:
    """An async node function running ``subgraph`` on its input, without inner checkpoints.

    The compiled subgraph is the function's ``compiled`` attribute (tests, Studio tooling).
    """
    compiled = subgraph.compile(name=name, checkpointer=False)

    async def run_turn(state: Any, config: RunnableConfig) -> Any:
        return await compiled.ainvoke(state, config, durability=TURN_DURABILITY)

    run_turn.__name__ = run_turn.__qualname__ = name
    run_turn.__doc__ = f"One {name} (subgraph {name!r}, no inner checkpoints)."
    run_turn.compiled = compiled  # type: ignore[attr-defined]
    return run_turn
