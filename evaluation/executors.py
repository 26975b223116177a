"""Where an item runs: in process (``run_graph`` + SQLite checkpoints) or on a LangGraph server.

Both return the result object of ``factdebate.run.claims.result_object``, so results rows look the
same either way. One thread per item, named ``<run id>:<item id>`` (a UUID5 of it on the server,
which requires UUID thread ids); rerunning an item resumes its thread from the last checkpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import uuid
from typing import Any, Protocol

from factdebate.core.context import Context, operator_fields, run_fields
from factdebate.core.errors import BackendUnavailableError, ConfigError
from factdebate.core.state import DebateInput
from factdebate.run.claims import result_object
from factdebate.run.engine import run_graph


class Executor(Protocol):
    """Runs one item's thread (start or resume) and returns its result object."""

    async def __call__(self, item: DebateInput, ctx: Context, *, thread_id: str,
                       config_extra: dict[str, Any]) -> dict[str, Any]: ...


class LocalExecutor:
    """In-process graph with the run's checkpointer (``OUT/checkpoints.sqlite`` or PostgreSQL)
    and its memory store (MERMAID's evidence memory, ``evaluation/memory_store.py``; None = the
    run uses no memory)."""

    def __init__(self, framework: str, checkpointer: Any, store: Any = None) -> None:
        self.framework = framework
        self.checkpointer = checkpointer
        self.store = store

    async def __call__(self, item: DebateInput, ctx: Context, *, thread_id: str,
                       config_extra: dict[str, Any]) -> dict[str, Any]:
        """``run_graph`` resuming the item's thread if it has a checkpoint."""
        return await run_graph(self.framework, item, ctx, checkpointer=self.checkpointer,
                               thread_id=thread_id, resume="auto", config_extra=config_extra,
                               store=self.store)


class ServerRunError(RuntimeError):
    """A run on the LangGraph server ended in an error."""


class ServerAdmissionError(ServerRunError):
    """The server kept refusing to start an item's run (its per-user run limit) for the whole
    wait: already retried, so the item runner's rate-limit retries leave it alone."""


RATE_LIMIT_WAIT_S = 900.0
"""How long one item waits in total for the server to admit its run (429: the user's concurrent
runs are at the server's ``FACTDEBATE_MAX_RUNS_PER_USER``) before its row is an error."""
RETRY_AFTER_BOUNDS = (1.0, 60.0)
"""A server's ``Retry-After`` is honoured within these bounds (seconds; 5 when it sends none)."""


def retry_after(exc: BaseException, default: float = 5.0) -> float:
    """Seconds to wait before asking again, from a 429's ``Retry-After`` (seconds form)."""
    response = getattr(exc, "response", None)
    raw = response.headers.get("retry-after") if response is not None else None
    try:
        delay = float(raw) if raw is not None else default
    except ValueError:  # the HTTP-date form: not sent by this project's server
        delay = default
    low, high = RETRY_AFTER_BOUNDS
    return min(max(delay, low), high)


def server_run_context(ctx: Context) -> dict[str, Any]:
    """The run fields of ``ctx`` for a server run; operator-only settings given here are refused.

    A server refuses a run that sets an operator-only field (index, URLs, processes, backends:
    ``factdebate.server.policy``); dropping one silently would run the items with settings the user
    did not ask for, so a value that differs from the local default is an error naming the field.
    """
    local_default = type(ctx)()
    for name in sorted(operator_fields(type(ctx))):
        if getattr(ctx, name) != getattr(local_default, name):
            raise ConfigError(
                f"--set {name} is an operator setting: runs on a LangGraph server use the server's own",
                "drop it, or set it where the server runs (its environment), or run without --server",
            )
    return {k: v for k, v in dataclasses.asdict(ctx).items() if k in run_fields(type(ctx))}


class ServerExecutor:
    """Items as runs on a LangGraph server deployment, through ``langgraph_sdk``.

    The graph id is the framework name (as exported in ``langgraph.json``). The API key comes from
    ``api_key`` or ``$FACTDEBATE_API_KEY`` / ``$LANGGRAPH_API_KEY``.
    """

    def __init__(self, url: str, framework: str, prompt_version: str,
                 api_key: str | None = None) -> None:
        try:
            from langgraph_sdk import get_client
        except ImportError as exc:  # an optional extra
            raise ConfigError("--server needs langgraph-sdk", "pip install 'factdebate[server]'") from exc
        key = api_key or os.environ.get("FACTDEBATE_API_KEY") or os.environ.get("LANGGRAPH_API_KEY")
        self.client = get_client(url=url, api_key=key)
        self.url = url
        self.framework = framework
        self.prompt_version = prompt_version
        self.rate_limit_wait = RATE_LIMIT_WAIT_S

    async def check(self) -> None:
        """Fail early, with a remedy, when the server is down or does not serve the framework."""
        try:
            found = await self.client.assistants.search(graph_id=self.framework, limit=1)
        except Exception as exc:
            raise BackendUnavailableError(f"LangGraph server {self.url} is unreachable ({exc})",
                                          "start it (langgraph dev) or check --server") from exc
        if not found:
            raise ConfigError(f"server {self.url} does not serve graph {self.framework!r}",
                              "add it to langgraph.json")

    async def _admitted_run(self, tid: str, **kwargs: Any) -> Any:
        """``runs.wait``, asking again after ``Retry-After`` while the server answers 429.

        A server limits each user's pending and running runs (``FACTDEBATE_MAX_RUNS_PER_USER``,
        factdebate.server.auth); an ``eval --concurrency`` above that limit would otherwise turn
        every refused item into an error row. A 429 is given before the run exists, so asking
        again cannot start it twice. After ``RATE_LIMIT_WAIT_S`` in total the item is an error
        that names the limit (``eval --resume`` runs it again).
        """
        from langgraph_sdk.errors import RateLimitError

        waited = 0.0
        while True:
            try:
                return await self.client.runs.wait(tid, self.framework, **kwargs)
            except RateLimitError as exc:
                refusal = str(getattr(exc, "message", None) or exc)
                delay = retry_after(exc) * random.uniform(1.0, 1.5)  # waiters do not return at once
            if waited + delay > self.rate_limit_wait:
                break
            await asyncio.sleep(delay)
            waited += delay
        # the item runner's provider rate-limit retries (evaluation/items.py) must not start this
        # wait over: its own class, raised outside the handler (no chained 429)
        raise ServerAdmissionError(
            f"server {self.url} kept refusing the run of thread {tid} for {waited:.0f} s: "
            f"{refusal}; lower --concurrency to the server's per-user limit, or eval --resume later")

    async def __call__(self, item: DebateInput, ctx: Context, *, thread_id: str,
                       config_extra: dict[str, Any]) -> dict[str, Any]:
        """Start or resume the item's server thread and wait for its final state."""
        tid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"factdebate:{thread_id}"))
        metadata = {**config_extra.get("metadata", {}), "fd_thread": thread_id}
        await self.client.threads.create(thread_id=tid, if_exists="do_nothing",
                                         metadata={"fd_thread": thread_id})
        state = await self.client.threads.get_state(tid)
        values = state.get("values") or {}
        # "tasks" too: a step whose tasks all saved writes before a crash is not yet applied
        # (factdebate.run.claims.unfinished)
        unfinished = bool(state.get("next") or state.get("tasks"))
        if unfinished or not values or "stopped_by" not in values:
            values = await self._admitted_run(
                tid, input=None if unfinished else dict(item),
                # operator-only fields (index, URLs, processes) are the server's own: a server
                # refuses a run that sets them (factdebate.server.policy)
                context=server_run_context(ctx),
                metadata=metadata, raise_error=False,
            )
        if not isinstance(values, dict) or "__error__" in values:
            error = values.get("__error__") if isinstance(values, dict) else values
            raise ServerRunError(f"server run of thread {tid} failed: {error}")
        return result_object(self.framework, values, ctx, thread_id=tid,
                             prompt_version=self.prompt_version)
