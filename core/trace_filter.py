"""LangSmith traces through the secret filter: every run the process posts is redacted first.

A traced run records what a provider said before any project error is made: a model call's run
holds the raw exception text in its ``error`` field (a 401 body that repeats ``Authorization:
Bearer sk-...`` or ``Basic base64(user:password)``), and inputs, outputs, metadata, events and
``extra`` hold whatever passed through. :class:`RedactingClient` is a ``langsmith.Client`` that
hands all of it to the project's one secret filter (:func:`factdebate.core.secrets_filter.redact`)
before the run is queued for sending:

* inputs, outputs, the error and the metadata through the client's ``anonymizer`` (langsmith
  applies it to each after serialising them to JSON, on every way a run is sent);
* the run's other fields (``name``, ``error``, ``extra``, ``events``, ``tags``, ``serialized``)
  in the client's public ``create_run``/``update_run``, which every LangChain tracer and
  ``RunTree`` posts through.

:func:`install` makes a :class:`RedactingClient` the process's LangSmith client
(``langsmith.configure``), the one LangChain's tracers (``LangChainTracer``, tracing by
``LANGSMITH_TRACING``) and ``@traceable`` take when given none. Every graph run calls it before it
starts (``factdebate.run.engine.run_graph`` for the CLI and ``eval``; the exported graphs'
``astream`` for the LangGraph server, Studio and Python users), and clients the project makes
itself are :func:`trace_client` ones. It does nothing while tracing is off, so no client (and no
background thread) is made then.
"""

from __future__ import annotations

import threading
from typing import Any

from langsmith import Client, configure
from langsmith.utils import tracing_is_enabled

from factdebate.core.secrets_filter import redact_value

_OTHER_FIELDS = ("name", "error", "extra", "events", "tags", "serialized")
"""Run fields the ``anonymizer`` does not see as a whole (it sees ``extra``'s metadata only)."""


def redacted(data: Any) -> Any:
    """``data`` (a JSON value: what langsmith hands an ``anonymizer``) with every secret removed."""
    return redact_value(data)


def _redact_fields(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: redact_value(v) if k in _OTHER_FIELDS and v is not None else v
            for k, v in kwargs.items()}


class RedactingClient(Client):
    """A ``langsmith.Client`` that posts no secret the process knows (module doc)."""

    def __init__(self, **kwargs: Any) -> None:
        """``langsmith.Client(**kwargs)`` with the secret filter as its ``anonymizer``."""
        super().__init__(**{"anonymizer": redacted, **kwargs})

    def create_run(self, name: str, inputs: dict[str, Any], run_type: Any,
                   **kwargs: Any) -> None:
        """``Client.create_run`` with the run's name, error, extra, events, tags and serialized
        form redacted (inputs through the anonymizer)."""
        return super().create_run(redact_value(name), inputs, run_type, **_redact_fields(kwargs))

    def update_run(self, run_id: Any, **kwargs: Any) -> None:
        """``Client.update_run`` with the same fields redacted as :meth:`create_run`."""
        return super().update_run(run_id, **_redact_fields(kwargs))


def trace_client(**kwargs: Any) -> RedactingClient:
    """A LangSmith client for the project's own use (datasets, experiments, tracers)."""
    return RedactingClient(**kwargs)


_installed = False
_lock = threading.Lock()


def install() -> None:
    """Make a :class:`RedactingClient` the process's LangSmith client, once, when tracing is on."""
    global _installed
    if _installed or not tracing_is_enabled():
        return
    with _lock:
        if not _installed:
            configure(client=trace_client())
            _installed = True
