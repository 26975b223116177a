"""A per-agent turn subgraph run as one parent node, without checkpoints inside the turn.

Tool-MAD's ``debate_turn`` (query -> retrieve -> respond -> score), MADKE's ``debater_turn`` and the
baselines' turn subgraphs are fanned out with ``Send``. Added as plain subgraph nodes they inherit
the parent's checkpointer, so every node inside every turn writes a checkpoint (with
``durability="sync"`` each write is waited for): 49 checkpoints per 3-round Tool-MAD claim, 36 of them
inside turns. Here the subgraph is compiled with ``checkpointer=False`` and invoked from a node
function; the parent still checkpoints every superstep and saves each finished turn's writes, so a
resumed run continues at the turn boundary and only redoes a turn that a crash cut short (and, when
one debater's provider error ends the superstep, the sibling turn LangGraph cancelled with it).

Measured with ``factdebate bench overhead`` back to back (quiet 2-core machine, 7 claims each):
median wall 1.60 / 1.50 s with inner checkpoints, 1.47 / 1.44 s without; CPU per claim at zero
latency ~0.19 s vs ~0.16 s.

The turn runs with ``durability="async"`` set in its config to work around LangGraph 1.2.22: a
``checkpointer=False`` subgraph inheriting ``durability="sync"`` awaits a checkpoint future it never
creates (``AttributeError: ... '_put_checkpoint_fut'``); passing ``durability=`` to ``ainvoke``
instead warns on every call. Without a checkpointer nothing is written either way.
Studio draws the turn as one node (LangGraph does not expand subgraphs without checkpointing); its
inner nodes still appear in traces and in ``stream(subgraphs=True)``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_DURABILITY  # pinned langgraph, see above
from langgraph.graph import StateGraph


def turn_node(subgraph: StateGraph, name: str) -> Any:
    """An async node function running ``subgraph`` (compiled once, no checkpointer) on its input."""
    compiled = subgraph.compile(name=name, checkpointer=False)

    async def run_turn(state: dict[str, Any], config: RunnableConfig) -> Any:
        configurable = {**config.get("configurable", {}), CONFIG_KEY_DURABILITY: "async"}
        return await compiled.ainvoke(state, {**config, "configurable": configurable})

    run_turn.__name__ = run_turn.__qualname__ = name
    run_turn.__doc__ = f"One {name} (subgraph {name!r}, no inner checkpoints)."
    return run_turn
