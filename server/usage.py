"""Bytes per user on the LangGraph server: a byte quota, a bounded thread history, a store TTL.

Every byte a client makes the server keep is charged to the client's identity, per object, and a
write that would take the user past ``FACTDEBATE_MAX_BYTES_PER_USER`` (default 100 MiB, ``0`` = no
limit) is refused with 403 naming the user's bytes, the limit and the variable. What is charged is
the serialized JSON a request stores, measured where the auth handlers see it
(:mod:`factdebate.server.auth`), or as the request's body where they do not
(:class:`RequestInfo`, filled by :mod:`factdebate.server.guard`):

* a thread: its metadata when created (``POST /threads``: the whole body, ``supersteps``
  included), every ``PATCH`` of its metadata, every state write (``POST /threads/{id}/state``, a
  bulk update) and the input, command, config, context and metadata of every run on it; a copy is
  charged what the source is charged;
* a thread's stored history: the bytes its checkpoints hold in the in-memory checkpointer (the
  checkpoints, the channel values they reference, their pending writes, all namespaces), measured
  after each pruning (:func:`bound_history`) and charged as the thread's ``history`` object;
* a stateless run that keeps its thread (``on_completion: keep``, a cron's run): the same, charged
  to the run (the runtime picks the thread's id after the handler) and freed with the thread; a
  stateless run that deletes its thread keeps nothing and is not charged;
* an assistant: its request (config, context, metadata, name, description), again for every
  update (versions are kept); a cron: its payload (which holds its metadata: charged once), again
  for every update; a cron on a thread is freed with the thread (the runtime deletes it then);
* a store item: its namespace, key and value (a put replaces the item, and its charge).

Deleting a thread, assistant, cron or store item frees its charge, with the objects that go with
it (:meth:`ByteLedger.link`: a thread's history, its crons, the stateless runs that made it); so
does the server's store TTL (:func:`sweep_store`). After a user deleted everything, the user's
charge is 0. Charges only grow otherwise (a run's input stays charged to its thread until the
thread is deleted), so the count errs towards the user's limit, never past it. The ledger lives in
the server process: on a user's first request after a start it is measured from what the server
holds (threads' metadata, assistants, crons, store items; a thread's history is measured again at
its next write); several replicas count separately, as the other per-user limits do. What a graph
computes (answers, evidence, MERMAID's memory) is counted through the history bound.

**History.** The in-memory runtime of ``langgraph dev`` keeps every checkpoint of a thread (its
checkpointer TTL and the threads prune API's ``keep_latest`` are not implemented there). Before
each write to a thread (a state update, a run) its oldest checkpoints are removed so that at most
``FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD`` (default 100, ``0`` = keep all) remain across all its
namespaces after a state update - a subgraph's namespace (Tool-MAD's visible debater turns) leaves
with the top-level checkpoint that scheduled it (:mod:`factdebate.patches.inmem_history`); a run
adds its own steps on top, and the next write prunes them again (:func:`bound_history`). A busy
thread is left alone. A run or state update from a checkpoint that is not in the thread's history
(pruned, or never there) is refused with 404 naming the checkpoint (:func:`missing_checkpoint`):
LangGraph would otherwise start from empty state. Deployments on the LangGraph Platform runtime
get ``langgraph.json``'s ``checkpointer.ttl`` (``keep_latest``) instead; the pruning applies only
to the in-memory checkpointer.

**Store TTL.** Store items not written for ``FACTDEBATE_STORE_TTL_MINUTES`` (default 43,200:
30 days; ``0`` = keep forever) are deleted by a sweep every ``FACTDEBATE_STORE_SWEEP_MINUTES``
(default 60) that the server's lifespan starts; the in-memory store of ``langgraph dev`` ignores
``langgraph.json``'s ``store.ttl``, which the Platform runtime applies.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime as dt
import functools
import json
import logging
import re
import threading
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from factdebate import patches
from factdebate.core.json_input import loads

BYTES_ENV = "FACTDEBATE_MAX_BYTES_PER_USER"
DEFAULT_BYTES_PER_USER = 100 * 1_048_576
"""100 MiB: 10,000 threads (the default thread quota) of 10 KiB of claims and settings each."""
HISTORY_ENV = "FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD"
DEFAULT_CHECKPOINTS_PER_THREAD = 100
"""About three runs of the largest default debate (~35 steps each), or 100 state updates."""
STORE_TTL_ENV = "FACTDEBATE_STORE_TTL_MINUTES"
DEFAULT_STORE_TTL_MINUTES = 43_200.0
STORE_SWEEP_ENV = "FACTDEBATE_STORE_SWEEP_MINUTES"
DEFAULT_STORE_SWEEP_MINUTES = 60.0

log = logging.getLogger("factdebate.server")


def json_bytes(value: Any) -> int:
    """The size of ``value`` as compact UTF-8 JSON (what a store or checkpoint keeps of it)."""
    text = json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8"))


# --- the request being served ------------------------------------------------------------------
_STATE_WRITE = re.compile(r"^/threads/([^/]+)/state/?$")
_THREAD = re.compile(r"^/threads/([^/]+)/?$")
_THREAD_CREATE = re.compile(r"^/threads/?$")


@dataclass
class RequestInfo:
    """What the auth handlers cannot see of a request: its route and the body bytes read so far
    (the route has read the whole body by the time it calls a handler), and the body itself of a
    state update (``POST /threads/{id}/state``: the checkpoint it forks from is not passed to the
    handlers) and of a thread create (``POST /threads``: whether the client named the thread's
    id, or langgraph-api made a new one)."""

    method: str
    path: str
    read: int = 0
    charged: set[str] = field(default_factory=set)
    """Ledger keys this request has charged (one request charges an object once)."""
    body: bytearray | None = None
    """The body of a state update or a thread create (None for every other request: nothing
    else is kept)."""

    def __post_init__(self) -> None:
        """Keep the body of a state update or a thread create only."""
        if self.method == "POST" and (_STATE_WRITE.match(self.path)
                                      or _THREAD_CREATE.match(self.path)):
            self.body = bytearray()

    def received(self, chunk: bytes) -> None:
        """Count one chunk of the body (and keep it, for a state update)."""
        self.read += len(chunk)
        if self.body is not None:
            self.body.extend(chunk)

    def json_body(self) -> Any:
        """The kept body as JSON (None: none kept, or not JSON)."""
        if not self.body:
            return None
        try:
            return loads(bytes(self.body))  # nested past the decoder's limit: not JSON here
        except ValueError:
            return None

    def names_thread_id(self) -> bool:
        """Whether this thread create's body names the thread's id (True when it cannot tell:
        another route, or a body that is not a JSON object): False means langgraph-api made a
        new id, which no thread has."""
        if self.method != "POST" or not _THREAD_CREATE.match(self.path):
            return True
        if self.body is not None and not self.body:
            return False  # no body: the defaults, a new id
        body = self.json_body()
        return not isinstance(body, dict) or body.get("thread_id") is not None

    def deleted_thread(self) -> str | None:
        """The thread's id when this request is ``DELETE /threads/{id}``."""
        match = _THREAD.match(self.path) if self.method == "DELETE" else None
        return match.group(1) if match else None


REQUEST: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar(
    "factdebate_request", default=None)
_COPY = re.compile(r"^/threads/([^/]+)/copy/?$")


def current_request() -> RequestInfo | None:
    """The request this handler serves (None for the server's own calls)."""
    return REQUEST.get()


def copied_thread() -> str | None:
    """The source thread's id when the current request is ``POST /threads/{id}/copy``."""
    request = current_request()
    if request is None or request.method != "POST":
        return None
    match = _COPY.match(request.path)
    return match.group(1) if match else None


# --- the ledger ----------------------------------------------------------------------------------
class QuotaExceeded(Exception):
    """A write that would take a user past the byte quota (``detail`` names the limit)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def thread_key(thread_id: Any) -> str:
    """A thread's ledger key."""
    return f"thread:{thread_id}"


def run_key(run_id: Any) -> str:
    """The ledger key of a stateless run's kept thread (its id is the runtime's choice)."""
    return f"run:{run_id}"


def assistant_key(assistant_id: Any) -> str:
    """An assistant's ledger key."""
    return f"assistant:{assistant_id}"


def cron_key(cron_id: Any) -> str:
    """A cron's ledger key."""
    return f"cron:{cron_id}"


def history_key(thread_id: Any) -> str:
    """The ledger key of a thread's stored checkpoints (freed with the thread)."""
    return f"history:{thread_id}"


def cron_bytes(payload: Any, metadata: Any) -> int:
    """What a cron keeps: its payload, which holds its metadata (langgraph-api passes the
    payload's own ``metadata`` as the cron's), so the metadata is counted once."""
    if isinstance(payload, dict) and (metadata is None or payload.get("metadata") is metadata
                                      or payload.get("metadata") == metadata):
        return json_bytes(payload)
    return json_bytes([payload, metadata])


def store_key(namespace: Iterable[str], key: Any) -> str:
    """A store item's ledger key."""
    return "store:" + json.dumps([*namespace, str(key)], ensure_ascii=False)


class ByteLedger:
    """Bytes charged per user and object (see the module docstring).

    ``langgraph dev`` serves requests on several event loops (threads): the books are guarded by a
    thread lock, never held across an ``await``.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._books: dict[str, dict[str, int]] = {}
        self._links: dict[str, dict[str, set[str]]] = {}
        """identity -> object key -> the keys freed with it."""
        self._lock = threading.Lock()

    def total(self, identity: str) -> int:
        """Bytes charged to ``identity``."""
        with self._lock:
            return sum(self._books.get(identity, {}).values())

    def charged(self, identity: str, key: str) -> int | None:
        """Bytes charged to one object of ``identity`` (None: not charged)."""
        with self._lock:
            return self._books.get(identity, {}).get(key)

    def book(self, identity: str) -> dict[str, int]:
        """A copy of ``identity``'s charges, per object key."""
        with self._lock:
            return dict(self._books.get(identity, {}))

    def is_open(self, identity: str) -> bool:
        """Whether ``identity``'s stored objects were measured in this process."""
        with self._lock:
            return identity in self._books

    async def open(self, identity: str) -> None:
        """Measure the user's stored objects on first use in this process (the server's own
        API; call it where waiting is safe: the request's authentication)."""
        if not self.limit or self.is_open(identity):
            return
        measured, links = await measure_user(identity)
        with self._lock:
            if identity not in self._books:
                self._books[identity] = measured
                for parent, children in links.items():
                    self._links.setdefault(identity, {}).setdefault(parent, set()).update(children)


    def link(self, identity: str, parent: str, child: str) -> None:
        """Free ``child`` whenever ``parent`` is freed (a thread's crons, history, kept runs)."""
        with self._lock:
            self._links.setdefault(identity, {}).setdefault(parent, set()).add(child)

    async def charge(self, identity: str, key: str, nbytes: int, *, mode: str = "add") -> int:
        """Charge ``nbytes`` to ``identity``'s object ``key``; returns the bytes charged.

        ``mode``: ``add`` (a write added to the object), ``set`` (the write replaces the object:
        a store put), ``new`` (a create: nothing if the object is charged already).

        Raises:
            QuotaExceeded: The user's total would pass the limit (nothing is charged then).
        """
        if not self.limit:
            return 0
        await self.open(identity)
        request = current_request()
        with self._lock:
            book = self._books.setdefault(identity, {})
            old = book.get(key)
            if (mode == "new" and old is not None) or (
                    mode == "add" and request is not None and key in request.charged):
                return 0
            new = nbytes if mode != "add" else (old or 0) + nbytes
            total = sum(book.values()) - (old or 0) + new
            if new > (old or 0) and total > self.limit:
                raise QuotaExceeded(
                    f"{identity} stores {total - new + (old or 0)} bytes on this server and this "
                    f"write adds {new - (old or 0)}, above its limit ({BYTES_ENV}={self.limit}); "
                    "delete threads, assistants, crons or store items it no longer needs, or ask "
                    "the operator to raise the limit")
            book[key] = new
        if request is not None:
            request.charged.add(key)
        return new - (old or 0)

    def refund(self, identity: str, key: str, nbytes: int) -> None:
        """Take back a charge of a write that was refused after it was charged."""
        with self._lock:
            book = self._books.get(identity, {})
            if key in book:
                book[key] = max(0, book[key] - nbytes)

    def free(self, identity: str, key: str) -> None:
        """The object is deleted: its bytes, and those of the objects linked to it, no longer
        count. Never waits (the runtime calls the delete handlers between finding a thread and
        removing it)."""
        with self._lock:
            book = self._books.get(identity, {})
            links = self._links.get(identity, {})
            pending = [key]
            while pending:
                current = pending.pop()
                book.pop(current, None)
                pending.extend(links.pop(current, ()))

    def free_everywhere(self, key: str) -> None:
        """Free ``key`` in whichever user's books hold it (the store sweep)."""
        with self._lock:
            for book in self._books.values():
                book.pop(key, None)


_LEDGER: list[ByteLedger] = []
_LEDGER_LOCK = threading.Lock()


def ledger(limit: int) -> ByteLedger:
    """The process's one ledger (langgraph-api may load the auth module twice; the books are
    shared), created with ``limit`` on first use."""
    with _LEDGER_LOCK:
        if not _LEDGER:
            _LEDGER.append(ByteLedger(limit))
        return _LEDGER[0]


# --- measuring what the server holds -------------------------------------------------------------
async def _pages(fetch: Any, page: int = 500) -> AsyncIterator[Any]:
    offset = 0
    while True:
        rows = await fetch(limit=page, offset=offset)
        for row in rows:
            yield row
        if len(rows) < page:
            return
        offset += page


async def measure_user(identity: str, owner_key: str = "owner",
                       ) -> tuple[dict[str, int], dict[str, set[str]]]:
    """What ``identity`` stores on this server now, per ledger key (the server's own API), and
    the links between them (a thread's crons)."""
    from factdebate.server.loopback import loopback

    client = loopback()
    owned = {owner_key: identity}
    book: dict[str, int] = {}
    links: dict[str, set[str]] = {}
    async for thread in _pages(lambda **kw: client.threads.search(
            metadata=owned, select=["thread_id", "metadata"], **kw)):
        book[thread_key(thread["thread_id"])] = json_bytes(thread.get("metadata"))
    async for assistant in _pages(lambda **kw: client.assistants.search(metadata=owned, **kw)):
        book[assistant_key(assistant["assistant_id"])] = json_bytes(
            [assistant.get(k) for k in ("config", "context", "metadata", "name", "description")])
    async for cron in _pages(lambda **kw: client.crons.search(**kw)):
        if (cron.get("metadata") or {}).get(owner_key) == identity:
            book[cron_key(cron["cron_id"])] = cron_bytes(cron.get("payload"), cron.get("metadata"))
            if cron.get("thread_id"):
                links.setdefault(thread_key(cron["thread_id"]), set()).add(cron_key(cron["cron_id"]))

    async def items(**kw: Any) -> list[dict[str, Any]]:
        return list((await client.store.search_items([identity], **kw))["items"])

    async for item in _pages(items):
        book[store_key(item["namespace"], item["key"])] = json_bytes(
            [item["namespace"], item["key"], item.get("value")])
    return book, links


# --- the history bound ---------------------------------------------------------------------------
def prune_history(thread_id: str, keep: int, saver: Any = None) -> int:
    """Keep at most ``keep`` checkpoints of a thread across all its namespaces in the in-memory
    checkpointer (``saver``, default: the runtime's), with the subgraph namespaces of the removed
    top-level checkpoints, their pending writes and the channel values no kept checkpoint
    references (:func:`factdebate.patches.inmem_history.prune`); 0 on other runtimes and while
    the gate of ``factdebate.patches.inmem_history`` (the checkpointer's storage layout) is
    closed."""
    saver = _saver(saver)
    if saver is None:
        return 0
    from factdebate.patches import inmem_history

    return inmem_history.prune(saver, thread_id, keep)


def _saver(saver: Any = None) -> Any:
    """``saver``, or the runtime's in-memory checkpointer; None while the gate is closed or on
    another runtime."""
    if not patches.enabled("inmem_history"):
        _history_gate_closed_once()
        return None
    from factdebate.patches import inmem_history

    return saver if saver is not None else inmem_history.runtime_saver()


def history_bytes(thread_id: str, saver: Any = None) -> int | None:
    """Bytes the thread's checkpoints hold (None: not measurable on this runtime)."""
    saver = _saver(saver)
    if saver is None:
        return None
    from factdebate.patches import inmem_history

    return inmem_history.stored_bytes(saver, thread_id)


def missing_checkpoint(thread_id: Any, checkpoint_id: Any, checkpoint_ns: str = "",
                       keep: int = 0, saver: Any = None, action: str = "fork") -> str | None:
    """The 404 detail of a fork, a run or a read (``action``: "fork" or "read") at a checkpoint
    the thread does not hold (pruned by the history bound, or never there), or None when it
    holds it (or this runtime cannot tell)."""
    if thread_id is None or not checkpoint_id:
        return None
    saver = _saver(saver)
    if saver is None:
        return None
    from factdebate.patches import inmem_history

    if inmem_history.has_checkpoint(saver, str(thread_id), checkpoint_ns or "", str(checkpoint_id)):
        return None
    where = f" namespace {checkpoint_ns!r} of" if checkpoint_ns else ""
    return (f"checkpoint {checkpoint_id} is not in the history of{where} thread {thread_id} "
            f"(removed by the history bound, or never there){_bound(keep)}: {action} from a "
            f"checkpoint that POST /threads/{thread_id}/history lists")


def missing_namespace(thread_id: Any, checkpoint_ns: str, keep: int = 0,
                      saver: Any = None) -> str | None:
    """The 404 detail of a read of a checkpoint namespace (a subgraph's) that holds no
    checkpoint of the thread, or None when it holds some (or this runtime cannot tell)."""
    if thread_id is None or not checkpoint_ns:
        return None
    saver = _saver(saver)
    if saver is None:
        return None
    from factdebate.patches import inmem_history

    if inmem_history.has_namespace(saver, str(thread_id), checkpoint_ns):
        return None
    return (f"checkpoint namespace {checkpoint_ns!r} holds no checkpoint of thread {thread_id} "
            f"(removed by the history bound, or never there){_bound(keep)}: read a namespace "
            f"that POST /threads/{thread_id}/history lists (subgraphs: true)")


def _bound(keep: int) -> str:
    return (f"; this server keeps the newest {keep} checkpoints of a thread ({HISTORY_ENV})"
            if keep else "")


@functools.cache
def _history_gate_closed_once() -> None:
    log.warning("thread history is not bounded: %s (patches/inmem_history.py)",
                patches.gate("inmem_history"))


async def bound_history(thread_id: Any, keep: int, identity: str | None = None,
                        ledger: ByteLedger | None = None) -> None:
    """Before a write to a thread: prune an idle thread so that one more checkpoint keeps it
    within ``keep`` (all namespaces together), then charge what its history holds to
    ``identity`` as the thread's ``history`` object.

    Waits (it reads the thread's status through the server's own API): never call it from a
    handler the runtime runs between finding a thread and changing it (delete, metadata patch).

    Raises:
        QuotaExceeded: The thread's history takes the user past the byte quota.
    """
    saver = _saver() if thread_id is not None else None
    if saver is None:
        return
    from factdebate.patches import inmem_history
    from factdebate.server.loopback import loopback

    if not inmem_history.has_checkpoints(saver, str(thread_id)) and (
            ledger is None or identity is None
            or not ledger.charged(identity, history_key(thread_id))):
        return  # a new thread: nothing to prune or charge, and no status to ask the API for

    try:
        thread = await loopback().threads.get(str(thread_id))
    except Exception:  # noqa: BLE001  # not found: the write itself answers
        return
    if thread.get("status") == "busy":
        return
    if keep:
        removed = prune_history(str(thread_id), max(keep - 1, 1))
        if removed:
            log.debug("pruned %d checkpoints of thread %s", removed, thread_id)
    if ledger is not None and identity is not None and ledger.limit:
        stored = history_bytes(str(thread_id)) or 0
        await ledger.charge(identity, history_key(thread_id), stored, mode="set")
        ledger.link(identity, thread_key(thread_id), history_key(thread_id))


# --- the store TTL -------------------------------------------------------------------------------
def _stale(item: dict[str, Any], cutoff: dt.datetime) -> bool:
    stamp = item.get("updated_at") or item.get("created_at")
    if not stamp:
        return False
    when = dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when < cutoff


async def sweep_store(ttl_minutes: float, ledger: ByteLedger | None = None) -> int:
    """Delete store items not written for ``ttl_minutes``; returns how many."""
    from factdebate.server.loopback import loopback

    client = loopback()
    cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=ttl_minutes)
    stale: list[dict[str, Any]] = []

    async def items(**kw: Any) -> list[dict[str, Any]]:
        return list((await client.store.search_items([], **kw))["items"])

    async for item in _pages(items):
        if _stale(item, cutoff):
            stale.append(item)
    for item in stale:
        await client.store.delete_item(item["namespace"], item["key"])
        if ledger is not None:
            ledger.free_everywhere(store_key(item["namespace"], item["key"]))
    return len(stale)


async def store_sweeper(ttl_minutes: float, every_minutes: float,
                        ledger: ByteLedger | None = None) -> None:
    """Sweep the store every ``every_minutes`` (until cancelled); a failed sweep is logged."""
    while True:
        await asyncio.sleep(every_minutes * 60)
        try:
            swept = await sweep_store(ttl_minutes, ledger)
        except Exception as exc:  # noqa: BLE001  # the next sweep tries again
            log.warning("the store sweep failed (%s); retrying in %g minutes",
                        type(exc).__name__, every_minutes)
            continue
        if swept:
            log.info("store TTL (%s=%g): deleted %d items", STORE_TTL_ENV, ttl_minutes, swept)


@contextlib.asynccontextmanager
async def store_ttl(ttl_minutes: float, every_minutes: float,
                    ledger: ByteLedger | None = None) -> AsyncIterator[None]:
    """Run :func:`store_sweeper` while the server runs (``ttl_minutes`` 0: no sweep)."""
    if not ttl_minutes:
        yield
        return
    task = asyncio.get_running_loop().create_task(store_sweeper(ttl_minutes, every_minutes, ledger))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
