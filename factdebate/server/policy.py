"""What a client of the LangGraph server may set: the checks behind the auth handlers.

Everything a client sends that can become a run's ``Context`` is checked before anything starts:

* a run's ``context`` and ``config.configurable`` (langgraph-api copies ``configurable`` into the
  context when no ``context`` is sent);
* an assistant's ``context`` and ``config.configurable`` (merged into every run of that assistant);
* a cron's ``payload`` (a run created later by the scheduler).

Operator-only fields (a process, URL, host, file, folder or credential: ``mcp_command``,
``model_base_url``, ``index_dir`` ...) are refused, and model specs must be on the operator's
allow-list (``FACTDEBATE_ALLOWED_MODELS``); both through
:func:`factdebate.core.context.check_client_settings`. Which graph a run will use is not known
reliably at this point (a client-made assistant names its graph elsewhere), so the values are
checked against every framework's Context class: a field that is operator-only in any of them is
refused. Keys no Context knows are left alone (langgraph-api drops them by the graph's schema).

``config.configurable`` keys the server itself sets (``langgraph_auth_user``, ``user_id``, ``__...``)
are refused from clients where the server would otherwise trust them later (assistants, crons:
the cron scheduler takes a cron's user from its stored payload).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from factdebate.core.context import (
    Context,
    allowed_models_from_env,
    check_client_settings,
    operator_fields,
)
from factdebate.core.errors import SettingsRefused
from factdebate.core.settings import default_of
from factdebate.run.frameworks import FRAMEWORKS, context_class


class Refused(Exception):
    """A client setting the server does not accept (the auth handlers answer 403 with it)."""

    def __init__(self, field: str, detail: str) -> None:
        """``field``: the refused setting; ``detail``: the one-line message for the client."""
        super().__init__(detail)
        self.field = field
        self.detail = detail


RESERVED_CONFIGURABLE_PREFIXES = ("langgraph_", "__", "user_id", "cron_id")
"""``configurable`` keys langgraph-api sets for itself and trusts when it reads them back."""


GRAPH_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""langgraph-api's ``NAMESPACE_GRAPH``: a graph's own assistant id is ``uuid5(it, graph_id)``."""


@functools.cache
def context_classes() -> tuple[type[Context], ...]:
    """The Context class of every served framework (each once)."""
    return tuple(dict.fromkeys(context_class(name) for name in FRAMEWORKS.names()))


@functools.cache
def _graph_of_assistant() -> dict[str, str]:
    ids = {str(uuid.uuid5(GRAPH_NAMESPACE, name)): name for name in FRAMEWORKS.names()}
    return {**ids, **{name: name for name in FRAMEWORKS.names()}}


def graph_of(assistant_id: object) -> str | None:
    """The framework behind a graph's own assistant (id or graph name); None for other ids."""
    return _graph_of_assistant().get(str(assistant_id)) if assistant_id else None


@functools.cache
def _framework_defaults() -> dict[str, list[Any]]:
    defaults: dict[str, list[Any]] = {}
    for cls in context_classes():
        for f in fields(cls):
            defaults.setdefault(f.name, []).append(default_of(f))
    return defaults


@functools.cache
def _operator_anywhere() -> frozenset[str]:
    return frozenset().union(*(operator_fields(cls) for cls in context_classes()))


def check_settings(values: Mapping[str, Any] | None, where: str,
                   graph: str | None = None) -> None:
    """Refuse operator-only fields and models off the allow-list in ``values``.

    ``graph`` known: checked against that framework's Context. Unknown (an assistant a client
    made): against every framework's Context, where an operator-only field may still hold the
    default of some framework (Studio echoes a form's defaults, e.g. ``prompt_set="mermaid"``).

    Raises:
        Refused: Naming the field and where it was sent.
    """
    if not values:
        return
    if not isinstance(values, Mapping):
        raise Refused(where, f"{where} must be an object of settings; send a JSON object")
    allowed = allowed_models_from_env()
    classes = (context_class(graph),) if graph else context_classes()
    for cls in classes:
        names = {f.name for f in fields(cls)}
        stray = [k for k, v in values.items() if graph and k not in names
                 and k in _operator_anywhere() and v not in _framework_defaults()[k]]
        if stray:  # langgraph-api would drop it silently; say why instead
            raise Refused(stray[0], f"{where}: {stray[0]} is an operator-only setting and cannot "
                          "be set by a run; remove it")
        known = {k: v for k, v in values.items() if k in names and not (
            graph is None and k in operator_fields(cls) and v in _framework_defaults()[k])}
        try:
            check_client_settings(cls, known, allowed)
        except SettingsRefused as exc:
            raise Refused(exc.field or where, f"{where}: {exc}") from None


def check_reserved_configurable(config: Mapping[str, Any] | None, where: str) -> None:
    """Refuse client-set ``configurable`` keys the server reserves for itself."""
    configurable = (config or {}).get("configurable") or {}
    for key in configurable:
        if str(key).startswith(RESERVED_CONFIGURABLE_PREFIXES):
            raise Refused(str(key), f"{where}: config.configurable.{key} is set by the server, "
                          "not by clients; remove it")


def check_run_kwargs(kwargs: Mapping[str, Any], graph: str | None = None) -> None:
    """A run's settings, as langgraph-api hands them to ``threads.create_run``.

    ``kwargs["context"]`` is what reaches the graph: the client's ``context``, or a copy of its
    ``config.configurable`` when it sent no context (langgraph-api ``create_valid_run``).
    """
    check_settings(kwargs.get("context"), "run context", graph)
    configurable = (kwargs.get("config") or {}).get("configurable") or {}
    check_settings(configurable, "run config.configurable", graph)


def check_assistant(value: Mapping[str, Any]) -> None:
    """An assistant's stored settings (create and update)."""
    graph = value.get("graph_id") if value.get("graph_id") in FRAMEWORKS.names() else None
    check_settings(value.get("context"), "assistant context", graph)
    check_reserved_configurable(value.get("config"), "assistant")
    check_settings((value.get("config") or {}).get("configurable"),
                   "assistant config.configurable", graph)


def check_cron_payload(payload: Mapping[str, Any] | None) -> None:
    """A cron's run payload (create and update)."""
    payload = payload or {}
    graph = graph_of(payload.get("assistant_id"))
    check_settings(payload.get("context"), "cron context", graph)
    config = dict(payload.get("config") or {})
    configurable = {k: v for k, v in (config.get("configurable") or {}).items()
                    if k != "cron_id"}  # langgraph-api stamps cron_id itself before the check
    check_reserved_configurable({"configurable": configurable}, "cron")
    check_settings(configurable, "cron config.configurable", graph)
