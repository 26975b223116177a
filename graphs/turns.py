"""A per-agent turn subgraph run as one parent node: no checkpoints and no Pregel loop inside the turn.

Tool-MAD's ``debate_turn`` (query -> retrieve -> respond -> score), MADKE's ``debater_turn`` and the
baselines' turn subgraphs are fanned out with ``Send``. Added as plain subgraph nodes they inherit
the parent's checkpointer, so every node inside every turn writes a checkpoint (with
``durability="sync"`` each write is waited for): 49 checkpoints per 3-round Tool-MAD claim, 36 of them
inside turns. Instead ``turn_node`` returns a node function that runs the turn itself; the parent
still checkpoints every superstep and saves each finished turn's writes, so a resumed run continues
at the turn boundary and only redoes a turn that a crash cut short (and, when one debater's provider
error ends the superstep, the sibling turn LangGraph cancelled with it).

**How a turn runs.** Every turn subgraph here is linear (START -> n1 -> ... -> END). For those,
``turn_node`` does not hand the turn to LangGraph's Pregel loop (task preparation, ``apply_writes``,
an in-memory checkpoint per step, stream plumbing: ~21% of all CPU of a 64-claim Tool-MAD run at
concurrency 32 in a py-spy profile, node functions excluded) but calls the nodes one after another
(``_LinearTurn``), keeping what the compiled subgraph did:

* State: one fresh copy of the subgraph's own channels per turn (``LastValue`` for plain keys,
  ``BinaryOperatorAggregate`` for ``Annotated[..., reducer]`` keys, so reducers and their defaults,
  ``Overwrite`` included, behave as in LangGraph); the input is filtered to the input schema, each
  node reads its input schema's keys (coerced by LangGraph's own mapper) and its dict return is
  filtered to the state keys; the turn returns the output schema's keys (``DebaterOutput``...),
  or ``None`` when no output key was ever written, as ``ainvoke`` does.
* Nodes run through their LangGraph runnable (signature inspected once, at ``add_node``; sync
  nodes go to the executor; ``runtime``/``config``/``store``/``writer`` injected) in a child run
  named after the node, nested under the turn's run, with LangGraph's metadata (``langgraph_node``,
  ``langgraph_step``, ``langgraph_checkpoint_ns``, ...), tags ``graph:step:<n>`` and the config set
  as the child-runnable context, so model calls nest under the node, the scripted double sees its
  ``fd_*``/``langgraph_node`` metadata and the ledger's ``UsageTracker`` counts them. The
  ``Runtime`` is the parent task's (context, store, control, heartbeat) with this node's
  ``execution_info`` and the parent's stream writer only when the parent streams subgraphs.
* Streaming: with ``astream(subgraphs=True)`` the turn emits ``updates`` and ``values`` chunks under
  the namespace ``("<turn>:<task id>",)`` like the subgraph did; ``messages``/``custom``/``tools``
  flow through callbacks and the runtime's writer. When the parent streams ``tasks``,
  ``checkpoints`` or ``debug`` the turn runs compiled instead (below), to stream exactly those.
* Errors: a node's exception propagates unchanged (after ``on_chain_error`` on its run). No node
  of a turn subgraph has a retry, cache or timeout policy; a subgraph that has one, or is not
  linear, or uses managed values or other channel types, is run compiled.

Differences from the compiled subgraph: traces lose the redundant graph-level run between the
parent's ``debate_turn`` node run and its inner node runs (``debate_turn > formulate_query`` instead
of ``debate_turn > debate_turn > formulate_query``; node and model runs keep their names, tags and
metadata); inner task ids are random rather than derived from an inner checkpoint id (nothing stores
them); ``execution_info.checkpoint_id`` is the parent step's; a ``RunControl`` drain request is not
checked between inner nodes (the compiled loop would end the turn early and hand back a partial
turn; nothing here drains); a node returning a ``Command`` raises ``InvalidUpdateError`` (no turn
node does). Concurrent sibling turns may interleave their stream chunks in another order.

**Compiled fallback** (``_compiled_turn``): the subgraph compiled with ``checkpointer=False`` and
invoked from the node, with ``durability="async"`` set in its config to work around LangGraph
1.2.22: a ``checkpointer=False`` subgraph inheriting ``durability="sync"`` awaits a checkpoint future
it never creates (``AttributeError: ... '_put_checkpoint_fut'``); passing ``durability=`` to
``ainvoke`` instead warns on every call. Without a checkpointer nothing is written either way.
Studio draws the turn as one node (LangGraph does not expand subgraphs without checkpointing).

**Measured** (shared 2-core machine, load 2-3 from other work, so CPU seconds rather than wall):
20 Tool-MAD FEVER claims through ``factdebate.evaluation.runner.run_eval`` (``RunSpec(framework="tool_mad",
dataset="fever", limit=20, seed=13, concurrency=8, model="scripted:disagree?latency=0",
sets=[f"index_dir={factdebate.evaluation.bench.demo_index(work)}", "search_backend=local_search"])``), run
repeatedly in one process, ``time.process_time()`` per run, the first (warm-up) run dropped:

* before/after this change: compiled turns 3.74/3.42/3.59/3.22/3.14/2.96 s (median 3.3 s), linear
  runner 2.74/3.42/2.97/2.88/2.81/2.56 s (median 2.85 s);
* A/B on one source tree (compiled path forced by patching ``_plan`` to return a reason), three
  interleaved process pairs x 5 runs: compiled median 2.87 s (mean 2.89), linear median 2.49 s
  (mean 2.38): -13% CPU per claim (median), -18% (mean);
* py-spy ``--gil -r 200`` of one such process (4 runs, warm-up included): frames under the turn
  node outside the node functions were 9.1% of samples compiled (``Pregel.ainvoke``), 2.6% linear,
  mostly the per-node callback-manager work
  (``on_chain_start``, ``get_child``) that LangGraph's own task runner does as well.

``factdebate bench overhead`` (0.1 s scripted latency, wall-bound) is unchanged: median wall /
critical path 1.073 (1.072 in BENCHMARKS.md), ``critical_path_matches_timeline`` True.
History: inner checkpoints -> ``checkpointer=False`` had cut median wall of ``bench overhead`` from
1.60/1.50 s to 1.47/1.44 s and CPU per claim at zero latency from ~0.19 s to ~0.16 s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tracers.langchain import LangChainTracer

# pinned langgraph 1.2.22 internals (see the docstring): the names LangGraph's own loop uses
from langgraph._internal._config import get_async_callback_manager_for_config, patch_config
from langgraph._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_DURABILITY,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_TASK_ID,
    CONFIG_KEY_THREAD_ID,
    NS_END,
    NS_SEP,
    PULL,
)
from langgraph._internal._runnable import set_config_context
from langgraph._internal._typing import MISSING
from langgraph.channels.base import BaseChannel
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.last_value import LastValue
from langgraph.errors import EmptyChannelError, ErrorCode, InvalidUpdateError, create_error_message
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import DEFAULT_RUNTIME, ExecutionInfo, Runtime, _no_op_stream_writer

log = logging.getLogger(__name__)

FAST_STREAM_MODES = frozenset({"updates", "values", "messages", "custom", "tools"})
"""Parent stream modes the linear runner reproduces; any other (``tasks``, ``checkpoints``,
``debug``) makes that turn run compiled."""

_STATE_CHANNELS = (LastValue, BinaryOperatorAggregate)


@dataclass(frozen=True, slots=True)
class _Step:
    """One node of a linear turn, resolved at build time."""

    name: str
    runnable: Runnable
    reads: tuple[str, ...]
    mapper: Any
    metadata: Mapping[str, Any] | None
    tags: Sequence[str] | None
    triggers: tuple[str, ...]
    path: tuple[str, str]
    step_tag: str


def _linear_order(graph: StateGraph) -> list[str] | str:
    """Node names from START to END, or why the graph is not a plain chain."""
    if any(graph.branches.values()):
        return "conditional edges"
    if graph.waiting_edges:
        return "edges joining several nodes"
    successor: dict[str, str] = {}
    for start, end in graph.edges:
        if start in successor:
            return f"node {start!r} has several outgoing edges"
        successor[start] = end
    order: list[str] = []
    node = successor.get(START)
    while node is not None and node != END:
        if node in order:
            return "a cycle"
        order.append(node)
        node = successor.get(node)
    if node != END or set(order) != set(graph.nodes):
        return "nodes off the START -> END chain"
    return order


def _plan(graph: StateGraph, compiled: CompiledStateGraph) -> _LinearTurn | str:
    """The linear runner for ``graph``, or why the compiled subgraph has to run it."""
    order = _linear_order(graph)
    if isinstance(order, str):
        return order
    if graph.managed:
        return "managed values"
    for key, channel in graph.channels.items():
        if type(channel) not in _STATE_CHANNELS:
            return f"state key {key!r} uses {type(channel).__name__}"
    if compiled.retry_policy or compiled.cache_policy or compiled.node_error_handler_map:
        return "graph-level retry/cache policy or error handlers"
    if not isinstance(compiled.output_channels, list):
        return "a single-value output schema"
    steps = []
    for number, name in enumerate(order, start=1):
        spec, node = graph.nodes[name], compiled.nodes[name]
        if (spec.ends or spec.defer or node.retry_policy or node.cache_policy or node.timeout
                or node.trace_policy or node.is_error_handler or node.error_handler_node):
            return f"node {name!r} has a retry/cache/timeout/trace policy, ends or defer"
        if not isinstance(node.channels, list):
            return f"node {name!r} reads a single root value"
        steps.append(_Step(
            name=name, runnable=node.bound, reads=tuple(node.channels), mapper=node.mapper,
            metadata=node.metadata, tags=node.tags, triggers=(f"branch:to:{name}",),
            path=(PULL, name), step_tag=f"graph:step:{number}",
        ))
    input_keys = frozenset(k for k in graph.schemas[graph.input_schema] if k not in graph.managed)
    return _LinearTurn(
        steps=tuple(steps), specs=dict(graph.channels), input_keys=input_keys,
        output_keys=tuple(compiled.output_channels),
    )


def _update_pairs(step: _Step, ret: Any, keys: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A node's return value as (state key, value) writes, as StateGraph's node writer maps it."""
    if ret is None:
        return []
    if isinstance(ret, dict):
        return [(k, v) for k, v in ret.items() if k in keys]
    raise InvalidUpdateError(create_error_message(
        message=f"Expected dict, got {ret} (node {step.name!r} of a linear turn; graphs/turns.py"
                " runs turn nodes that return a dict or None)",
        error_code=ErrorCode.INVALID_GRAPH_NODE_RETURN_VALUE,
    ))


class _LinearTurn:
    """Runs a linear turn subgraph's nodes in order (see the module docstring)."""

    def __init__(self, *, steps: tuple[_Step, ...], specs: dict[str, BaseChannel],
                 input_keys: frozenset[str], output_keys: tuple[str, ...]) -> None:
        self.steps = steps
        self.specs = specs
        self.input_keys = input_keys
        self.output_keys = output_keys
        self.output_set = frozenset(output_keys)

    @staticmethod
    def _read(channels: dict[str, BaseChannel], keys: Sequence[str]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for key in keys:
            try:
                values[key] = channels[key].get()
            except EmptyChannelError:
                pass
        return values

    async def run(self, state: dict[str, Any], config: RunnableConfig) -> Any:
        conf = config.get(CONF) or {}
        stream = conf.get(CONFIG_KEY_STREAM)
        want_updates = stream is not None and "updates" in stream.modes
        want_values = stream is not None and "values" in stream.modes
        namespace = tuple(conf[CONFIG_KEY_CHECKPOINT_NS].split(NS_SEP)) \
            if conf.get(CONFIG_KEY_CHECKPOINT_NS) else ()

        channels = {k: spec.from_checkpoint(MISSING) for k, spec in self.specs.items()}
        touched = False
        for key, value in state.items():
            if key in self.input_keys:
                channels[key].update([value])
                touched = touched or key in self.output_set
        if touched and want_values:
            stream((namespace, "values", self._read(channels, self.output_keys)))

        parent_runtime = conf.get(CONFIG_KEY_RUNTIME) or DEFAULT_RUNTIME
        if not isinstance(parent_runtime, Runtime):  # as Pregel coerces a foreign runtime
            parent_runtime = Runtime(context=getattr(parent_runtime, "context", None))
        runtime = parent_runtime.override(
            stream_writer=parent_runtime.stream_writer if stream is not None
            else _no_op_stream_writer,
            previous=None,
        )
        parent_info = parent_runtime.execution_info
        callbacks = config.get("callbacks")
        base = {k: v for k, v in config.items() if k not in ("run_id", "run_name")}
        base_meta = config.get("metadata") or {}
        base_tags = config.get("tags") or []
        parent_ns = conf.get(CONFIG_KEY_CHECKPOINT_NS) or ""
        # a subgraph's ensure_config copies its checkpoint_ns into the metadata of its node runs
        ns_meta = {**base_meta, "checkpoint_ns": parent_ns} \
            if parent_ns and "checkpoint_ns" not in base_meta else base_meta

        for step in self.steps:
            task_id = str(uuid4())
            task_ns = f"{parent_ns}{NS_SEP if parent_ns else ''}{step.name}{NS_END}{task_id}"
            metadata = {
                **ns_meta,
                "langgraph_step": int(step.step_tag.rsplit(":", 1)[1]),
                "langgraph_node": step.name,
                "langgraph_triggers": step.triggers,
                "langgraph_path": step.path,
                "langgraph_checkpoint_ns": task_ns,
            }
            if step.metadata:
                metadata.update(step.metadata)
            node_runtime = runtime.override(execution_info=ExecutionInfo(
                checkpoint_id=parent_info.checkpoint_id if parent_info else "",
                checkpoint_ns=task_ns,
                task_id=task_id,
                thread_id=conf.get(CONFIG_KEY_THREAD_ID),
                run_id=parent_info.run_id if parent_info else None,
            ))
            node_config: RunnableConfig = {
                **base,
                "metadata": metadata,
                "tags": [*base_tags, *step.tags] if step.tags else base_tags,
                "callbacks": _step_callbacks(callbacks, step.step_tag),
                CONF: {
                    **conf,
                    CONFIG_KEY_TASK_ID: task_id,
                    CONFIG_KEY_CHECKPOINT_NS: task_ns,
                    CONFIG_KEY_CHECKPOINT_ID: None,
                    CONFIG_KEY_RUNTIME: node_runtime,
                },
            }
            node_input = self._read(channels, step.reads)
            if step.mapper is not None:
                node_input = step.mapper(node_input)
            ret = await _run_step(step, node_input, node_config)
            writes = _update_pairs(step, ret, channels)
            for key, value in writes:
                channels[key].update([value])
            wrote_output = any(key in self.output_set for key, _ in writes)
            touched = touched or wrote_output
            if want_updates:
                update = {k: v for k, v in writes if k in self.output_set} if wrote_output else None
                stream((namespace, "updates", {step.name: update}))
            if wrote_output and want_values:
                stream((namespace, "values", self._read(channels, self.output_keys)))
        return self._read(channels, self.output_keys) if touched else None


def _step_callbacks(callbacks: Any, step_tag: str) -> Any:
    """A fresh manager for one inner node: the turn's callbacks with ``step_tag`` in place of the
    turn's own non-inherited tag, as a graph run's ``get_child(f"graph:step:{n}")`` would give
    (fresh because LangGraph adds a run's tags and metadata to the manager in place)."""
    if not isinstance(callbacks, AsyncCallbackManager):
        return callbacks
    manager = AsyncCallbackManager(handlers=[], parent_run_id=callbacks.parent_run_id)
    manager.set_handlers(callbacks.inheritable_handlers)
    manager.add_tags(callbacks.inheritable_tags)
    manager.add_metadata(callbacks.inheritable_metadata)
    manager.add_tags([step_tag], inherit=False)
    return manager


async def _run_step(step: _Step, node_input: Any, config: RunnableConfig) -> Any:
    """One node in its own child run, as LangGraph's ``RunnableSeq`` runs a node's runnable."""
    manager = get_async_callback_manager_for_config(config)
    run_manager = await manager.on_chain_start(None, node_input, name=step.name)
    try:
        child = patch_config(config, callbacks=run_manager.get_child("seq:step:1"))
        run = None
        for handler in run_manager.handlers:
            if isinstance(handler, LangChainTracer):
                run = handler.run_map.get(str(run_manager.run_id))
                break
        with set_config_context(child, run) as context:
            ret = await asyncio.create_task(step.runnable.ainvoke(node_input, child),
                                            context=context)
    except BaseException as exc:
        await run_manager.on_chain_error(exc)
        raise
    await run_manager.on_chain_end(ret)
    return ret


def _compiled_turn(compiled: CompiledStateGraph) -> Any:
    async def run_compiled(state: Any, config: RunnableConfig) -> Any:
        configurable = {**config.get(CONF, {}), CONFIG_KEY_DURABILITY: "async"}
        return await compiled.ainvoke(state, {**config, CONF: configurable})

    return run_compiled


def turn_node(subgraph: StateGraph, name: str) -> Any:
    """An async node function running ``subgraph`` on its input, without inner checkpoints.

    Linear subgraphs run on ``_LinearTurn``; others (and any turn while the parent streams
    ``tasks``/``checkpoints``/``debug``) run compiled with ``checkpointer=False``. The function's
    ``linear`` attribute says which, ``fallback_reason`` why not.
    """
    compiled = subgraph.compile(name=name, checkpointer=False)
    run_compiled = _compiled_turn(compiled)
    plan = _plan(subgraph, compiled)

    if isinstance(plan, str):
        log.info("turn %r runs as a compiled subgraph: %s", name, plan)
        run_turn = run_compiled
    else:
        linear = plan

        async def run_turn(state: Any, config: RunnableConfig) -> Any:
            stream = (config.get(CONF) or {}).get(CONFIG_KEY_STREAM)
            if not isinstance(state, dict) or (
                    stream is not None and not stream.modes <= FAST_STREAM_MODES):
                return await run_compiled(state, config)
            return await linear.run(state, config)

    run_turn.__name__ = run_turn.__qualname__ = name
    run_turn.__doc__ = f"One {name} (subgraph {name!r}, no inner checkpoints)."
    run_turn.linear = not isinstance(plan, str)  # type: ignore[attr-defined]
    run_turn.fallback_reason = plan if isinstance(plan, str) else None  # type: ignore[attr-defined]
    run_turn.compiled = compiled  # type: ignore[attr-defined]
    return run_turn
