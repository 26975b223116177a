"""What routers read: the run's Context, or without one (``update_state``) the recorded knobs.

LangGraph calls a router with the run's ``Runtime`` during a run, but ``graph.update_state`` (and
the server's ``threads.update_state``) runs the routers of ``as_node`` with none, and a router
that declares a ``runtime`` parameter then fails (``Missing required config key 'N/A' for
'route_after_...'``). So routers take only the state (and, for unit tests, an explicit Context)
and look the run's Context up with ``langgraph.runtime.get_runtime()``; without one they rebuild
it from the knobs the first node recorded in ``state["routing"]`` (the run's own values), and on
a thread that never ran, from the Context defaults. Recorded knobs are state a client can edit, so
they are checked as the Context checks them (ranges, choices); an invalid one gives the defaults.

**Caps count what the graph recorded**. ``round`` is state too: were it trusted, a
client's ``update_state``/``Command(update={"round": -150}, goto="open_round")`` would buy 150
rounds past ``max_rounds``. Every loop therefore counts its progress from the turns it recorded
(:func:`rounds_done`, :func:`steps_done`; a client can add turns but cannot make the graph record
fewer than it did), routers stop on :func:`rounds_used` (the larger of that count and ``round``),
and a loop's opening node refuses to start a round or step past the cap
(:func:`refuse_past_cap`). One run thus does at most the cap's rounds or steps whatever the state
says; the operator's per-run budget of model calls (``factdebate.core.budget``) bounds the rest.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import fields
from typing import Any, Final, Literal, TypeVar, cast

import langgraph.graph
from langgraph.runtime import get_runtime

from factdebate.core.errors import FactDebateError, InputError
from factdebate.core.state import DebateState, Turn

END: Final = cast(Literal["__end__"], langgraph.graph.END)
"""LangGraph's ``END`` typed as the literal routers declare (LangGraph types it as ``str``)."""

ROUTING_KNOBS = (
    "max_rounds", "debaters", "num_debaters", "knowledge_sources", "t_max", "samples", "drafts",
    "consolidation_rounds", "reflection_rounds", "orderly_view", "multi_answer_drafts", "agents",
    "max_steps", "max_follow_ups", "review",
)
"""Context fields some router reads (the only ones recorded; no URL, path or credential)."""

ROUTING_LISTS = ("agent_ids", "debater_ids")
"""Context methods some router calls; their results are recorded as lists (for the record: a
router rebuilds them from the checked knobs)."""

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


def _current_context() -> Any:
    """The running graph's Context, or None (``update_state``, or no graph running)."""
    try:
        runtime = get_runtime()
    except RuntimeError:  # called outside a runnable context (a plain function call)
        return None
    return getattr(runtime, "context", None)


def recorded_context(recorded: Mapping[str, Any], cls: type[C]) -> C:
    """``cls`` built from the routing knobs a run recorded, checked as the Context checks them.

    ``state["routing"]`` can be edited by a client, so a knob out of its range (``max_rounds``
    of 10**6, a list of 1,000 debaters) or of the wrong type is not obeyed: the defaults are.
    """
    names = {f.name for f in fields(cls)} & set(ROUTING_KNOBS)  # type: ignore[arg-type]
    knobs = {k: v for k, v in recorded.items() if k in names} if isinstance(recorded, Mapping) \
        else {}
    try:
        return cls(**knobs)
    except (FactDebateError, TypeError, ValueError):
        return cls()


def run_context(state: Any, cls: type[C], ctx: C | None = None) -> C:
    """``ctx`` if given, else the run's Context, else the recorded knobs over ``cls`` defaults."""
    if ctx is not None:
        return ctx
    current = _current_context()
    if current is not None:
        return current  # type: ignore[no-any-return]
    recorded = (state.get("routing") if isinstance(state, dict) else None) or {}
    return recorded_context(recorded, cls)


def _turns(state: Any) -> list[dict[str, Any]]:
    turns = state.get("turns") if isinstance(state, Mapping) else None
    return [t for t in turns or [] if isinstance(t, Mapping)]  # type: ignore[misc]


def round_turns(state: DebateState, round_: int | None = None) -> list[Turn]:
    """Turns of ``round_`` (default: the current round), ordered by agent."""
    r = state["round"] if round_ is None else round_
    return sorted((t for t in state.get("turns", []) if t["round"] == r), key=lambda t: t["agent"])


def rounds_done(state: Any, agents: Collection[str] | None = None) -> int:
    """Rounds the graph recorded: the distinct round numbers >= 1 of the turns (of ``agents``).

    Every round of a debate records a turn per speaker under its number, and ``open_round``
    numbers rounds from this count, so it is the number of rounds held whatever ``round`` says.
    """
    return len({t["round"] for t in _turns(state)
                if isinstance(t.get("round"), int) and t["round"] >= 1
                and (agents is None or t.get("agent") in agents)})


def steps_done(state: Any, agents: Collection[str]) -> int:
    """Steps of a single-agent loop the graph recorded: the turns ``agents`` wrote (one a step)."""
    return sum(1 for t in _turns(state) if t.get("agent") in agents)


def rounds_used(state: Any, done: int) -> int:
    """What a loop's cap is compared with: the recorded count ``done`` or ``round``, the larger
    (a client may write any ``round``; a smaller one no longer buys rounds)."""
    current = state.get("round") if isinstance(state, Mapping) else 0
    return max(done, current if isinstance(current, int) else 0)


def refuse_past_cap(done: int, cap: int, *, what: str, knob: str) -> None:
    """Raise ``InputError`` when a loop would start round/step ``done + 1`` of at most ``cap``.

    Routers never send a run there; only a state edit with ``goto`` (``update_state``, a server
    ``Command``) does, and that one is refused before any model is called.
    """
    if done >= cap:
        raise InputError(
            f"this thread already recorded {done} {what}, its cap {knob}={cap}; no more are started",
            "start a new run for the claim (an edit of 'round' does not reopen a finished loop)")
