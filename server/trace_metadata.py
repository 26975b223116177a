"""A server run's trace looks like a CLI run's: the same root run name and metadata.

The CLI names a run's root trace ``<framework>:verify`` (``check_text:check`` for the text check)
and gives it ``framework``, ``prompt_version``, ``git_sha``, ``fd_context`` (the run's settings,
credentials masked) and one ``model_<role>`` key per resolved role (``factdebate.run.engine``).
:func:`add_trace_metadata`, called from the ``threads.create_run`` auth handler
(``factdebate.server.auth``), sets the same on a server run: ``config.run_name`` and keys of the
run's ``metadata``, which langgraph-api passes to the graph as its run config, so LangSmith shows
server and CLI traces alike (without it the root is the graph's name, e.g. ``Tool-MAD``).

The framework is the graph behind the run's assistant: a graph's own assistant (id or name), or
the graph of an assistant a client made, read with the server's in-process client together with
the settings it stores (they are part of every run of it). The run's settings are built into that
framework's Context as the run will (the operator's environment fills what the run leaves out);
settings no Context accepts leave the models out: the run itself fails on them before any work.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from factdebate.core.errors import FactDebateError
from factdebate.core.settings import masked_context
from factdebate.graphs.registry import FRAMEWORKS, context_class
from factdebate.prompts import load_prompts
from factdebate.run.claims import git_sha, model_metadata
from factdebate.server.policy import graph_of

log = logging.getLogger("factdebate.server")


def run_name(framework: str) -> str:
    """The root run name the CLI gives ``framework``'s runs."""
    return "check_text:check" if framework == "check_text" else f"{framework}:verify"


def _settings(source: Mapping[str, Any] | None) -> dict[str, Any]:
    """``configurable`` then ``context`` of a run or an assistant (the context wins)."""
    source = source or {}
    configurable = (source.get("config") or {}).get("configurable") or {}
    context = source.get("context") or {}
    return {**(configurable if isinstance(configurable, Mapping) else {}),
            **(context if isinstance(context, Mapping) else {})}


async def _assistant(assistant_id: object) -> tuple[str | None, dict[str, Any]]:
    """The graph and stored settings of an assistant a client made (None, {} if unreadable)."""
    from factdebate.server.loopback import loopback as _loopback

    try:
        assistant = await _loopback().assistants.get(str(assistant_id))
    except Exception as exc:  # noqa: BLE001  # the trace keeps langgraph-api's own name then
        log.warning("cannot read assistant %s for its trace metadata: %s", assistant_id, exc)
        return None, {}
    graph = assistant.get("graph_id")
    return (graph if graph in FRAMEWORKS.names() else None), _settings(assistant)


def trace_metadata(framework: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The CLI's root-run metadata of a ``framework`` run with ``settings``."""
    cls = context_class(framework)
    names = {f.name for f in fields(cls)}
    metadata: dict[str, Any] = {"framework": framework}
    if git_sha():  # "" outside a checkout (an image built without .git)
        metadata["git_sha"] = git_sha()
    try:
        ctx = cls(**{k: v for k, v in settings.items() if k in names})
        metadata["prompt_version"] = load_prompts(ctx.prompt_set).version
    except FactDebateError:  # the run fails on these settings when it starts, naming them
        return metadata
    return {**metadata, "fd_context": masked_context(ctx), **model_metadata(ctx)}


async def add_trace_metadata(value: dict[str, Any]) -> None:
    """Set the CLI's root run name and metadata on a ``threads.create_run`` value, in place."""
    assistant_id = value.get("assistant_id")
    framework, stored = graph_of(assistant_id), {}
    if framework is None and assistant_id:
        framework, stored = await _assistant(assistant_id)
    if framework is None:
        return
    kwargs = value.get("kwargs") or {}
    settings = {**stored, **_settings(kwargs)}
    metadata = value.get("metadata")
    if isinstance(metadata, dict):  # langgraph-api merges this very dict into the run's metadata
        # a thread: the first git_sha() runs git, building a Context may read files
        metadata.update(await asyncio.to_thread(trace_metadata, framework, settings))
    if isinstance(kwargs.get("config"), dict):
        kwargs["config"].setdefault("run_name", run_name(framework))
