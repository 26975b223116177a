"""Operator limits on the work one client can buy from the LangGraph server.

Three limits, all set in the server's environment and read when the server loads the auth module
(a malformed value stops the start with one line), then checked before anything starts:

* **Size caps** on the client-set Context fields that multiply model calls, prompt size or time
  (``max_claims``, ``max_rounds``, debaters, ``top_k``, retries ...): ``FACTDEBATE_CAP_<FIELD>``,
  e.g. ``FACTDEBATE_CAP_MAX_CLAIMS=20``; defaults in :data:`DEFAULT_CAPS`. A run, an assistant, a
  cron or a ``check_text`` run's ``verifier_settings`` above a cap is refused (403) naming the
  field, the cap and the variable. Each factor of a product (claims x rounds x debaters x top_k)
  is capped, so the product is; the per-run model-call budget
  (``FACTDEBATE_MAX_MODEL_CALLS_PER_RUN``, ``factdebate.core.budget``) bounds the total as well.
* **Recursion limit**: ``config.recursion_limit`` above ``FACTDEBATE_MAX_RECURSION_LIMIT``
  (default 150; the largest run within the default caps takes about 35 steps) is refused; a run
  that sets none gets this cap instead of LangGraph's default of 10,007.
* **Request size**: a body above ``FACTDEBATE_MAX_REQUEST_BYTES`` (default 1 MiB, ``0`` = no
  limit) is refused with 413 before it is parsed (:mod:`factdebate.server.guard`): a 2 MB thread
  metadata or a 100 MB "claim" would otherwise be read into memory and stored.
* **Stored objects per user**: ``FACTDEBATE_MAX_THREADS_PER_USER`` (default 10,000),
  ``FACTDEBATE_MAX_ASSISTANTS_PER_USER`` (100), ``FACTDEBATE_MAX_CRONS_PER_USER`` (20); ``0`` = no
  limit. A create that would add one more (a new thread, also one a run creates with
  ``if_not_exists: create`` or a stateless run keeps; a thread copy; an assistant; a cron) is
  refused with 403 naming the count, the limit and the variable; naming an object of one's own that
  exists (``if_exists: do_nothing``) still works at the limit. Counted through the server's own API
  (:func:`owned_count`); two creates of one user that arrive together can both pass (the limit is
  exceeded by at most the requests in flight). Store items have no count: their bytes do.
* **Bytes per user**: ``FACTDEBATE_MAX_BYTES_PER_USER`` (default 100 MiB) of thread metadata,
  state writes, run inputs, thread histories, assistants, crons and store values; at most
  ``FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD`` (100) checkpoints per thread, all namespaces
  together; store items expire after
  ``FACTDEBATE_STORE_TTL_MINUTES`` (30 days) without a write (:mod:`factdebate.server.usage`).
* **Concurrent runs per user**: ``FACTDEBATE_MAX_RUNS_PER_USER`` (default 4, ``0`` = no limit)
  pending or running runs per identity; one more is refused with 429 until one finishes. Counted
  through the server's own API (in-process, :func:`active_runs`): the user's busy threads and
  their pending/running runs, so runs queued on any thread, stateless runs and cron runs count.

Job slots: ``langgraph dev`` runs ``--n-jobs-per-worker`` runs at once (default **1**: it
overrides ``N_JOBS_PER_WORKER``); deployments (``langgraph up``/``build``) read
``N_JOBS_PER_WORKER`` (default 10). With fewer slots than ``FACTDEBATE_MAX_RUNS_PER_USER`` + 1,
one user's runs can hold every slot while another user's run waits: the start warns about it
(:func:`job_slots_warning`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from factdebate.core.errors import ConfigError
from factdebate.server.loopback import loopback
from factdebate.server.usage import (
    BYTES_ENV,
    DEFAULT_BYTES_PER_USER,
    DEFAULT_CHECKPOINTS_PER_THREAD,
    DEFAULT_STORE_SWEEP_MINUTES,
    DEFAULT_STORE_TTL_MINUTES,
    HISTORY_ENV,
    STORE_SWEEP_ENV,
    STORE_TTL_ENV,
)

CAP_PREFIX = "FACTDEBATE_CAP_"
RECURSION_ENV = "FACTDEBATE_MAX_RECURSION_LIMIT"
RUNS_ENV = "FACTDEBATE_MAX_RUNS_PER_USER"
REQUEST_BYTES_ENV = "FACTDEBATE_MAX_REQUEST_BYTES"
DEFAULT_REQUEST_BYTES = 1_048_576
"""1 MiB: a 20,000-character text, a claim with its documents, a state update fit many times."""
JOBS_ENV = "N_JOBS_PER_WORKER"
QUOTA_ENVS = {"threads": "FACTDEBATE_MAX_THREADS_PER_USER",
              "assistants": "FACTDEBATE_MAX_ASSISTANTS_PER_USER",
              "crons": "FACTDEBATE_MAX_CRONS_PER_USER"}
DEFAULT_QUOTAS = {"threads": 10_000, "assistants": 100, "crons": 20}
"""Stored objects per user: one thread per claim or text checked keeps 10,000 far above any
evaluation run's items on one server; assistants and crons are few by nature."""
DEFAULT_RECURSION_LIMIT = 150
DEFAULT_RUNS_PER_USER = 4
"""Equal to ``factdebate eval``'s default ``--concurrency``, so ``eval --server`` fits in it."""

DEFAULT_CAPS: dict[str, float] = {
    # how many debates / loops
    "max_claims": 20,  # check_text: debates per text (range 1-200)
    "max_rounds": 5,  # Tool-MAD, MADKE, MADAM-RAG, MAD, multi-agent debate (1-10)
    "t_max": 10,  # MERMAID steps (1-20)
    "max_steps": 10,  # ReAct (1-20)
    "max_follow_ups": 5,  # self-ask (1-10)
    "reflection_rounds": 5,  # self-reflection (0-10)
    "samples": 10,  # self-consistency (1-20)
    "drafts": 5,  # speculative RAG (1-10)
    # how many agents per round
    "debaters": 4,  # Tool-MAD: the list's length (2-6)
    "num_debaters": 4,  # MADKE (2-6)
    "agents": 5,  # multi-agent debate (2-10)
    "num_documents": 10,  # MADAM-RAG: one agent per document (1-20)
    # how much per call, how often a call is repeated, how long one may hold a job slot
    "top_k": 10,  # passages per retrieval (1-50)
    "llm_retries": 3,  # (0-10)
    "tool_retries": 3,  # (0-10)
    "tool_timeout_s": 60,  # seconds (0-600)
}
"""Field -> the largest value a client may set (a list field: its length)."""


@dataclass(frozen=True)
class Limits:
    """The operator's limits (see the module docstring)."""

    caps: Mapping[str, float]
    recursion_limit: int
    runs_per_user: int
    """0 = no limit."""
    request_bytes: int = DEFAULT_REQUEST_BYTES
    """Largest request body the server reads; 0 = no limit."""
    quotas: Mapping[str, int] = dataclasses.field(default_factory=lambda: dict(DEFAULT_QUOTAS))
    """Stored threads/assistants/crons per user (``QUOTA_ENVS``); 0 = no limit."""
    bytes_per_user: int = DEFAULT_BYTES_PER_USER
    """Bytes a user's writes may keep on the server (:mod:`factdebate.server.usage`); 0 = no limit."""
    checkpoints_per_thread: int = DEFAULT_CHECKPOINTS_PER_THREAD
    """Checkpoints a thread keeps (in-memory runtime); 0 = all."""
    store_ttl_minutes: float = DEFAULT_STORE_TTL_MINUTES
    """Store items not written for this long are deleted; 0 = never."""
    store_sweep_minutes: float = DEFAULT_STORE_SWEEP_MINUTES

    @staticmethod
    def cap_variable(name: str) -> str:
        """The environment variable of ``name``'s cap."""
        return f"{CAP_PREFIX}{name.upper()}"


def _number(env: Mapping[str, str], name: str, default: float, *, integer: bool,
            low: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < low:
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{name}={raw!r} is not a valid limit",
                          f"set it to {kind} of at least {low:g}")
    return value


def load_limits(env: Mapping[str, str] | None = None) -> Limits:
    """The limits from ``env`` (default ``os.environ``).

    Raises:
        ConfigError: A value that is not a number, or below its minimum (naming the variable).
    """
    env = os.environ if env is None else env
    caps = {}
    for name, default in DEFAULT_CAPS.items():
        caps[name] = _number(env, Limits.cap_variable(name), default,
                             integer=name != "tool_timeout_s", low=0 if name.endswith(
                                 ("retries", "rounds")) else 1)
    return Limits(caps=caps,
                  recursion_limit=int(_number(env, RECURSION_ENV, DEFAULT_RECURSION_LIMIT,
                                              integer=True, low=10)),
                  runs_per_user=int(_number(env, RUNS_ENV, DEFAULT_RUNS_PER_USER,
                                            integer=True, low=0)),
                  request_bytes=int(_number(env, REQUEST_BYTES_ENV, DEFAULT_REQUEST_BYTES,
                                            integer=True, low=0)),
                  quotas={kind: int(_number(env, QUOTA_ENVS[kind], default, integer=True, low=0))
                          for kind, default in DEFAULT_QUOTAS.items()},
                  bytes_per_user=int(_number(env, BYTES_ENV, DEFAULT_BYTES_PER_USER,
                                             integer=True, low=0)),
                  checkpoints_per_thread=int(_number(env, HISTORY_ENV,
                                                     DEFAULT_CHECKPOINTS_PER_THREAD,
                                                     integer=True, low=0)),
                  store_ttl_minutes=_number(env, STORE_TTL_ENV, DEFAULT_STORE_TTL_MINUTES,
                                            integer=False, low=0),
                  store_sweep_minutes=_number(env, STORE_SWEEP_ENV, DEFAULT_STORE_SWEEP_MINUTES,
                                              integer=False, low=0.01))


def job_slots_warning(limits: Limits, env: Mapping[str, str] | None = None) -> str | None:
    """One line when one user's runs can hold every job slot of this server process, else None."""
    env = os.environ if env is None else env
    try:
        slots = int(env.get(JOBS_ENV, "") or 10)
    except ValueError:
        return None
    if limits.runs_per_user and slots > limits.runs_per_user:
        return None
    per_user = limits.runs_per_user or "any number of"
    return (f"{slots} job slot(s) ({JOBS_ENV}) and {per_user} concurrent runs per user "
            f"({RUNS_ENV}): one user's runs can hold every slot while other users' runs wait; "
            f"start langgraph dev with --n-jobs-per-worker {max(2 * (limits.runs_per_user or 4), 8)}"
            f" (deployments: {JOBS_ENV}), or lower {RUNS_ENV}")


# --- counting a user's runs --------------------------------------------------------------------


async def owned_count(kind: str, identity: str, owner_key: str) -> int:
    """How many threads / assistants / crons (``kind``) carry ``identity``'s owner stamp."""
    api = getattr(loopback(), kind)
    return int(await api.count(metadata={owner_key: identity}))


async def exists(kind: str, object_id: Any) -> bool:
    """Whether a thread or assistant (``kind``: ``threads``/``assistants``) of that id exists
    (anyone's: the caller's filter decides access)."""
    from langgraph_sdk.errors import NotFoundError

    try:
        await getattr(loopback(), kind).get(str(object_id))
    except NotFoundError:
        return False
    return True


def quota_refusal(kind: str, identity: str, count: int, limit: int) -> str:
    """The 403 detail of a create beyond ``identity``'s ``kind`` quota."""
    return (f"{identity} has {count} {kind} on this server, its limit ({QUOTA_ENVS[kind]}="
            f"{limit}); delete {kind} it no longer needs, or ask the operator to raise the limit")


class OwnedBound:
    """Per user, an upper bound of the objects of one kind they hold (threads), so that a create
    below the quota needs no count through the server's API.

    Kept only where every create of this process's runtime passes the auth handlers in this
    process: ``langgraph dev``'s in-memory runtime with its run signals on
    (:func:`factdebate.patches.inmem_run_events.put_events_active`). It starts from an exact count
    (:func:`owned_count`, the user's first create in the process, so objects from before a
    restart count) and grows by every create the handlers let through, and by every thread the
    runtime makes for a temporary run; deletes do not lower it. It answers only while below the
    limit; at the limit the caller counts exactly again and the bound starts anew from that count.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bound: dict[str, int] = {}

    @staticmethod
    def active() -> bool:
        """Whether the runtime's creates all pass this process (the in-memory runtime)."""
        from factdebate.patches import inmem_run_events

        return inmem_run_events.put_events_active()

    def take(self, identity: str, limit: int) -> bool:
        """One more create for ``identity`` if the bound is known and below ``limit`` (True:
        admitted and counted), else False (count exactly)."""
        with self._lock:
            bound = self._bound.get(identity)
            if bound is None or bound >= limit:
                return False
            self._bound[identity] = bound + 1
            return True

    def counted(self, identity: str, count: int) -> None:
        """The exact count, this create's object included when it is let through."""
        with self._lock:
            self._bound[identity] = count

    def created(self, identity: str) -> None:
        """An object made without a quota check (a temporary run's thread)."""
        with self._lock:
            if identity in self._bound:
                self._bound[identity] += 1


UNFINISHED = ("pending", "running")
"""Run statuses that count against the per-user run limit."""


async def active_runs(identity: str, owner_key: str, enough: int) -> set[str]:
    """Ids of ``identity``'s pending and running runs (stops counting at ``enough``).

    A thread with a pending or running run is ``busy`` (langgraph-api keeps it busy while runs are
    queued on it); stateless runs get a temporary thread stamped with the run's owner too. A thread
    deleted between the search and the listing of its runs has none left to count (a user's run
    is never refused because another of their requests deleted a thread meanwhile).
    """
    from langgraph_sdk.errors import NotFoundError

    client = loopback()
    found: set[str] = set()
    offset, page = 0, 100
    while len(found) < enough:
        threads = await client.threads.search(metadata={owner_key: identity}, status="busy",
                                              limit=page, offset=offset, select=["thread_id"])
        for thread in threads:
            try:  # newest first: a thread runs its runs in order, so the unfinished ones are
                # its newest (one listing instead of one per status: a request fewer per thread;
                # only the fields counted, not each run's input and config, nor a thread's state)
                runs = await client.runs.list(thread["thread_id"], limit=enough + 1,
                                              select=["run_id", "status"])
            except NotFoundError:  # deleted since the search (by another of its requests)
                continue
            found.update(str(r["run_id"]) for r in runs if r.get("status") in UNFINISHED)
            if len(found) >= enough:
                break
        if len(threads) < page:
            break
        offset += page
    return found


class RunAdmission:
    """Per-user admission of new runs, exact under concurrent requests of one server process.

    The auth handler returns before langgraph-api stores the run, so two requests of one user
    could both count the same runs and both pass. Admission is serialised per user: the next
    request of that user waits (at most :attr:`settle_s`) until the admitted run is visible in the
    server's API, or was not stored at all (refused later by the runtime). Other users never wait.
    ``langgraph dev`` serves requests on several event loops (threads), so the per-user locks are
    thread locks, taken without blocking any loop.

    How the admission learns that the run's storage is decided: on ``langgraph dev`` the runtime
    says so itself (:mod:`factdebate.patches.inmem_run_events`: the auth handler runs inside the
    runtime's ``Runs.put``, and its return is the signal; :meth:`put_done` releases the lock, with
    :attr:`settle_s` as the longest wait). Elsewhere (another runtime, the patch's gate closed) a
    background task asks the server's own API until the run shows, or :attr:`settle_s` passed.

    Counting without asking: with the runtime's signals the admission also keeps, per user, the
    ids of the runs that may still be pending or running (``_live``), an upper bound of the true
    set. It starts from an exact count through the server's API (:func:`active_runs`, the first
    admission of the user in this process, so runs from before a restart count), and then grows
    by every admitted run and shrinks by every run the runtime reports ended
    (:meth:`run_ended`) or not stored (:meth:`put_done`). Every run of the in-memory runtime is
    created through this admission (a cron's run too: the scheduler creates it as the cron's
    user) in this one process, so no run escapes the bound. A run that leaves the pending state
    without the worker ending it (cancelled while queued, deleted with its thread) stays in the
    bound: the admission only answers from the bound while it is below the limit, and at the
    limit it counts exactly again and starts the bound anew from that count. The answer is the
    exact count's whenever it matters (at the limit); below it the server's API is not asked.
    """

    settle_s = 1.0
    poll_s = 0.02

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._waiting: dict[str, tuple[threading.Lock, bool]] = {}
        """Run id -> the user's lock held for it, until its ``Runs.put`` is done."""
        self._live: dict[str, set[str]] = {}
        """User -> ids of their runs that may be pending or running (an upper bound), for users
        counted exactly once in this process while the runtime's signals are on."""
        self._owner: dict[str, str] = {}
        """Run id -> its user, for the runs in :attr:`_live`."""
        self._listening = False

    def _put_events(self) -> bool:
        """Whether the runtime announces the end of each ``Runs.put`` (and :meth:`put_done`
        listens to it)."""
        from factdebate.patches import inmem_run_events

        if not inmem_run_events.put_events_active():
            return False
        if not self._listening:
            inmem_run_events.on_put_done(self.put_done)
            inmem_run_events.on_run_end(self.run_ended)
            self._listening = True
        return True

    def put_done(self, run_id: str, returned: bool = True) -> None:
        """The run's storage is decided: release its user's lock (once; a late call is a no-op);
        a run whose ``put`` raised is not stored and leaves the user's bound."""
        with self._guard:
            waiting = self._waiting.pop(run_id, None)
            if not returned:
                self._forget(run_id)
        if waiting is not None:
            _release(*waiting)

    def run_ended(self, run_id: str) -> None:
        """The worker ended the run (success, error, interrupted): it leaves its user's bound."""
        with self._guard:
            self._forget(run_id)

    def _forget(self, run_id: str) -> None:
        identity = self._owner.pop(run_id, None)
        if identity is not None:
            self._live.get(identity, set()).discard(run_id)

    def _bound_below(self, identity: str, limit: int) -> bool:
        """Whether the user's bound is known and below ``limit`` (no need to ask the API)."""
        with self._guard:
            live = self._live.get(identity)
            return live is not None and len(live) < limit

    def _start_bound(self, identity: str, active: set[str], limit: int) -> None:
        """The exact count of the user's runs; a complete one (below ``limit``: ``active_runs``
        stops counting at the limit) starts the bound anew."""
        with self._guard:
            for run_id in self._live.pop(identity, set()):
                self._owner.pop(run_id, None)
            if len(active) < limit:
                self._live[identity] = set(active)
                self._owner.update(dict.fromkeys(active, identity))

    def _admitted(self, identity: str, run_id: str) -> None:
        with self._guard:
            if identity in self._live:
                self._live[identity].add(run_id)
                self._owner[run_id] = identity

    def _hold_until_put_done(self, lock: threading.Lock, held: bool, run_id: str) -> None:
        with self._guard:
            self._waiting[run_id] = (lock, held)
        # the longest wait, should the runtime never call back (it always does: put's finally)
        asyncio.get_running_loop().call_later(self.settle_s, self.put_done, run_id)

    def _lock(self, identity: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(identity, threading.Lock())

    async def _acquire(self, lock: threading.Lock) -> bool:
        deadline = time.monotonic() + self.settle_s + 1.0
        while not lock.acquire(blocking=False):
            if time.monotonic() > deadline:  # a stuck settle task; do not block this user
                return False
            await asyncio.sleep(self.poll_s)
        return True

    async def admit(self, identity: str, owner_key: str, limit: int, run_id: Any,
                    thread_id: str | None) -> int | None:
        """Admit a run (returns None) or return the number of runs the user already has.

        ``limit`` 0 admits everything. On admission the user's lock stays held until the run's
        storage is decided (class docstring).
        """
        if not limit:
            return None
        lock = self._lock(identity)
        held = await self._acquire(lock)
        events = self._put_events()
        if events and run_id is not None and self._bound_below(identity, limit):
            self._admitted(identity, str(run_id))
            self._hold_until_put_done(lock, held, str(run_id))
            return None
        try:
            active = await active_runs(identity, owner_key, limit)
        except BaseException:
            _release(lock, held)
            raise
        if events:
            self._start_bound(identity, active, limit)
        if len(active) >= limit or run_id is None:
            _release(lock, held)
            return len(active) if len(active) >= limit else None
        if events:
            self._admitted(identity, str(run_id))
            self._hold_until_put_done(lock, held, str(run_id))
            return None
        task = asyncio.get_running_loop().create_task(
            self._settle(lock, held, identity, owner_key, str(run_id), thread_id))
        _background.add(task)
        task.add_done_callback(_background.discard)
        return None

    async def _settle(self, lock: threading.Lock, held: bool, identity: str, owner_key: str,
                      run_id: str, thread_id: str | None) -> None:
        deadline = time.monotonic() + self.settle_s
        pause = self.poll_s
        try:
            client = loopback()
            while time.monotonic() < deadline:
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.2)
                if thread_id is not None:
                    try:
                        await client.runs.get(thread_id, run_id)
                        return  # stored (pending, running or already done)
                    except Exception:  # noqa: BLE001, S112  # not stored yet (404)
                        continue
                if run_id in await active_runs(identity, owner_key, 10_000):
                    return
        except Exception:  # noqa: BLE001, S110  # the lock is released whatever happens
            pass
        finally:
            _release(lock, held)


_background: set[asyncio.Task[None]] = set()


def _release(lock: threading.Lock, held: bool) -> None:
    if held:
        lock.release()
