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

A run that leaves a model unset gets the operator's model (``FACTDEBATE_MODEL``, else the declared
default), so that model must itself be on the allow-list: :func:`check_default_models` stops the
server's start when it is not (``factdebate.server.lifespan``), and :func:`check_run_kwargs`
refuses such a run (403 naming the allowed specs) on a server whose start skipped that check. The
first node of every graph checks the specs the run resolved once more
(``factdebate.nodes.prepare.guard_server_run``): a run from a ``RemoteGraph`` used as a node, which
sends no ``context``, runs the operator's allowed model and nothing else.

Beyond who may set what: sizes that multiply work are capped by the operator
(:mod:`factdebate.server.limits`, 403 naming the field, the cap and its variable), so is
``config.recursion_limit``; ``check_text``'s ``verifier_settings`` get the checks its verifier's
Context gets when a claim is verified; and where the graph is known the values are built into its
Context (types, ranges, cross-field checks: 422) when they are stored (assistants, crons), so a
stored assistant or cron never holds settings that fail every run.

``config.configurable`` keys the server itself sets (``langgraph_auth_user``, ``user_id``, ``__...``)
are refused from clients where the server would otherwise trust them later (assistants, crons:
the cron scheduler takes a cron's user from its stored payload).
"""

from __future__ import annotations

import functools
import math
import os
import uuid
from collections.abc import Mapping
from dataclasses import Field, fields
from typing import Any

from factdebate.core.context import (
    Context,
    allowed_models_from_env,
    check_client_settings,
    mask_url,
    model_allowed,
    operator_fields,
    run_fields,
)
from factdebate.core.errors import ConfigError, SettingsRefused
from factdebate.core.settings import coerce, default_of, field_types
from factdebate.graphs.exported import BREAKPOINTS_KEY, node_names
from factdebate.graphs.registry import FRAMEWORKS, context_class, exported_graph
from factdebate.graphs.verifiers import verifier_key
from factdebate.server.limits import RECURSION_ENV, Limits, load_limits

MAX_DETAIL_CHARS = 2000
"""Longest refusal a client gets (a refusal quoting a client's value is cut, not echoed whole)."""
MAX_SHOWN_CHARS = 80
"""Longest client value a refusal quotes (:func:`shown`)."""


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """``repr(value)`` for a refusal, cut to ``limit`` characters (its length said when cut)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def bounded(detail: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """``detail`` cut to ``limit`` characters (a refusal's body stays small whatever was sent)."""
    return detail if len(detail) <= limit else f"{detail[:limit - 20]}... (cut)"


class Refused(Exception):
    """A client setting the server does not accept (the auth handlers answer ``status`` with it:
    403 for what this server does not allow, 422 for a value no run could use). Its ``detail`` is
    at most :data:`MAX_DETAIL_CHARS` long."""

    def __init__(self, field: str, detail: str, status: int = 403) -> None:
        """``field``: the refused setting; ``detail``: the one-line message for the client."""
        field, detail = bounded(field, MAX_SHOWN_CHARS), bounded(detail)
        super().__init__(detail)
        self.field = field
        self.detail = detail
        self.status = status


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
                   graph: str | None = None, limits: Limits | None = None,
                   stored: bool = False) -> None:
    """Refuse operator-only fields, models off the allow-list, sizes above the operator's caps
    and bad ``verifier_settings``.

    ``graph`` known: checked against that framework's Context. Unknown (an assistant a client
    made): against every framework's Context, where an operator-only field may still hold the
    default of some framework (Studio echoes a form's defaults, e.g. ``prompt_set="mermaid"``).
    ``stored`` (an assistant's or a cron's settings, used by later runs): every value must also be
    one the graph's Context accepts (type, range, cross-field checks: 422). A run's own values are
    checked by the Context when the run starts, before any model call, with the same message.

    Raises:
        Refused: Naming the field and where it was sent (403; 422 for an invalid value).
    """
    if not values:
        return
    if not isinstance(values, Mapping):
        raise Refused(where, f"{where} must be an object of settings; send a JSON object", 422)
    limits = limits or load_limits()
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
    check_caps(values, where, limits, strict=stored)
    if "verifier_settings" in values:
        check_verifier_settings(values, where, limits)
    if graph and stored:
        _build(context_class(graph), values, where)


def _build(cls: type[Context], values: Mapping[str, Any], where: str) -> Context:
    """``cls`` from the fields of ``values`` it has: the types, ranges and cross-field checks a
    run gets when it starts (a stored assistant or cron would otherwise fail every run)."""
    known = {k: v for k, v in values.items() if k in {f.name for f in fields(cls)}}
    try:
        return cls(**known)
    except ConfigError as exc:  # "max_rounds=0 is out of range ..." names the field first
        field = next((k for k in known if str(exc).startswith((f"{k}=", f"{k} "))), where)
        raise Refused(field, f"{where}: {exc}", 422) from None


@functools.cache
def _hints() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cls in context_classes():
        for name, hint in field_types(cls).items():
            out.setdefault(name, hint)
    return out


@functools.cache
def _ranges() -> dict[str, tuple[float, float]]:
    """Field -> the widest declared range over every framework's Context."""
    out: dict[str, tuple[float, float]] = {}
    for cls in context_classes():
        for f in fields(cls):
            if f.metadata.get("range"):
                low, high = f.metadata["range"]
                old = out.get(f.name, (low, high))
                out[f.name] = (min(low, old[0]), max(high, old[1]))
    return out


def operator_default(f: Field[Any]) -> Any:
    """The value a run that leaves field ``f`` out gets: the operator's environment variable
    (``FACTDEBATE_MODEL`` for ``debater_model``), else the declared default."""
    env = f.metadata.get("env")
    return os.environ[env] if env and os.environ.get(env) else default_of(f)


def unallowed_models(cls: type[Context], values: Mapping[str, Any],
                     allowed: frozenset[str]) -> list[tuple[str, str]]:
    """``(field, spec)`` of the model fields of ``cls`` that a run with ``values`` leaves unset
    and whose operator default is off the allow-list. An empty role model (``judge_model=""``)
    uses another role's model, which is checked in its own field."""
    out = []
    for f in fields(cls):
        if not f.metadata.get("model") or values.get(f.name) not in (None, ""):
            continue
        spec = operator_default(f)
        if isinstance(spec, str) and spec and not model_allowed(spec, allowed):
            out.append((f.name, spec))
    return out


def check_default_models() -> None:
    """Every model a run gets without naming one is on the operator's allow-list (checked for
    every framework's Context at the server's start).

    Raises:
        ConfigError: Naming the field, its default and the allow-list.
    """
    allowed = allowed_models_from_env()
    for cls in context_classes():
        for name, spec in unallowed_models(cls, {}, allowed):
            env = next(f.metadata.get("env") for f in fields(cls) if f.name == name)
            where = f"{env} or " if env else ""
            raise ConfigError(
                f"{name} defaults to {mask_url(spec)!r}, which is not on the model allow-list "
                f"({', '.join(sorted(allowed))})",
                f"set {where}FACTDEBATE_ALLOWED_MODELS so the default is an allowed spec")


def check_unset_models(values: Mapping[str, Any] | None, where: str,
                       graph: str | None = None) -> None:
    """Refuse (403) a run that leaves a model unset whose operator default is not allowed."""
    values = values if isinstance(values, Mapping) else {}
    allowed = allowed_models_from_env()
    for cls in (context_class(graph),) if graph else context_classes():
        for name, spec in unallowed_models(cls, values, allowed):
            raise Refused(name, f"{where}: {name} is not set and this server's default "
                          f"{mask_url(spec)!r} is not on its model allow-list; set {name} to "
                          f"one of: {', '.join(sorted(allowed))}")


def check_caps(values: Mapping[str, Any], where: str, limits: Limits,
               strict: bool = True) -> None:
    """Refuse a size field above the operator's cap (:mod:`factdebate.server.limits`).

    Not ``strict`` (a run's own values): a value that is not a number or is outside the field's
    declared range is left to the Context, which refuses it when the run starts, before any work.
    """
    for name, cap in limits.caps.items():
        if name not in values or name not in _hints():
            continue
        try:
            value = coerce(name, values[name], _hints()[name])
        except ConfigError as exc:
            if not strict:
                continue
            raise Refused(name, f"{where}: {exc}", 422) from None
        low, high = _ranges().get(name, (-math.inf, math.inf))
        if isinstance(value, int | float) and not low <= value <= high:  # NaN too
            if not strict:  # "max_rounds=99 is out of range ..." from the Context, at the start
                continue
            raise Refused(name, f"{where}: {name}={value} is out of range; use a value from "
                          f"{low:g} to {high:g}", 422)
        size = len(value) if isinstance(value, list) else value
        if isinstance(size, int | float) and size > cap:
            what = f"{len(value)} entries" if isinstance(value, list) else f"{name}={value}"
            raise Refused(name, f"{where}: {what} is above this server's cap of {cap:g} for "
                          f"{name} ({Limits.cap_variable(name)}); lower it")


def check_verifier_settings(values: Mapping[str, Any], where: str, limits: Limits) -> None:
    """``check_text``'s ``verifier_settings``: the checks its verifier's Context gets when a claim
    is verified (``factdebate.nodes.check_text.state.verifier_context``), before anything is stored.

    Settings the verifier's Context lacks, its model fields, operator-only fields, sizes above
    the caps and out-of-range values are refused, naming ``verifier_settings.<field>``.
    """
    from factdebate.nodes.check_text.state import CheckTextContext, parse_settings

    where = f"{where} verifier_settings"
    try:
        settings = parse_settings(values.get("verifier_settings") or {})
    except ConfigError as exc:
        raise Refused("verifier_settings", f"{where}: {exc}", 422) from None
    if not settings:
        return
    default = default_of(next(f for f in fields(CheckTextContext) if f.name == "framework"))
    framework = str(values.get("framework") or default)
    if framework.strip().lower().replace("-", "_") == "check_text":
        raise Refused("framework", f"{where}: check_text cannot verify its own claims; set "
                      "framework to a debate framework, e.g. tool_mad", 422)
    try:
        framework = verifier_key(framework)  # the names and aliases the check_text graph takes
    except ConfigError as exc:
        raise Refused("framework", f"{where}: {exc}", 422) from None
    cls = context_class(framework)
    known = {f.name: f for f in fields(cls)}
    for name in settings:
        f = known.get(name)
        if name in _operator_anywhere() and (f is None or settings[name] != default_of(f)):
            raise Refused(f"verifier_settings.{name}", f"{where}: {name} is an operator-only "
                          "setting and cannot be set by a run; remove it")
        if f is None:
            raise Refused(f"verifier_settings.{name}", f"{where}: {name!r} is not a setting of "
                          f"{cls.__name__} ({framework}); its settings: "
                          f"{', '.join(sorted(run_fields(cls)))}", 422)
        if f.metadata.get("model"):
            raise Refused(f"verifier_settings.{name}", f"{where}: the model field {name!r} is "
                          "set with debater_model or judge_model of the text check instead")
    nested = {k: v for k, v in settings.items() if k != "verifier_settings"}
    try:  # checked in full now: the verifier itself sees them only after the claims' extraction
        check_settings(nested, where, framework, limits, stored=True)
    except Refused as exc:
        raise Refused(f"verifier_settings.{exc.field}", exc.detail, exc.status) from None


def check_config(config: Mapping[str, Any] | None, where: str,
                 limits: Limits | None = None) -> None:
    """A client's ``config``: ``recursion_limit`` at most the operator's cap."""
    if not config:
        return
    if not isinstance(config, Mapping):
        raise Refused("config", f"{where}: config must be an object; send a JSON object", 422)
    if "recursion_limit" not in config:
        return
    limits = limits or load_limits()
    value = config["recursion_limit"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Refused("recursion_limit", f"{where}: config.recursion_limit={value!r} is not a "
                      "positive integer", 422)
    if value > limits.recursion_limit:
        raise Refused("recursion_limit", f"{where}: config.recursion_limit={value} is above "
                      f"this server's cap of {limits.recursion_limit} ({RECURSION_ENV}); lower "
                      "it or leave it out")


def cap_recursion_limit(config: dict[str, Any], limits: Limits | None = None) -> None:
    """A run without ``recursion_limit`` gets the operator's cap (LangGraph's default: 10,007)."""
    limits = limits or load_limits()
    config.setdefault("recursion_limit", limits.recursion_limit)


def check_reserved_configurable(config: Mapping[str, Any] | None, where: str) -> None:
    """Refuse client-set ``configurable`` keys the server reserves for itself."""
    configurable = (config or {}).get("configurable") or {}
    for key in configurable:
        if str(key).startswith(RESERVED_CONFIGURABLE_PREFIXES):
            raise Refused(str(key), f"{where}: config.configurable.{key} is set by the server, "
                          "not by clients; remove it")


MAX_BREAKPOINTS = 64
"""Most node names one kind of breakpoint may name."""


def check_inner_breakpoints(configurable: Any, where: str, graph: str | None = None) -> None:
    """A ``configurable`` that carries the inner-breakpoint key itself (``BREAKPOINTS_KEY`` of
    ``factdebate.graphs.exported``, which the graphs set from a run's ``interrupt_before``/
    ``interrupt_after``): ``{"before": [names], "after": [names]}``, each name a node inside a
    turn of ``graph`` (any graph when unknown: the shape only), plain or ``turn:``-qualified.

    Raises:
        Refused: 422 naming the key and what is wrong, quoting at most a short part of a value.
    """
    if not isinstance(configurable, Mapping) or BREAKPOINTS_KEY not in configurable:
        return
    value = configurable[BREAKPOINTS_KEY]
    field = f"config.configurable.{BREAKPOINTS_KEY}"
    if value is None:
        return
    if not isinstance(value, Mapping) or set(value) - {"before", "after"}:
        raise Refused(field, f"{where}: {field} must be an object with the lists 'before' and "
                      f"'after' of node names, not {shown(value)}; or name the nodes in "
                      "interrupt_before/interrupt_after", 422)
    inner = _inner_nodes(graph) if graph else None
    for kind in ("before", "after"):
        names = value.get(kind)
        if names is None:
            continue
        if (not isinstance(names, list) or len(names) > MAX_BREAKPOINTS
                or not all(isinstance(n, str) and 0 < len(n) <= MAX_SHOWN_CHARS for n in names)):
            raise Refused(field, f"{where}: {field}.{kind} must be a list of at most "
                          f"{MAX_BREAKPOINTS} node names of at most {MAX_SHOWN_CHARS} characters, "
                          f"not {shown(names)}", 422)
        unknown = [n for n in names if inner is not None and n not in inner]
        if unknown and inner is not None:
            raise Refused(field, f"{where}: {field}.{kind} names node(s) inside no turn of "
                          f"{graph}: {', '.join(shown(n) for n in unknown[:5])}"
                          f"{f' and {len(unknown) - 5} more' if len(unknown) > 5 else ''}; "
                          f"its nodes inside turns: {', '.join(sorted(inner)) or 'none'}", 422)


@functools.cache
def _inner_nodes(graph: str) -> frozenset[str]:
    """The names of graph ``graph``'s nodes inside turns, plain and ``turn:``-qualified."""
    top, drawn = node_names(exported_graph(graph))
    inner = [n for n in drawn if n not in top and ":" in n]
    return frozenset({*inner, *(n.rsplit(":", 1)[-1] for n in inner)})


def check_run_kwargs(kwargs: Mapping[str, Any], graph: str | None = None) -> None:
    """A run's settings, as langgraph-api hands them to ``threads.create_run``.

    ``kwargs["context"]`` is what reaches the graph: the client's ``context``, or a copy of its
    ``config.configurable`` when it sent no context (langgraph-api ``create_valid_run``).
    """
    limits = load_limits()
    check_config(kwargs.get("config"), "run", limits)
    check_settings(kwargs.get("context"), "run context", graph, limits)
    configurable = (kwargs.get("config") or {}).get("configurable") or {}
    check_settings(configurable, "run config.configurable", graph, limits)
    check_inner_breakpoints(configurable, "run", graph)
    check_inner_breakpoints(kwargs.get("context"), "run context", graph)
    context = kwargs.get("context")
    check_unset_models({**configurable, **(context if isinstance(context, Mapping) else {})},
                       "run", graph)


def check_assistant(value: Mapping[str, Any]) -> None:
    """An assistant's stored settings (create and update)."""
    limits = load_limits()
    graph = value.get("graph_id") if value.get("graph_id") in FRAMEWORKS.names() else None
    check_config(value.get("config"), "assistant", limits)
    check_settings(value.get("context"), "assistant context", graph, limits, stored=True)
    check_reserved_configurable(value.get("config"), "assistant")
    check_settings((value.get("config") or {}).get("configurable"),
                   "assistant config.configurable", graph, limits, stored=True)
    check_inner_breakpoints((value.get("config") or {}).get("configurable"), "assistant", graph)
    check_inner_breakpoints(value.get("context"), "assistant context", graph)


def check_cron_payload(payload: Mapping[str, Any] | None) -> None:
    """A cron's run payload (create and update)."""
    limits = load_limits()
    payload = payload or {}
    graph = graph_of(payload.get("assistant_id"))
    check_config(payload.get("config"), "cron", limits)
    check_settings(payload.get("context"), "cron context", graph, limits, stored=True)
    config = dict(payload.get("config") or {})
    configurable = {k: v for k, v in (config.get("configurable") or {}).items()
                    if k != "cron_id"}  # langgraph-api stamps cron_id itself before the check
    check_reserved_configurable({"configurable": configurable}, "cron")
    check_settings(configurable, "cron config.configurable", graph, limits, stored=True)
    check_inner_breakpoints(configurable, "cron", graph)
    check_inner_breakpoints(payload.get("context"), "cron context", graph)
