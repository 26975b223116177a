"""Where an item runs: in process (``run_graph`` + SQLite checkpoints) or on a LangGraph server.

Both return the result object of ``factdebate.run.claims.result_object``, so results rows look the
same either way. One thread per item, named ``<run id>:<item id>`` (a UUID5 of it on the server,
which requires UUID thread ids); rerunning an item resumes its thread from the last checkpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any, Protocol

import httpx

from factdebate.core.context import Context, mask_url, operator_fields, run_fields
from factdebate.core.errors import BackendUnavailableError, ConfigError
from factdebate.core.retry import wait_for_admission
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

    async def discard(self, thread_id: str) -> None:
        """Delete the item's thread: its next run starts over (``eval --retry-errors`` of a
        ``ToolFault`` row, whose finished thread would otherwise be read back as it is)."""
        await self.checkpointer.adelete_thread(thread_id)


class ServerRunError(RuntimeError):
    """A run on the LangGraph server ended in an error, or the server broke a limit of the item
    (its deadline, the reply size cap): the item's row is an error (``--resume --retry-errors``
    runs it again)."""


class ServerAdmissionError(ServerRunError):
    """The server kept refusing to start an item's run (its per-user run limit) for the whole
    wait: already retried, so the item runner's rate-limit retries leave it alone."""


class ReplyTooLargeError(Exception):
    """A server reply passed ``FACTDEBATE_EVAL_MAX_REPLY_BYTES``. Not an ``httpx`` error:
    langgraph_sdk reconnects after those, and a too large reply must not be asked for again."""

    def __init__(self, url: str, limit: int, declared: int | None = None) -> None:
        self.url, self.limit = url, limit
        size = f"declared {declared:,} bytes" if declared is not None else "kept sending"
        super().__init__(f"{mask_url(url)} {size}, more than the reply size cap of {limit:,} "
                         f"bytes ({REPLY_BYTES_ENV})")


ADMISSION_WAIT_ENV = "FACTDEBATE_EVAL_ADMISSION_WAIT_S"
RATE_LIMIT_WAIT_S = 900.0
"""How long one item waits in total for the server to admit its run (429: the user's concurrent
runs are at the server's ``FACTDEBATE_MAX_RUNS_PER_USER``) before its row is an error;
``$FACTDEBATE_EVAL_ADMISSION_WAIT_S`` sets it."""
DEADLINE_ENV = "FACTDEBATE_EVAL_ITEM_DEADLINE_S"
ITEM_DEADLINE_S = 1800.0
"""How long one item's requests to the server (thread, state, the run and its reply) may take in
all, the admission wait not counted; ``$FACTDEBATE_EVAL_ITEM_DEADLINE_S`` sets it."""
REPLY_BYTES_ENV = "FACTDEBATE_EVAL_MAX_REPLY_BYTES"
MAX_REPLY_BYTES = 64 * 2**20
"""The largest reply read from the server (decoded bytes; a final state is well under 1 MB);
``$FACTDEBATE_EVAL_MAX_REPLY_BYTES`` sets it."""
SERVER_TIMEOUT = httpx.Timeout(connect=5.0, read=300.0, write=300.0, pool=5.0)
"""Per-request timeouts (langgraph_sdk's defaults): ``read`` bounds a silence within a reply."""


def eval_limit(name: str, default: float, *, integer: bool = False) -> float:
    """A positive limit of ``eval --server`` from the environment variable ``name``.

    Raises:
        ConfigError: The value is not a number above 0 (naming the variable).
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = -1
    if not value > 0 or value == float("inf"):
        kind = "a whole number" if integer else "a number"
        raise ConfigError(f"{name}={raw!r} is not a valid limit", f"set it to {kind} above 0")
    return value


class _CappedStream(httpx.AsyncByteStream):
    """A reply's decoded bytes, refused once they pass ``limit`` (nothing further is read)."""

    def __init__(self, response: httpx.Response, limit: int, url: str) -> None:
        self.response, self.limit, self.url = response, limit, url

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.response.aiter_bytes():
            seen += len(chunk)
            if seen > self.limit:
                raise ReplyTooLargeError(self.url, self.limit)
            yield chunk

    async def aclose(self) -> None:
        await self.response.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx transport of :class:`ServerExecutor`: every reply is read as a stream with a byte
    cap, so a huge or endless reply is refused after ``limit`` bytes instead of read whole.

    The reply's content encoding is decoded here (the cap counts what would be kept in memory,
    not the compressed bytes on the wire); a declared ``Content-Length`` above the cap is refused
    before any of the body is read.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.inner = httpx.AsyncHTTPTransport(retries=5)  # connection retries, as langgraph_sdk

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        url = str(request.url)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit \
                and "content-encoding" not in response.headers:
            await response.aclose()
            raise ReplyTooLargeError(url, self.limit, int(declared))
        headers = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length")]
        return httpx.Response(response.status_code, headers=headers, request=request,
                              stream=_CappedStream(response, self.limit, url),
                              extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


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


def _refusal(exc: BaseException) -> str:
    """The server's reason for a 429, one line: langgraph_sdk's ``RateLimitError`` message, or
    the reply body ``runs.wait`` attaches to its ``httpx.HTTPStatusError`` as a note."""
    text = getattr(exc, "message", None)
    for note in getattr(exc, "__notes__", None) or []:
        try:
            body = json.loads(note)
        except ValueError:
            body = note
        text = body.get("detail", body) if isinstance(body, dict) else body
    return mask_url(" ".join(str(text or exc).split())[:300])


def server_thread_id(thread_id: str) -> str:
    """The server's id of the item thread ``<run id>:<item id>`` (servers require UUIDs)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"factdebate:{thread_id}"))


class ServerExecutor:
    """Items as runs on a LangGraph server deployment, through ``langgraph_sdk``.

    The graph id is the framework name (as exported in ``langgraph.json``). The API key comes from
    ``api_key`` or ``$FACTDEBATE_API_KEY`` / ``$LANGGRAPH_API_KEY``.

    Each item is bounded (limits from the environment, see :func:`eval_limit`): the server's 429s
    are waited out for ``rate_limit_wait`` seconds in all (``FACTDEBATE_EVAL_ADMISSION_WAIT_S``),
    the item's requests may take ``deadline`` seconds (``FACTDEBATE_EVAL_ITEM_DEADLINE_S``, the
    admission wait not counted), a reply may hold ``max_reply_bytes``
    (``FACTDEBATE_EVAL_MAX_REPLY_BYTES``, :class:`CappedTransport`). Passing one is a
    :class:`ServerRunError` naming the server (credentials masked) and the limit.
    """

    def __init__(self, url: str, framework: str, prompt_version: str,
                 api_key: str | None = None) -> None:
        try:
            from langgraph_sdk import get_client
            from langgraph_sdk.client import LangGraphClient
        except ImportError as exc:  # an optional extra
            raise ConfigError("--server needs langgraph-sdk", "pip install 'factdebate[server]'") from exc
        key = api_key or os.environ.get("FACTDEBATE_API_KEY") or os.environ.get("LANGGRAPH_API_KEY")
        self.rate_limit_wait = eval_limit(ADMISSION_WAIT_ENV, RATE_LIMIT_WAIT_S)
        self.deadline = eval_limit(DEADLINE_ENV, ITEM_DEADLINE_S)
        self.max_reply_bytes = int(eval_limit(REPLY_BYTES_ENV, MAX_REPLY_BYTES, integer=True))
        # langgraph_sdk's own client supplies the headers (API key, user agent); the requests go
        # through an httpx client of the same settings whose transport caps every reply
        headers = get_client(url=url, api_key=key).http.client.headers
        self.client = LangGraphClient(httpx.AsyncClient(
            base_url=url, headers=headers, timeout=SERVER_TIMEOUT,
            transport=CappedTransport(self.max_reply_bytes)))
        self.url = url
        self.where = mask_url(url)
        self.framework = framework
        self.prompt_version = prompt_version

    async def check(self) -> None:
        """Fail early, with a remedy, when the server is down or does not serve the framework."""
        try:
            async with asyncio.timeout(min(self.deadline, SERVER_TIMEOUT.read or 300.0)):
                found = await self.client.assistants.search(graph_id=self.framework, limit=1)
        except Exception as exc:
            why = mask_url(f"{type(exc).__name__}: {exc}".strip().rstrip(":"))
            raise BackendUnavailableError(f"LangGraph server {self.where} is unreachable ({why})",
                                          "start it (langgraph dev) or check --server") from exc
        if not found:
            raise ConfigError(f"server {self.where} does not serve graph {self.framework!r}",
                              "add it to langgraph.json")

    async def index(self) -> Any:
        """The server's answer at its index route (``GET /factdebate/index``, the identity of the
        index its runs search: ``evaluation/index_identity.py``); None when the server has no such
        route (404: a deployment older than it). Sent with the same headers (API key) as the runs.

        Raises:
            BackendUnavailableError: The server does not answer, or answers with another error.
        """
        from factdebate.evaluation.index_identity import INDEX_ROUTE

        try:
            async with asyncio.timeout(min(self.deadline, SERVER_TIMEOUT.read or 300.0)):
                return await self.client.http.get(INDEX_ROUTE)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code == 404:
                return None
            why = f"{exc.response.status_code}: {_refusal(exc)}"
            raise BackendUnavailableError(
                f"LangGraph server {self.where} refused to name its index ({why})",
                "check --server and the API key (--server-api-key or FACTDEBATE_API_KEY)") from exc
        except Exception as exc:
            why = mask_url(f"{type(exc).__name__}: {exc}".strip().rstrip(":"))
            raise BackendUnavailableError(f"LangGraph server {self.where} is unreachable ({why})",
                                          "start it (langgraph dev) or check --server") from exc

    async def _admitted_run(self, tid: str, timeout: asyncio.Timeout | None = None,
                            **kwargs: Any) -> Any:
        """``runs.wait``, asking again after ``Retry-After`` while the server answers 429.

        A server limits each user's pending and running runs (``FACTDEBATE_MAX_RUNS_PER_USER``,
        factdebate.server.auth); an ``eval --concurrency`` above that limit would otherwise turn
        every refused item into an error row. The wait is the project's admission policy
        (``factdebate.core.retry.wait_for_admission``); after ``rate_limit_wait`` seconds in all
        the item is an error that names the limit. The time waited does not count against the
        item's deadline (``timeout`` is moved on by it).
        """
        async def sleep(seconds: float) -> None:
            when = timeout.when() if timeout is not None else None
            if timeout is not None and when is not None:
                timeout.reschedule(when + seconds)
            await asyncio.sleep(seconds)

        def give_up(waited: float, refusal: BaseException) -> ServerAdmissionError:
            # the item runner's provider rate-limit retries (evaluation/items.py) must not start
            # this wait over: its own class, without the 429 chained
            return ServerAdmissionError(
                f"server {self.where} kept refusing the run of thread {tid} for {waited:.0f} s, "
                f"the admission wait limit of {self.rate_limit_wait:g} s ({ADMISSION_WAIT_ENV}): "
                f"{_refusal(refusal)}; lower --concurrency to the server's per-user limit, or "
                "eval --resume --retry-errors later")

        return await wait_for_admission(
            lambda: self.client.runs.wait(tid, self.framework, **kwargs),
            limit_s=self.rate_limit_wait, give_up=give_up, sleep=sleep)

    async def __call__(self, item: DebateInput, ctx: Context, *, thread_id: str,
                       config_extra: dict[str, Any]) -> dict[str, Any]:
        """Start or resume the item's server thread and wait for its final state."""
        tid = server_thread_id(thread_id)
        deadline = asyncio.timeout(self.deadline)
        try:
            async with deadline:
                values = await self._final_values(item, ctx, tid, thread_id, config_extra,
                                                  deadline)
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            raise ServerRunError(
                f"server {self.where} did not finish thread {tid} within the item deadline of "
                f"{self.deadline:g} s ({DEADLINE_ENV})") from exc
        except ReplyTooLargeError as exc:
            raise ServerRunError(f"server reply for thread {tid} refused: {exc}") from None
        except httpx.TimeoutException as exc:
            raise ServerRunError(
                f"server {self.where} sent nothing for {SERVER_TIMEOUT.read:g} s (thread {tid}, "
                f"{type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise ServerRunError(mask_url(
                f"server {self.where} failed on thread {tid} ({type(exc).__name__}: {exc})"
            )[:600]) from exc
        if not isinstance(values, dict) or "__error__" in values:
            error = values.get("__error__") if isinstance(values, dict) else values
            raise ServerRunError(f"server run of thread {tid} failed: {error}")
        return result_object(self.framework, values, ctx, thread_id=tid,
                             prompt_version=self.prompt_version)

    async def discard(self, thread_id: str) -> None:
        """Delete the item's server thread (if it exists): its next run starts over."""
        tid = server_thread_id(thread_id)
        try:
            await self.client.threads.delete(tid)
        except (httpx.HTTPStatusError, httpx.TransportError) as exc:
            if getattr(getattr(exc, "response", None), "status_code", None) == 404:
                return  # never created
            raise BackendUnavailableError(
                f"server {self.where} did not delete thread {tid} ({_refusal(exc)})",
                "rerun eval --resume --retry-errors once the server answers") from exc

    async def _final_values(self, item: DebateInput, ctx: Context, tid: str, thread_id: str,
                            config_extra: dict[str, Any], deadline: asyncio.Timeout) -> Any:
        """The thread's final state: created if new, run (or resumed) unless already finished."""
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
                tid, deadline, input=None if unfinished else dict(item),
                # operator-only fields (index, URLs, processes) are the server's own: a server
                # refuses a run that sets them (factdebate.server.policy)
                context=server_run_context(ctx),
                metadata=metadata, raise_error=False,
            )
        return values
