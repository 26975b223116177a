"""Configs of the model calls a run makes, merged with the run's own config once per call.

A model call inside a LangGraph node needs the node's config (its callback manager, which carries
LangGraph's ``messages`` stream handler and the trace's parent run; its tags and metadata) with
ours added on top (the usage tracker, the run's budget, role metadata). LangChain's way,
``merge_configs(ensure_config(), own)``, copies the node's callback manager five times (each
``ensure_config`` inside ``merge_configs`` copies the enclosing run's config again), and the
structured-output step then merged the result with the run's config once more
(``merge_configs({}, config)``): about 54 + 32 us of event-loop time per call, measured with
``timeit`` in a node's context (``factdebate bench floor`` runs 31 calls per Tool-MAD claim).

:func:`run_call_config` takes one copy of the enclosing run's config (``ensure_config()``: tags,
metadata and callback manager copied) and adds ours to that copy, as ``merge_configs`` would:
handlers added to the copied manager as inheritable, metadata last-writer-wins, tags as a sorted
set. The result is a :class:`MergedConfig`, which says so: a step that would merge a config with
the run's again (``core.models.structured``) takes a ``MergedConfig`` as it is, since merging it
again changes nothing (every key of the run's config is in it, with ours on top).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, merge_configs


class MergedConfig(dict):  # type: ignore[type-arg]
    """A ``RunnableConfig`` already merged with the config of the run it was made in.

    A plain ``dict`` subclass, so LangChain reads it as any config; :meth:`copy` keeps the class
    (``dict.copy`` would not), so a shallow copy with one key changed is still known as merged.
    """

    def copy(self) -> MergedConfig:  # type: ignore[override]
        """A shallow copy, still a ``MergedConfig``."""
        return MergedConfig(self)


def run_call_config(*, callbacks: Iterable[Any] = (), metadata: Mapping[str, Any] | None = None,
                    tags: Iterable[str] = ()) -> RunnableConfig:
    """The enclosing run's config (the LangGraph node's, read from LangChain's context) with
    ``callbacks`` added as inheritable handlers, ``metadata`` on top of its metadata, ``tags``
    added: what ``merge_configs(ensure_config(), own)`` gives, with one copy
    of the run's config instead of five (module doc). A :class:`MergedConfig` at run time (typed as
    the ``RunnableConfig`` it is read as)."""
    config: dict[str, Any] = dict(ensure_config())  # tags, metadata, callbacks: fresh copies
    handlers = list(callbacks)
    if handlers:
        current = config.get("callbacks")
        if current is None:
            config["callbacks"] = handlers
        elif isinstance(current, list):
            config["callbacks"] = current + handlers
        else:  # a manager: ensure_config copied it, so adding to it changes no one else's
            for handler in handlers:
                current.add_handler(handler, inherit=True)
    if metadata:
        config["metadata"] = {**(config.get("metadata") or {}), **metadata}
    extra_tags = list(tags)
    if extra_tags:
        config["tags"] = sorted(set(config.get("tags") or []) | set(extra_tags))
    return MergedConfig(config)  # type: ignore[return-value]


def with_metadata(config: RunnableConfig | None, metadata: Mapping[str, Any],
                  run_name: str | None = None) -> RunnableConfig:
    """``config`` with ``metadata`` on top of its metadata (and ``run_name``): a shallow copy for a
    :class:`MergedConfig` (still merged); any other config is merged with the run's as
    ``merge_configs(config, {"metadata": ..., "run_name": ...})`` does."""
    if isinstance(config, MergedConfig):
        out = config.copy()
        out["metadata"] = {**(out.get("metadata") or {}), **metadata}
        if run_name is not None:
            out["run_name"] = run_name
        return out  # type: ignore[return-value]
    extra: RunnableConfig = {"metadata": dict(metadata)}
    if run_name is not None:
        extra["run_name"] = run_name
    return merge_configs(config, extra)


def merged_with_run(config: RunnableConfig | None) -> RunnableConfig:
    """``config`` merged with the enclosing run's config (``merge_configs({}, config)``), or
    ``config`` itself when it is a :class:`MergedConfig` (merging it again changes nothing)."""
    if isinstance(config, MergedConfig):
        return config  # type: ignore[return-value]
    return merge_configs({}, config)
