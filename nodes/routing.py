"""What routers read: the run's Context, or without one (``update_state``) the recorded knobs.

LangGraph calls a router with the run's ``Runtime`` during a run, but ``graph.update_state`` (and
the server's ``threads.update_state``) runs the routers of ``as_node`` with none, and a router
that declares a ``runtime`` parameter then fails (``Missing required config key 'N/A' for
'route_after_...'``). So routers take only the state (and, for unit tests, an explicit Context)
and look the run's Context up with ``langgraph.runtime.get_runtime()``; without one they rebuild
it from the knobs the first node recorded in ``state["routing"]`` (the run's own values), and on
a thread that never ran, from the Context defaults.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeVar, cast

import langgraph.graph
from langgraph.runtime import get_runtime

END: Final = cast(Literal["__end__"], langgraph.graph.END)
"""LangGraph's ``END`` typed as the literal routers declare (LangGraph types it as ``str``)."""

ROUTING_KNOBS = (
    "max_rounds", "debaters", "num_debaters", "knowledge_sources", "t_max", "samples", "drafts",
    "consolidation_rounds", "reflection_rounds", "orderly_view", "multi_answer_drafts",
)
"""Context fields some router reads (the only ones recorded; no URL, path or credential)."""

ROUTING_LISTS = ("agent_ids", "debater_ids")
"""Context methods some router calls; their results are recorded as lists."""

C = TypeVar("C")


def routing_settings(ctx: Any) -> dict[str, Any]:
    """The run's values of the routing knobs its Context has (stored by the first node)."""
    out: dict[str, Any] = {}
    for name in ROUTING_KNOBS:
        if hasattr(ctx, name):
            value = getattr(ctx, name)
            out[name] = list(value) if isinstance(value, list) else value
    for name in ROUTING_LISTS:
        if callable(getattr(ctx, name, None)):
            out[name] = list(getattr(ctx, name)())
    return out


class RecordedContext:
    """A run's routing knobs read back from the state, the Context defaults for the rest."""

    def __init__(self, recorded: dict[str, Any], defaults: Any) -> None:
        self._recorded = recorded
        self._defaults = defaults

    def __getattr__(self, name: str) -> Any:
        if name in self._recorded and name not in ROUTING_LISTS:
            return self._recorded[name]
        return getattr(self._defaults, name)

    def agent_ids(self) -> list[str]:
        """Debater ids of the run (Tool-MAD and the debate baselines)."""
        return list(self._recorded.get("agent_ids") or self._defaults.agent_ids())

    def debater_ids(self) -> list[str]:
        """Debater ids of the run (MADKE)."""
        return list(self._recorded.get("debater_ids") or self._defaults.debater_ids())


def _current_context() -> Any:
    """The running graph's Context, or None (``update_state``, or no graph running)."""
    try:
        runtime = get_runtime()
    except RuntimeError:  # called outside a runnable context (a plain function call)
        return None
    return getattr(runtime, "context", None)


def run_context(state: Any, cls: type[C], ctx: C | None = None) -> C:
    """``ctx`` if given, else the run's Context, else the recorded knobs over ``cls`` defaults."""
    if ctx is not None:
        return ctx
    current = _current_context()
    if current is not None:
        return current  # type: ignore[no-any-return]
    recorded = (state.get("routing") if isinstance(state, dict) else None) or {}
    return RecordedContext(recorded, cls())  # type: ignore[return-value]
