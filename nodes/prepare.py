"""``prepare``: validates the input and resolves the task before any model is called.

The same checks guard the CLI and the LangGraph server API: an empty or oversized claim, an unknown
label set, missing options for multiple-choice tasks and an unusable backend are rejected here with
an error that names the problem and the remedy.

It is also where a claim starts: every per-claim key of the graph's state gets its empty value
(reducer keys through ``Overwrite``), so a new input on a thread that already verified a claim
starts a fresh debate instead of continuing the old one (``fresh_claim``), and the routers' knobs
are recorded for ``update_state`` (nodes/routing.py).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime

from factdebate.core.context import (
    MAX_CLAIM_CHARS,
    Context,
    allowed_models_from_env,
    mask_url,
    model_allowed,
    operator_fields,
)
from factdebate.core.errors import InputError, SettingsRefused
from factdebate.core.labels import LABEL_SETS
from factdebate.core.state import DebateState, fresh_claim
from factdebate.nodes.retrieval import resolve_backend
from factdebate.nodes.routing import routing_settings

_ALLOWED_CONTROLS = {"\n", "\t"}


def clean_claim(claim: object) -> str:
    """The claim with control characters removed and whitespace trimmed; invalid input raises."""
    if not isinstance(claim, str):
        raise InputError(f"the claim must be text, got {type(claim).__name__}",
                         "pass the claim as a string")
    cleaned = "".join(
        ch for ch in claim
        # ZWNJ/ZWJ (format characters) spell Persian words and emoji sequences: kept
        if ch in _ALLOWED_CONTROLS or ch in "\u200c\u200d"
        or unicodedata.category(ch) not in ("Cc", "Cf", "Cs")
    ).strip()
    if not cleaned:
        raise InputError("the claim is empty or whitespace only", "pass a non-empty claim")
    if len(cleaned) > MAX_CLAIM_CHARS:
        raise InputError(
            f"the claim has {len(cleaned)} characters, over the limit of {MAX_CLAIM_CHARS}",
            "shorten it or split it into several claims",
        )
    return cleaned


def prepare(state: DebateState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Validated claim, resolved task, backend flags; every other ``DebateState`` key emptied."""
    return fresh_claim(DebateState, start_claim(state, runtime.context))


def prepare_for(schema: type) -> Callable[..., dict[str, Any]]:
    """``prepare`` for a graph whose state ``schema`` adds per-claim keys to ``DebateState``."""

    def prepare(state: DebateState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Validated claim, resolved task, backend flags; every other per-claim key emptied."""
        return fresh_claim(schema, start_claim(state, runtime.context))

    return prepare


def guard_server_run(ctx: Context) -> None:
    """Defence in depth on a LangGraph server: operator-only settings must be the operator's.

    The server's auth handlers refuse a run that sets an operator-only field before it starts
    (``factdebate.server.policy``). Should a value reach a graph another way, the first node of
    every framework refuses it here, before any process is spawned or URL contacted: a server run
    (langgraph-api puts the authenticated user into its config) must carry, in every operator-only
    field, the value the operator's environment gives, and every model spec it resolved (its own
    or the operator's default) must be on the operator's allow-list (a run from a ``RemoteGraph``
    node sends no ``context``: it gets the defaults, checked here too).
    """
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a runnable context (unit tests)
        return
    if not configurable.get("langgraph_auth_user_id"):
        return
    reference = type(ctx)()  # the declared defaults, filled from the server's environment
    for name in sorted(operator_fields(type(ctx))):
        if getattr(ctx, name) != getattr(reference, name):
            raise SettingsRefused(
                f"{name} is an operator-only setting and cannot be set by a run",
                "remove it from the run's context; the server's operator configures it",
                field=name)
    allowed = allowed_models_from_env()
    for f in fields(ctx):
        spec = getattr(ctx, f.name)
        if f.metadata.get("model") and spec and not model_allowed(str(spec), allowed):
            raise SettingsRefused(
                f"{f.name}={mask_url(str(spec))!r} is not on this server's model allow-list",
                f"set {f.name} to one of: {', '.join(sorted(allowed))}", field=f.name)


def start_claim(state: DebateState, ctx: Context) -> dict[str, Any]:
    """Validated claim, resolved task, backend flags, an empty ledger and the routing knobs."""
    guard_server_run(ctx)
    task = LABEL_SETS.resolve(state.get("task") or ctx.label_set)
    if task == "medqa" and not state.get("options"):
        raise InputError("task 'medqa' needs answer options", "pass options {'A': ..., 'D': ...}")
    flags = list(ctx.start_notes())
    for kind in ctx.tool_kinds():
        _, flag = resolve_backend(kind, ctx)
        if flag and flag not in flags:
            flags.append(flag)
    return {"claim": clean_claim(state.get("claim")), "task": task, "flags": flags,
            "ledger": {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                       "tool_calls": {}},
            "routing": routing_settings(ctx)}
