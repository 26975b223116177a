"""The graphs users run themselves: Studio, the LangGraph server, ``build_<x>().compile()`` in Python.

``build_<x>()`` (``turns="visible"``, the default) returns a :class:`DebateBuilder`, whose
``compile()`` gives a :class:`DebateGraph` - a ``CompiledStateGraph`` that adds, on the public
``stream``/``astream`` methods every other entry point goes through (``invoke``, ``batch``,
``ainvoke``, ``abatch``, ``astream_events``, langgraph-api's runs):

* **Breakpoints on the nodes inside turns.** ``interrupt_before``/``interrupt_after`` accept the
  nodes ``get_graph(xray=True)`` draws: top-level nodes, and the nodes inside a turn by plain
  (``respond``) or qualified name (``debate_turn:respond``). Top-level names go to LangGraph as
  they are; inner names go to the turn nodes in the run's ``configurable`` (:data:`BREAKPOINTS_KEY`),
  and each turn runs its subgraph with them as its own static breakpoints (graphs/turns.py), so
  the run pauses inside the turn, with the turn's state at ``get_state(config, subgraphs=True)``,
  editable with ``update_state`` on the turn's config, resumed with ``None`` or a ``Command``.
  ``"*"`` is every top-level node, as in LangGraph. A name the graph does not have is refused
  with :class:`~factdebate.core.errors.ConfigError` (a ``ValueError``) naming the nodes it has,
  before anything runs; the server refuses it before the run is created (server/run_input.py).
  ``compile(interrupt_before=..., interrupt_after=...)`` takes the same names with the same
  refusal: the graph keeps them and every run that names no breakpoints of that kind itself runs
  with them, as LangGraph treats a compiled graph's breakpoints.
* **Model messages without subgraph parsing.** ``stream_mode="messages"`` without
  ``subgraphs=True`` yields the messages of every model call, the debaters' inside turns included
  (LangGraph keeps only the top-level graph's): the graph streams with ``subgraphs=True`` and
  hands on the subgraphs' ``messages`` (and ``custom``) chunks as top-level ones, dropping their
  other modes, so the caller gets the shapes it asked for. The metadata names the node
  (``langgraph_node``) and the agent (``fd_agent``, ``fd_role``, ``fd_round``; nodes/llm.py).
* **The index on first use.** Before a run reads the default index folder for the first time in
  the process, the graph applies the command line's rule (graphs/first_use.py): the bundled demo
  corpus is indexed where no index exists at all (one line on stderr), a damaged index is one
  error line naming the rebuild command - never a traceback from inside a retriever.
* **Sync and async alike.** Most nodes are async; ``stream`` (and with it ``invoke`` and
  ``batch``) runs ``astream`` on an event loop of its own in a worker thread, with a copy of the
  caller's context variables, so it is correct from plain code and from inside a running event
  loop (a notebook). The checkpointer must serve async calls (``InMemorySaver``, the async
  SQLite/Postgres savers); a sync-only saver fails as it does under ``ainvoke``.
* **The warm heap frozen once.** When the first run of the process has streamed to its end, the
  objects alive then (modules, models, indexes, compiled graphs) are moved out of the cyclic
  garbage collector's full collections (``core/heap.py``: the server and Studio path, as
  ``run_graph`` does for the CLI's).

The CLI and ``eval`` compile ``turns="lean"`` (run/claims.py): a plain ``StateGraph`` whose turns
have no inner checkpoints - the measured budgets of BENCHMARKS.md hold for that variant.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import queue
import threading
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, RetryPolicy

from factdebate.core import trace_filter
from factdebate.core.errors import ConfigError
from factdebate.core.heap import settle_after_first_claim
from factdebate.core.secrets_filter import redact_exception
from factdebate.graphs.first_use import (
    ensure_index,
    framework_needs_index,
    index_pending,
    run_context,
)
from factdebate.graphs.variants import Turns, check_turns

__all__ = ["BREAKPOINTS_KEY", "NODE_ERRORS", "TURN_CHECKPOINTS_KEY", "DebateBuilder", "DebateGraph",
           "Turns", "check_turns", "new_builder", "node_names", "split_breakpoints",
           "turn_breakpoints", "turn_checkpoints_wanted"]

BREAKPOINTS_KEY = "factdebate_inner_breakpoints"
"""``configurable`` key carrying a run's breakpoints on nodes inside turns to the turn nodes:
``{"before": [names], "after": [names]}``, names plain or qualified (``debate_turn:respond``)."""

ALL = "*"

TURN_CHECKPOINTS_KEY = "__factdebate_turn_checkpoints"
"""``configurable`` key :class:`DebateGraph` sets (True) on a run whose visible turns write their
inner checkpoints: a run with a breakpoint inside a turn, a resumed run (input ``None`` or a
``Command``) and a run whose Context sets ``inner_checkpoints``. Any other run's turns write none
(graphs/turns.py). The ``__`` prefix keeps it out of run metadata and traces. A client that sets it
itself (langgraph-api copies a run's ``context`` into ``configurable``) gets what the public
``inner_checkpoints`` knob gives: more checkpoints for its own run, nothing else."""


def _redacted_not_retried(exc: Exception) -> bool:
    """Remove every secret from ``exc`` (in place, its chain included); never a retry."""
    redact_exception(exc)
    return False


NODE_ERRORS = RetryPolicy(max_attempts=1, retry_on=_redacted_not_retried)
"""The node policy of every graph builder (``new_builder``, the turn subgraphs of
graphs/turns.py): LangGraph hands each exception a node raises to ``retry_on`` before it records
it anywhere - the checkpointed task error, the run's ``__error__`` langgraph-api shows a client,
its log line - so a library's exception (a ``ValueError`` quoting a provider's ``Authorization``
header) is redacted there by the one secret filter (``factdebate.core.secrets_filter``), as a
``FactDebateError`` is when it is made. Nothing is retried: retries are the nodes' own
(``factdebate.core.retry``)."""


def new_builder(turns: Turns, *args: Any, **kwargs: Any) -> StateGraph:
    """A graph builder of variant ``turns``: a :class:`DebateBuilder` when visible; its nodes'
    errors pass the secret filter (:data:`NODE_ERRORS`)."""
    builder = (DebateBuilder if check_turns(turns) == "visible" else StateGraph)(*args, **kwargs)
    return builder.set_node_defaults(retry_policy=NODE_ERRORS)


class DebateBuilder(StateGraph):
    """A ``StateGraph`` whose ``compile()`` gives a :class:`DebateGraph`."""

    def compile(self, checkpointer: Any = None, *, interrupt_before: Any = None,  # type: ignore[override]
                interrupt_after: Any = None, **kwargs: Any) -> DebateGraph:
        """``StateGraph.compile``, as a :class:`DebateGraph`; its breakpoints may name inner nodes.

        ``interrupt_before``/``interrupt_after`` take what a run takes (module doc): top-level
        names go to LangGraph's ``compile``, names of nodes inside turns (plain or qualified) are
        kept on the graph and given to every run that names no breakpoints of that kind itself -
        as LangGraph treats compiled breakpoints.

        Raises:
            ConfigError: A name is no node of the graph (the nodes it has are listed).
        """
        compiled = super().compile(checkpointer, **kwargs)
        attrs = {k: v for k, v in vars(compiled).items() if k != "__orig_class__"}
        graph = DebateGraph(**attrs)
        if interrupt_before is None and interrupt_after is None:
            return graph
        before, inner_before = split_breakpoints(graph, interrupt_before, "interrupt_before")
        after, inner_after = split_breakpoints(graph, interrupt_after, "interrupt_after")
        return DebateGraph(**{**attrs, "interrupt_before_nodes": before or [],
                              "interrupt_after_nodes": after or [],
                              "inner_breakpoints": {"before": inner_before,
                                                    "after": inner_after}})


_NODE_NAMES: weakref.WeakKeyDictionary[Any, tuple[frozenset[str], tuple[str, ...]]] = (
    weakref.WeakKeyDictionary())


def node_names(graph: CompiledStateGraph) -> tuple[frozenset[str], tuple[str, ...]]:
    """(top-level node names, every node name ``get_graph(xray=True)`` draws), once per builder."""
    key = graph.builder
    if key not in _NODE_NAMES:
        top = frozenset(n for n in graph.nodes if not n.startswith("__"))
        drawn = tuple(n for n in graph.get_graph(xray=True).nodes
                      if not n.rsplit(":", 1)[-1].startswith("__"))  # START/END, also a turn's
        _NODE_NAMES[key] = (top, tuple(dict.fromkeys((*sorted(top), *drawn))))
    return _NODE_NAMES[key]


def split_breakpoints(graph: CompiledStateGraph, names: Any, kind: str
                      ) -> tuple[Any, list[str]]:
    """(what LangGraph gets for ``kind``, the names of nodes inside turns) of ``names``.

    Raises:
        ConfigError: a name is no node of ``graph`` (the nodes it has are listed).
    """
    if names is None or names == ALL:
        return names, []
    if isinstance(names, str):
        names = [names]
    top, drawn = node_names(graph)
    known = {*drawn, *(n.rsplit(":", 1)[-1] for n in drawn)}
    unknown = [n for n in names if n != ALL and n not in known]
    if unknown:
        raise ConfigError(
            f"{kind} names node(s) {graph.get_name()} does not have: "
            f"{', '.join(map(repr, unknown))}",
            f"its nodes: {', '.join(drawn)} (a node inside a turn also by its name alone, "
            f"without 'turn:'); '*' for every top-level node")
    if ALL in names:
        return ALL, [n for n in names if n not in top and n != ALL]
    outer = [n for n in names if n in top]
    return (outer or None), [n for n in names if n not in top]


def turn_breakpoints(config: RunnableConfig, turn: str, inner: frozenset[str]
                     ) -> tuple[list[str] | None, list[str] | None]:
    """The run's (before, after) breakpoints on nodes of turn ``turn`` (inner names ``inner``)."""
    wanted = (config.get("configurable") or {}).get(BREAKPOINTS_KEY)
    if not wanted:
        return None, None

    def mine(names: Sequence[str]) -> list[str] | None:
        picked = [n.removeprefix(f"{turn}:") for n in names
                  if n in inner or (n.startswith(f"{turn}:") and n[len(turn) + 1:] in inner)]
        return picked or None

    return mine(wanted.get("before") or ()), mine(wanted.get("after") or ())


def turn_checkpoints_wanted(config: RunnableConfig) -> bool:
    """True when this run's visible turns write their inner checkpoints (:data:`TURN_CHECKPOINTS_KEY`)."""
    return bool((config.get("configurable") or {}).get(TURN_CHECKPOINTS_KEY))


_CONTEXT_SCHEMAS: dict[Any, dict[str, Any] | None] = {}
"""Context class -> its JSON schema (:meth:`DebateGraph.get_context_jsonschema`)."""


def _stream_modes(graph: CompiledStateGraph, stream_mode: Any) -> list[str]:
    mode = stream_mode if stream_mode is not None else graph.stream_mode
    return [mode] if isinstance(mode, str) else list(mode)


class DebateGraph(CompiledStateGraph):
    """A compiled exported graph: inner breakpoints, flat model messages, a sync bridge."""

    def __init__(self, *args: Any, inner_breakpoints: dict[str, list[str]] | None = None,
                 **kwargs: Any) -> None:
        """``CompiledStateGraph``'s arguments, and the compiled breakpoints on nodes inside turns
        (``{"before": [names], "after": [names]}``; ``copy()`` passes them on)."""
        super().__init__(*args, **kwargs)
        self.inner_breakpoints = inner_breakpoints or {"before": [], "after": []}

    async def astream(  # type: ignore[override]
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: Any = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        subgraphs: bool = False,
        version: str = "v1",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """``CompiledStateGraph.astream`` with inner breakpoints and flat messages (module doc)."""
        trace_filter.install()  # the run's traces hold no secret (core/trace_filter.py)
        before, inner_before = split_breakpoints(self, interrupt_before, "interrupt_before")
        after, inner_after = split_breakpoints(self, interrupt_after, "interrupt_after")
        if not interrupt_before:  # the compiled ones, as LangGraph falls back to its own
            inner_before = self.inner_breakpoints["before"]
        if not interrupt_after:
            inner_after = self.inner_breakpoints["after"]
        ctx = run_context(self.builder.context_schema, kwargs.get("context"))
        if index_pending(ctx) and framework_needs_index(self.get_name()):  # once per process
            await asyncio.to_thread(ensure_index, ctx)  # the CLI's first-use rule (first_use.py)
        for_turns: dict[str, Any] = {}  # what the turn nodes read (graphs/turns.py)
        if inner_before or inner_after:
            for_turns[BREAKPOINTS_KEY] = {"before": inner_before, "after": inner_after}
        if (for_turns or input is None or isinstance(input, Command)
                or (ctx is not None and ctx.inner_checkpoints)):
            for_turns[TURN_CHECKPOINTS_KEY] = True  # the turns write inner checkpoints
        if for_turns:
            config = {**(config or {})}
            config["configurable"] = {**(config.get("configurable") or {}), **for_turns}
        modes = _stream_modes(self, stream_mode)
        flat = "messages" in modes and not subgraphs
        chunks = super().astream(
            input, config, stream_mode=modes if flat else stream_mode,
            interrupt_before=before, interrupt_after=after, subgraphs=subgraphs or flat,
            version=version, **kwargs)  # type: ignore[arg-type]
        if not flat:
            async for chunk in chunks:
                yield chunk
            settle_after_first_claim()  # the warm heap frozen once per process (core/heap.py)
            return
        single = isinstance(stream_mode if stream_mode is not None else self.stream_mode, str)
        async for chunk in chunks:
            if version == "v2":
                ns, mode = chunk["ns"], chunk["type"]
            else:
                ns, mode, payload = chunk
            if ns and mode not in ("messages", "custom"):
                continue  # a subgraph's other modes: not asked for
            if version == "v2":
                yield chunk
            else:
                yield payload if single else (mode, payload)
        settle_after_first_claim()

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """LangGraph's JSON schema of the Context, built once per Context class (a copy each call).

        langgraph-api asks for it on every run to filter the run's ``context``; LangGraph builds
        a pydantic ``TypeAdapter`` of the dataclass each time, which cost a server run more CPU
        than any node of a one-round debate (``factdebate bench profile``). The schema of a
        class does not change, so it is kept per class."""
        schema = self.context_schema
        if schema is None:
            return None
        if schema not in _CONTEXT_SCHEMAS:
            _CONTEXT_SCHEMAS[schema] = super().get_context_jsonschema()
        kept = _CONTEXT_SCHEMAS[schema]
        return copy.deepcopy(kept) if kept is not None else None

    def stream(self, input: Any, config: RunnableConfig | None = None,  # type: ignore[override]
               **kwargs: Any) -> Iterator[Any]:
        """``astream`` on its own event loop in a worker thread (the nodes are async)."""
        return _iterate_in_thread(lambda: self.astream(input, config, **kwargs))


_DONE = object()


def _iterate_in_thread(make: Any) -> Iterator[Any]:
    """The items of the async iterator ``make()`` returns, iterated on a new loop in a thread.

    Context variables are copied from the caller (tracing, callbacks' parent run); an exception
    is raised in the caller as it is; closing the iterator early cancels the run.
    """
    items: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
    context = contextvars.copy_context()
    started: dict[str, Any] = {}

    async def pump() -> None:
        started["task"] = asyncio.current_task()
        started["loop"] = asyncio.get_running_loop()
        try:
            async for item in make():
                items.put((True, item))
        except BaseException as exc:  # noqa: BLE001  # handed to the caller's thread
            started["finished"] = True
            items.put((False, exc))
        else:
            started["finished"] = True
            items.put((False, _DONE))

    def run() -> None:
        with asyncio.Runner() as runner:
            runner.run(pump(), context=context)

    thread = threading.Thread(target=run, name="factdebate-sync-bridge", daemon=True)
    thread.start()
    try:
        while True:
            ok, item = items.get()
            if ok:
                yield item
            elif item is _DONE:
                return
            else:
                raise item
    finally:
        # Closed early: cancel the run. A run that has ended is not cancelled; its loop may be
        # closing already (then call_soon_threadsafe raises, and there is nothing to cancel).
        if thread.is_alive() and "task" in started and not started.get("finished"):
            with contextlib.suppress(RuntimeError):
                started["loop"].call_soon_threadsafe(started["task"].cancel)
        thread.join()
