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

Either way a turn that anybody watches runs in LangGraph's own loop: inner nodes stream under
the turn's namespace with ``astream(subgraphs=True)`` (every stream mode), traces nest
``debate_turn > debate_turn > formulate_query``, retry/cache policies and conditional edges inside a
turn behave as LangGraph documents; a turn nobody watches may run inline (below). Each returned
turn is a ``turn_finished`` event on the ``custom`` stream (nodes/progress.py).

**Why a node function and not the compiled subgraph itself as the node.** It reads the run's
breakpoints for the visible turn; and in LangGraph 1.2.22 a ``checkpointer=False`` subgraph that
inherits ``durability="sync"`` from its parent (the CLI and ``eval`` run with it,
``factdebate.run.claims.DURABILITY``) awaits a checkpoint future it never creates
(``AttributeError: ... '_put_checkpoint_fut'``), so the lean turn is invoked with an explicit
``durability="exit"`` (public ``ainvoke`` argument; nothing is written either way), and the
warning LangGraph gives for a durability without checkpointer is filtered for that one message.
``tests/unit/test_turns.py`` fails once LangGraph fixes the bug.

**Inline turns: when nobody looks inside, the steps are called in order.** A turn built as a
:class:`StraightTurn` (``START -> step -> ... -> END``, every step an ``async def`` of the turn's
state and, optionally, the ``runtime``: the turns of every graph here) runs, in a run
that writes no inner checkpoint, either in LangGraph's loop (the subgraph compiled with
``checkpointer=False``) or inline: :class:`InlineSteps` calls the steps one after another in the
turn node, with the run's ``Runtime``, and applies each step's update to fresh copies of
LangGraph's own channels of the turn's state (``langgraph.channels``: the same reducers,
``Overwrite``, defaults, dropped unknown keys and output rule as the compiled subgraph). It runs
inline only when nobody can see the difference - the run does not stream subgraphs (LangGraph gives
a subgraph its parent's stream only then) and carries no callback handler of its own (a LangSmith
tracer, LangGraph's ``messages`` stream handler, a caller's callbacks) beyond the model-call
ledger's and budget's handlers, which count model calls wherever they run. Everything a caller can
observe then is the same: the turn's output, its model calls (they nest under the turn node instead
of an inner node), its ``turn_finished`` event. What inline saves is LangGraph's per-subgraph loop
(its tasks, channels, configs and callback runs): a three-round Tool-MAD claim (six turns) costs
0.130 s of CPU on the CLI path instead of 0.164 (``factdebate bench floor``, BENCHMARKS.md). The
two paths are compared on the turns of every graph here (``tests/unit/test_turns.py``) and on
whole runs, every key of the final state (``tests/graph/test_inline_turns.py``).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, get_type_hints

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.runnables import RunnableConfig
from langgraph.channels import BaseChannel, BinaryOperatorAggregate, LastValue
from langgraph.errors import InvalidUpdateError
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime, get_runtime

from factdebate.core.ledger import ModelEventHandler
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

SUBGRAPH_STREAM_KEY = "__pregel_stream"
"""The ``configurable`` key LangGraph gives a subgraph's config only when the run streams with
``subgraphs=True`` (``langgraph.pregel.main``, 1.2.22): a turn that finds it runs in LangGraph's
loop, so its steps stream under its namespace. ``tests/unit/test_turns.py`` streams an inline-able
turn with ``subgraphs=True`` and fails if LangGraph renames the key."""

Step = Callable[..., Any]

warnings.filterwarnings(
    "ignore", message="`durability` has no effect when no checkpointer is present",
    category=UserWarning, module=r"langgraph\.pregel\.main",
)


class StraightTurn(StateGraph):
    """A turn subgraph whose named steps run one after another (``START -> ... -> END``).

    Built from ``steps`` (``(name, function)`` pairs); :func:`turn_node` may run it inline
    (:class:`InlineSteps`, module doc). A node or edge added after construction makes it no longer
    straight, and it then always runs in LangGraph's loop.
    """

    def __init__(self, state_schema: type[Any], steps: Sequence[tuple[str, Step]], *,
                 context_schema: type[Any] | None = None,
                 output_schema: type[Any] | None = None) -> None:
        super().__init__(state_schema, context_schema=context_schema, output_schema=output_schema)
        self.steps = tuple(steps)
        previous = START
        for name, fn in self.steps:
            self.add_node(name, fn)
            self.add_edge(previous, name)
            previous = name
        self.add_edge(previous, END)


def _fresh_channel(template: BaseChannel) -> Callable[[], BaseChannel]:
    """A maker of empty channels like ``template`` (as LangGraph makes them at a run's start)."""
    if isinstance(template, BinaryOperatorAggregate):
        typ, op, key = template.typ, template.operator, template.key

        def make_binop() -> BaseChannel:
            channel = BinaryOperatorAggregate(typ, op)
            channel.key = key
            return channel
        return make_binop
    typ, key = template.typ, template.key
    return lambda: LastValue(typ, key)


class InlineSteps:
    """A :class:`StraightTurn`'s steps called in order, with LangGraph's channel semantics.

    Each call starts from empty channels made like the turn's (``builder.channels``: reducers,
    defaults), writes the input's state keys, then each step's update (keys outside the state
    dropped, ``None`` an empty update), each step reading the available values. It returns what
    ``compiled.ainvoke`` returns: ``None`` when no output key was ever written, else every
    available output key.
    """

    def __init__(self, turn: StraightTurn) -> None:
        self.steps = tuple((name, fn, "runtime" in inspect.signature(fn).parameters)
                           for name, fn in turn.steps)
        self.makers = {key: _fresh_channel(ch) for key, ch in turn.channels.items()}
        self.state_keys = frozenset(get_type_hints(turn.state_schema))
        self.output_keys = tuple(get_type_hints(turn.output_schema or turn.state_schema))

    @classmethod
    def of(cls, subgraph: StateGraph) -> InlineSteps | None:
        """The inline runner of ``subgraph``, or None when it must run in LangGraph's loop."""
        if not isinstance(subgraph, StraightTurn) or not subgraph.steps:
            return None
        names = [name for name, _ in subgraph.steps]
        chain = set(zip([START, *names], [*names, END], strict=True))
        if list(subgraph.nodes) != names or subgraph.edges != chain or subgraph.branches \
                or subgraph.waiting_edges or subgraph.managed:
            return None
        if not all(type(ch) in (LastValue, BinaryOperatorAggregate)
                   for ch in subgraph.channels.values()):
            return None
        if not all(_inline_step(fn, subgraph.state_schema) for _, fn in subgraph.steps):
            return None
        return cls(subgraph)

    async def run(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """The turn's output for input ``state``."""
        channels = {key: make() for key, make in self.makers.items()}
        written = False
        for key, value in state.items():
            if key in self.state_keys:
                channels[key].update([value])
                written = written or key in self.output_keys
        for name, step, takes_runtime in self.steps:
            values = {key: ch.get() for key, ch in channels.items() if ch.is_available()}
            update = await (step(values, runtime) if takes_runtime else step(values))
            if update is None:
                continue
            if not isinstance(update, dict):
                raise InvalidUpdateError(f"step {name!r} of an inline turn returned "
                                         f"{type(update).__name__}, not a dict of state keys")
            for key, value in update.items():
                if key in self.state_keys:
                    channels[key].update([value])
                    written = written or key in self.output_keys
        if not written:
            return None
        return {key: channels[key].get() for key in self.output_keys
                if key in channels and channels[key].is_available()}


def _inline_step(fn: Step, state_schema: type[Any]) -> bool:
    """Whether ``fn`` is an ``async def`` of the turn's state (and ``runtime``), nothing else."""
    if not inspect.iscoroutinefunction(fn):
        return False
    params = list(inspect.signature(fn).parameters.values())
    if not params or any(p.name != "runtime" for p in params[1:]):
        return False
    try:
        hint = get_type_hints(fn).get(params[0].name)
    except Exception:  # an annotation that does not resolve: let LangGraph read it
        return False
    return hint in (None, state_schema)


def watched(config: RunnableConfig) -> bool:
    """Whether anybody can see inside the turn run with ``config`` (module doc): the run streams
    subgraphs, or a callback handler other than the model-call ledger's and budget's is attached."""
    if SUBGRAPH_STREAM_KEY in (config.get("configurable") or {}):
        return True
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        handlers = [*callbacks.handlers, *callbacks.inheritable_handlers]
    else:
        handlers = list(callbacks or ())
    return any(not isinstance(h, ModelEventHandler) for h in handlers)


def turn_node(subgraph: StateGraph, name: str, *, turns: Turns) -> Any:
    """An async node function running ``subgraph`` (one agent's turn) on its input.

    ``turns="lean"``: the subgraph is compiled with ``checkpointer=False`` (no inner checkpoints,
    drawn as one node, not interruptible inside). ``turns="visible"``: it inherits the parent's
    checkpointer, is drawn by ``get_graph(xray=True)`` (LangGraph finds it in the function's
    closure) and runs with the run's breakpoints on its nodes (graphs/exported.py). Either way a
    run that writes no inner checkpoint and that nobody watches inside (:func:`watched`) runs a
    :class:`StraightTurn` inline (:class:`InlineSteps`), and a ``turn_finished`` progress event per
    returned turn goes to the ``custom`` stream (nodes/progress.py). The compiled subgraph is the
    function's ``compiled`` attribute, the inline runner (or None) its ``inline`` attribute.
    """
    subgraph.set_node_defaults(retry_policy=NODE_ERRORS)  # errors redacted (graphs/exported.py)
    inline = InlineSteps.of(subgraph)
    unsaved = subgraph.compile(name=name, checkpointer=False)

    async def run_unsaved(state: Any, config: RunnableConfig) -> Any:
        """The turn without inner checkpoints: inline when nobody watches, else in the loop."""
        if inline is not None and not watched(config):
            return await inline.run(state, get_runtime())
        return await unsaved.ainvoke(state, config, durability=TURN_DURABILITY)

    if check_turns(turns) == "lean":
        compiled = unsaved

        async def run_turn(state: Any, config: RunnableConfig) -> Any:
            out = await run_unsaved(state, config)
            turns_finished(name, (out or {}).get("turns") or ())
            return out
    else:
        # the same nodes with inner checkpoints, for the runs that need them (module doc);
        # get_graph(xray=True) finds ``compiled`` (it skips subgraphs without checkpointing)
        compiled = subgraph.compile(name=name)
        inner = frozenset(subgraph.nodes)

        async def run_turn(state: Any, config: RunnableConfig) -> Any:
            before, after = turn_breakpoints(config, name, inner)
            if before or after or turn_checkpoints_wanted(config):
                out = await compiled.ainvoke(state, config, interrupt_before=before,
                                             interrupt_after=after)
            else:
                out = await run_unsaved(state, config)
            turns_finished(name, (out or {}).get("turns") or ())
            return out

    run_turn.__name__ = run_turn.__qualname__ = name
    run_turn.__doc__ = f"One {name} (subgraph {name!r}, {turns} turns: graphs/turns.py)."
    run_turn.compiled = compiled  # type: ignore[attr-defined]
    run_turn.inline = inline  # type: ignore[attr-defined]
    return run_turn
