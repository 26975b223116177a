"""Normalising a server run before it starts (called from a ``@auth.on.threads.create_run`` handler).

* ``complete_run_input``: a LangGraph input writes only the keys it carries, so on a thread that
  already verified a claim an omitted ``options``/``documents``/``exclude_titles``/``task`` would
  keep the previous claim's value. Every new input is completed with ``None`` for the optional
  keys it lacks (the CLI and evaluation runner do the same through ``complete_input``); the first
  node of every graph resets the rest of the per-claim state.
* ``add_model_metadata``: the run's model specs as top-level run metadata (``model_debater``,
  ``model_judge`` ...), so LangSmith traces of server runs can be filtered by model like CLI runs.
  Credentials inside a URL in a spec are masked (``mask_url``): run metadata goes into traces.

* ``check_breakpoints``: a run's ``interrupt_before``/``interrupt_after`` must name nodes of its
  graph as Studio draws them (``get_graph(xray=True)``: nodes inside turns too, by plain or
  ``turn:``-qualified name, graphs/exported.py) or ``"*"``; an unknown name is refused (422, the
  graph's nodes listed) before the run is created, instead of failing or being ignored later.
  Names are strings of at most ``MAX_SHOWN_CHARS`` characters, at most ``MAX_BREAKPOINTS`` of
  them (a refusal quotes a cut value, never a client's whole value); the inner-breakpoint key a
  client puts in ``config.configurable`` itself gets the same checks
  (``factdebate.server.policy.check_inner_breakpoints``, also for assistants and crons).

The handler mutates the ``RunsCreate`` value in place (langgraph-api stores the run from it after
the handler returns). Wiring, in server/auth.py::

    @auth.on.threads.create_run
    async def on_run(ctx, value):
        check_breakpoints(value, graph_of(value.get("assistant_id")))
        complete_run_input(value)
        add_model_metadata(value)
"""

from __future__ import annotations

from typing import Any

from factdebate.core.context import Context, mask_url
from factdebate.core.errors import ConfigError
from factdebate.core.state import complete_input
from factdebate.graphs.exported import split_breakpoints
from factdebate.graphs.registry import exported_graph
from factdebate.server.policy import (
    MAX_BREAKPOINTS,
    MAX_SHOWN_CHARS,
    Refused,
    check_inner_breakpoints,
    shown,
)


def check_breakpoints(value: dict[str, Any], graph_id: str | None) -> None:
    """Refuse (``Refused``, 422) breakpoints naming a node graph ``graph_id`` does not draw.

    Runs of other assistants' graphs (``graph_id`` None) are checked when the run starts
    (``DebateGraph.astream`` raises the same ``ConfigError``).
    """
    kwargs = value.get("kwargs") or {}
    for kind in ("interrupt_before", "interrupt_after"):
        names = kwargs.get(kind)
        listed = [names] if isinstance(names, str) else names
        if names is not None and (
                not isinstance(listed, list) or len(listed) > MAX_BREAKPOINTS
                or not all(isinstance(n, str) and 0 < len(n) <= MAX_SHOWN_CHARS for n in listed)):
            raise Refused(kind, f"{kind} must be '*' or a list of at most {MAX_BREAKPOINTS} node "
                          f"names of at most {MAX_SHOWN_CHARS} characters, not {shown(names)}",
                          status=422)
        if graph_id is None:
            continue
        try:
            split_breakpoints(exported_graph(graph_id), names, kind)
        except ConfigError as exc:
            raise Refused(kind, str(exc), status=422) from None
    config = kwargs.get("config")
    check_inner_breakpoints(config.get("configurable") if isinstance(config, dict) else None,
                            "run", graph_id)


def complete_run_input(value: dict[str, Any]) -> None:
    """Fill the optional input keys of a run's new input (a dict with a claim) with ``None``."""
    kwargs = value.get("kwargs") or {}
    item = kwargs.get("input")
    if isinstance(item, dict) and "claim" in item:
        kwargs["input"] = complete_input(item)


def add_model_metadata(value: dict[str, Any]) -> None:
    """Add ``model_<role>`` keys for the models the run's context names (defaults included)."""
    context = (value.get("kwargs") or {}).get("context") or {}
    debater = context.get("debater_model") or Context().debater_model
    specs = {"model_debater": mask_url(str(debater))}
    for key, spec in context.items():
        if key.endswith("_model") and key != "debater_model" and isinstance(spec, str):
            specs[f"model_{key.removesuffix('_model')}"] = mask_url(spec or str(debater))
    metadata = value.get("metadata")
    if isinstance(metadata, dict):  # langgraph-api merges this very dict into the run's metadata
        metadata.update(specs)
