"""Authentication and authorization of the LangGraph server (wired in ``langgraph.json``).

Who: API keys mapped to identities (:mod:`factdebate.server.identities`); clients send a key as
``x-api-key`` (what ``langgraph_sdk.get_client(api_key=...)`` does) or ``Authorization: Bearer``.
No key -> 401, a wrong key -> 403. A server without any configured key refuses every request
(401), Studio's ``x-auth-scheme`` bypass included (:mod:`factdebate.server.guard`), unless
``FACTDEBATE_AUTH=off`` is set, for local development only (identity ``local-development``): deny
by default, so a forgotten variable never exposes a deployment. The keys and the operator's
limits (:mod:`factdebate.server.limits`) are read when the server loads this module: a malformed
configuration stops the start with one line (no traceback).

What: every resource action has a handler below; anything without one is refused (``@auth.on``).

* Threads, runs, crons and assistants a user creates get ``metadata.owner = <identity>``;
  reads, searches, updates, deletes and new runs are filtered by it, so another user's thread is
  "not found". Creates return the same filter: a client-chosen id of an existing object that is not
  the user's (``if_exists: do_nothing``) is a 409 conflict, never that object. The graphs' own
  assistants (``created_by: system``) are readable by all and writable by none.
* Settings are checked before anything starts (:mod:`factdebate.server.policy`): a run, an
  assistant or a cron that sets an operator-only Context field or a model off the allow-list is
  refused with 403 naming the field; so is a size above the operator's caps or a
  ``recursion_limit`` above its cap (a run without one gets the cap), and a user's run beyond
  ``FACTDEBATE_MAX_RUNS_PER_USER`` pending or running runs is refused with 429.
* The store: a user's namespaces start with their identity; other prefixes are refused, and
  searches/listings without a prefix are narrowed to the user's own.

Under ``langgraph dev``, Studio's local bypass (header ``x-auth-scheme: langsmith``) skips
``authenticate`` and acts as identity ``langgraph-studio-user``; the handlers below still apply to
it. Deployments set ``"disable_studio_auth": true`` (docs/deployment.md).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from langgraph_sdk import Auth

from factdebate.core.errors import ConfigError
from factdebate.server import logs
from factdebate.server.identities import KeyRing, Teams, load_keyring, load_teams
from factdebate.server.limits import (
    RUNS_ENV,
    Limits,
    OwnedBound,
    RunAdmission,
    exists,
    job_slots_warning,
    load_limits,
    loopback,
    owned_count,
    quota_refusal,
)
from factdebate.server.policy import (
    Refused,
    cap_recursion_limit,
    check_assistant,
    check_cron_payload,
    check_run_kwargs,
    graph_of,
)
from factdebate.server.run_input import (
    add_model_metadata,
    check_breakpoints,
    complete_run_input,
)
from factdebate.server.trace_metadata import add_trace_metadata
from factdebate.server.usage import (
    QuotaExceeded,
    assistant_key,
    bound_history,
    copied_thread,
    cron_bytes,
    cron_key,
    current_request,
    json_bytes,
    ledger,
    missing_checkpoint,
    run_key,
    store_key,
    thread_key,
)

STUDIO_IDENTITY = "langgraph-studio-user"
"""The identity langgraph-api gives Studio's local bypass (header ``x-auth-scheme: langsmith``)."""


def _in_server() -> bool:
    return "langgraph_api" in sys.modules


def _configuration() -> tuple[KeyRing, Limits]:
    """The keys and the limits; in the server, a bad value stops the start with one line (a
    raise here would print langgraph-api's traceback around it)."""
    try:
        keys, limits = load_keyring(), load_limits()
    except ConfigError as exc:
        if not _in_server():
            raise
        print(f"factdebate: the server cannot start: {exc}", file=sys.stderr, flush=True)
        os._exit(exc.exit_code)
    if _in_server():
        logs.install()  # credentials in URLs are masked in every log line of the server
    warning = job_slots_warning(limits)
    if warning and _in_server() and not os.environ.get("_FACTDEBATE_SLOTS_WARNED"):
        os.environ["_FACTDEBATE_SLOTS_WARNED"] = "1"  # the module may be loaded twice
        logging.getLogger("factdebate.server").warning(warning)  # a server log line
    return keys, limits


auth = Auth()
KEYS, LIMITS = _configuration()


def _teams() -> Teams:
    """The operator's teams (``FACTDEBATE_TEAMS``); in the server, a bad value stops the start
    with one line, as a bad key does."""
    try:
        return load_teams(identities=KEYS.identities)
    except ConfigError as exc:
        if not _in_server():
            raise
        print(f"factdebate: the server cannot start: {exc}", file=sys.stderr, flush=True)
        os._exit(exc.exit_code)


TEAMS = _teams()
"""Who reviews whose threads (:mod:`factdebate.server.review_queue`)."""
ADMISSION = RunAdmission()
THREADS = OwnedBound()
LEDGER = ledger(LIMITS.bytes_per_user)
OWNER = "owner"
SYSTEM_FILTER_KEY = "created_by"
"""langgraph-api marks the assistants it makes from ``langgraph.json`` ``created_by: system``."""


def _presented_key(headers: dict[bytes, bytes]) -> str | None:
    key = headers.get(b"x-api-key")
    if key:
        return key.decode("utf-8", "replace")
    bearer = headers.get(b"authorization", b"").decode("utf-8", "replace")
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip() or None
    return None


def _deny(status: int, detail: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=status, detail=detail)


def auth_off() -> bool:
    """``FACTDEBATE_AUTH=off``: a server without keys admits everyone (local development)."""
    return os.environ.get("FACTDEBATE_AUTH", "").lower() == "off"


def studio_bypass_refused() -> bool:
    """Studio's key-less bypass is refused on a server without keys (unless auth is off): deny
    by default holds for every way in, not only for requests that reach ``authenticate``."""
    return not KEYS and not auth_off()


NO_KEYS = ("this server has no API keys configured; set FACTDEBATE_API_KEYS (or "
           "FACTDEBATE_API_KEYS_FILE), or FACTDEBATE_AUTH=off for local development")


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    """The identity of the request's API key."""
    if not KEYS:
        if auth_off():
            return {"identity": "local-development"}
        raise _deny(401, NO_KEYS)
    presented = _presented_key(headers)
    if presented is None:
        raise _deny(401, "missing API key: send it in the x-api-key header")
    identity = KEYS.identify(presented)
    if identity is None:
        raise _deny(403, "invalid API key")
    await _before_route(identity)
    return {"identity": identity}


async def _before_route(identity: str) -> None:
    """What waits on the server's own API is done here, before the route runs: the runtime calls
    the delete and metadata-patch handlers between finding a thread by its index in its thread
    list and removing or replacing that index, so a handler that waits there lets a concurrent
    delete shift the list and the stale index then removes or overwrites another thread
    (langgraph-runtime-inmem's ``Threads.delete`` / ``Threads.patch``). Here the user's books are
    measured on first use, and a thread about to be deleted gets its kept stateless runs linked
    to it (their bytes are freed with it)."""
    if not LEDGER.limit:
        return
    try:
        await LEDGER.open(identity)
        request = current_request()
        deleted = request.deleted_thread() if request is not None else None
        if deleted is not None:
            await _link_kept_runs(identity, [deleted])
    except Exception as exc:  # noqa: BLE001  # the handlers fail closed when the books are shut
        logging.getLogger("factdebate.server").warning(
            "cannot measure the bytes of %s yet (%s)", identity, type(exc).__name__)


def _me(ctx: Auth.types.AuthContext) -> str:
    identity = str(ctx.user.identity)
    if identity == STUDIO_IDENTITY and studio_bypass_refused():  # also refused by the middleware
        raise _deny(401, NO_KEYS)
    return identity


def _mine(ctx: Auth.types.AuthContext) -> dict[str, str]:
    return {OWNER: _me(ctx)}


def _stamp(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    """Set ``metadata.owner`` in place (langgraph-api keeps using the same dict)."""
    metadata = value.get("metadata")
    if metadata is None:
        metadata = value["metadata"] = {}
    if SYSTEM_FILTER_KEY in metadata:
        raise _deny(403, f"metadata.{SYSTEM_FILTER_KEY} is set by the server; remove it")
    metadata[OWNER] = _me(ctx)


def _no_owner_change(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    metadata = value.get("metadata") or {}
    if SYSTEM_FILTER_KEY in metadata:
        raise _deny(403, f"metadata.{SYSTEM_FILTER_KEY} is set by the server; remove it")
    if metadata.get(OWNER, _me(ctx)) != _me(ctx):
        raise _deny(403, "metadata.owner cannot be changed")


def _checked(check: Any, *args: Any) -> None:
    try:
        check(*args)
    except Refused as exc:
        raise _deny(exc.status, exc.detail) from None


@auth.on
async def refuse_the_rest(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Deny by default: an action without a handler below is refused."""
    raise _deny(403, f"{ctx.resource}.{ctx.action} is not allowed on this server")


# Threads (and their runs: langgraph-api files run reads under "threads").
@auth.on.threads.create
async def on_thread_create(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A new thread belongs to its creator.

    The filter matters when the client names an id that exists (``thread_id`` with
    ``if_exists: do_nothing``, or ``raise``): langgraph-api matches it against the existing thread
    and answers 409 instead of returning another user's thread (or writing its ``supersteps``).
    """
    _stamp(ctx, value)
    source = copied_thread()
    if source is not None:
        await _own_thread_or_404(ctx, source)
    thread = value.get("thread_id")
    existing = None  # asked once, for the quota and the charge alike
    request = current_request()
    if thread is not None and source is None and request is not None \
            and not request.names_thread_id():
        existing = False  # langgraph-api made the id: no thread has it (nothing to ask)
    elif thread is not None and source is None and LEDGER.limit:
        existing = await _exists_or_503(ctx, "threads", thread)
    await _within_quota(ctx, "threads", thread, existing=existing)
    if source is not None:
        await _charge(ctx, thread_key(thread),
                      LEDGER.charged(_me(ctx), thread_key(source)) or 0, mode="new")
    elif LEDGER.limit and not existing:
        await _charge(ctx, thread_key(thread), _body_or(value.get("metadata")), mode="new")
    return _mine(ctx)


async def _exists_or_503(ctx: Auth.types.AuthContext, kind: str, object_id: Any) -> bool:
    """Whether ``object_id`` exists (the server's own API; 503 when it does not answer)."""
    try:
        return await exists(kind, object_id)
    except Exception as exc:  # noqa: BLE001  # fail closed, as the quotas do
        raise _deny(503, f"cannot look up {kind} of {_me(ctx)} ({type(exc).__name__}); "
                    "retry") from None


async def _own_thread_or_404(ctx: Auth.types.AuthContext, thread_id: str) -> None:
    """A copy of a thread that is not the user's is "not found", as one of a missing id (404):
    langgraph-api's own answer for both, 409, is not what docs/deployment.md promises."""
    try:
        mine = (await loopback().threads.get(thread_id))["metadata"].get(OWNER) == _me(ctx)
    except Exception:  # noqa: BLE001  # not found, or not a thread id
        mine = False
    if not mine:
        raise _deny(404, f"Thread {thread_id} not found")


def _in_batch() -> bool:
    request = current_request()
    return request is not None and request.path.rstrip("/") == "/runs/batch"


def _body_or(value: Any) -> int:
    """Bytes a write keeps: ``value``'s JSON, or the request's body when that is larger (a
    thread create's ``supersteps``, a state update's values the handlers do not see)."""
    return _body_or_bytes(json_bytes(value) if value is not None else 0)


def _body_or_bytes(nbytes: int) -> int:
    """``nbytes``, or the request's body when that is larger."""
    request = current_request()
    return max(nbytes, request.read if request is not None else 0)


async def _charge(ctx: Auth.types.AuthContext, key: str, nbytes: int, *, mode: str = "add") -> int:
    """Charge a write to the user's byte quota (403 beyond ``FACTDEBATE_MAX_BYTES_PER_USER``)."""
    me = _me(ctx)
    try:
        return await LEDGER.charge(me, key, nbytes, mode=mode)
    except QuotaExceeded as exc:
        raise _deny(403, exc.detail) from None
    except Exception as exc:  # noqa: BLE001  # the server's own API did not answer: fail closed
        raise _deny(503, f"cannot count the bytes of {me} ({type(exc).__name__}); retry") from None


async def _within_quota(ctx: Auth.types.AuthContext, kind: str, object_id: Any = None, *,
                        existing: bool | None = None) -> None:
    """Refuse (403) a create that would give the user more stored ``kind`` than the operator's
    limit (``FACTDEBATE_MAX_<KIND>_PER_USER``, factdebate.server.limits). A create naming an id
    that exists stores nothing new (the user's own: returned; another's: the filter's 409), so
    at the limit it passes; whether it exists is asked only there, unless the caller knows
    (``existing``)."""
    limit = LIMITS.quotas.get(kind, 0)
    if not limit:
        return
    me = _me(ctx)
    bounded = kind == "threads" and THREADS.active()  # below the quota: no count (OwnedBound)
    if bounded and THREADS.take(me, limit):
        return
    try:
        count = await owned_count(kind, me, OWNER)
        if count < limit:
            if bounded:
                THREADS.counted(me, count + 1)
            return
        if bounded:
            THREADS.counted(me, count)
        if object_id is not None and (existing if existing is not None
                                      else await exists(kind, object_id)):
            return
    except Exception as exc:  # noqa: BLE001  # fail closed, as the run admission does
        raise _deny(503, f"cannot count the {kind} of {me} ({type(exc).__name__}); retry") from None
    raise _deny(403, quota_refusal(kind, me, count, limit))


@auth.on.threads.create_run
async def on_run_create(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Check the run's settings and sizes, stamp it, and allow it only on the user's own thread
    and within the user's concurrent runs (429 beyond ``FACTDEBATE_MAX_RUNS_PER_USER``)."""
    kwargs = value.get("kwargs") or {}
    _checked(check_run_kwargs, kwargs, graph_of(value.get("assistant_id")))
    _checked(check_breakpoints, value, graph_of(value.get("assistant_id")))  # before it runs
    _stamp(ctx, value)
    if isinstance(kwargs.get("config"), dict):  # langgraph-api always sends one
        cap_recursion_limit(kwargs["config"], LIMITS)
    complete_run_input(value)  # one claim per run: omitted optional input keys do not leak
    add_model_metadata(value)  # model specs as top-level run metadata (trace filters)
    await add_trace_metadata(value)  # the CLI's root run name and metadata
    me = _me(ctx)
    thread = value.get("thread_id")
    if thread is not None and value.get("if_not_exists") == "create":  # may create (and keep) one
        await _within_quota(ctx, "threads", thread)
    kept_new = thread is None and not kwargs.get("temporary", True)  # the runtime makes one
    if kept_new:  # a stateless run that keeps its thread (POST /runs, /runs/batch, a cron)
        await _within_quota(ctx, "threads")
    elif thread is None:  # a temporary thread for the run: it counts until the run deletes it
        THREADS.created(me)
    configurable = (kwargs.get("config") or {}).get("configurable") or {}
    _refuse_missing_checkpoint(thread, configurable.get("checkpoint_id"),
                               configurable.get("checkpoint_ns", ""))  # time travel, a fork
    charge_to = thread_key(thread) if thread is not None else run_key(value.get("run_id"))
    charged = 0
    if thread is not None or kept_new:  # kept with the thread (a temporary one keeps nothing)
        run = [kwargs, value.get("metadata")]  # a batch's body holds several runs
        charged = await _charge(ctx, charge_to, json_bytes(run) if _in_batch() else _body_or(run))
        try:
            await _bound_history(ctx, thread)
        except Auth.exceptions.HTTPException:
            LEDGER.refund(me, charge_to, charged)
            raise
    try:
        already = await ADMISSION.admit(me, OWNER, LIMITS.runs_per_user, value.get("run_id"),
                                        None if thread is None else str(thread))
    except Exception as exc:  # noqa: BLE001  # the server's own API did not answer: fail closed
        raise _deny(503, f"cannot count the runs of {me} ({type(exc).__name__}); retry, or the "
                    f"operator sets {RUNS_ENV}=0 to turn the per-user limit off") from None
    if already is not None:
        LEDGER.refund(me, charge_to, charged)
        raise Auth.exceptions.HTTPException(
            status_code=429, headers={"Retry-After": "5"},
            detail=f"{me} has {already} runs pending or running on this server, its limit "
                   f"({RUNS_ENV}={LIMITS.runs_per_user}); wait for one to finish or cancel one")
    return _mine(ctx)


@auth.on.threads.update
async def on_thread_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Only the owner updates (state, metadata, cancel); ownership does not move. What the
    update keeps is charged to the thread (the body of a state update, which the handler does
    not see). A state update from a checkpoint the thread no longer holds is refused (404); an
    idle thread's history is pruned to its bound first and charged.

    A metadata patch never waits here: the runtime replaces the thread by its index in the thread
    list after this handler returns (see :func:`_before_route`)."""
    _no_owner_change(ctx, value)
    thread = value.get("thread_id")
    if thread is None or value.get("action") is not None:  # a cancel keeps nothing
        return _mine(ctx)
    if value.get("metadata") is not None:  # PATCH /threads/{id}
        if LEDGER.limit and not LEDGER.is_open(_me(ctx)):  # measuring would wait: fail closed
            raise _deny(503, f"cannot count the bytes of {_me(ctx)} yet; retry")
        await _charge(ctx, thread_key(thread), _body_or(value.get("metadata")))
        return _mine(ctx)
    request = current_request()  # a state update (or a cancel): a new checkpoint
    body = request.json_body() if request is not None else None
    if isinstance(body, dict):
        checkpoint = body.get("checkpoint") if isinstance(body.get("checkpoint"), dict) else {}
        _refuse_missing_checkpoint(thread, body.get("checkpoint_id") or
                                   checkpoint.get("checkpoint_id"),
                                   checkpoint.get("checkpoint_ns", ""))
    await _charge(ctx, thread_key(thread), _body_or(None))
    await _bound_history(ctx, thread)
    return _mine(ctx)


def _refuse_missing_checkpoint(thread: Any, checkpoint_id: Any, checkpoint_ns: Any) -> None:
    """404 for a fork or a run from a checkpoint the thread does not hold (LangGraph would
    start from empty state and answer 200)."""
    detail = missing_checkpoint(thread, checkpoint_id, str(checkpoint_ns or ""),
                                LIMITS.checkpoints_per_thread)
    if detail is not None:
        raise _deny(404, detail)


async def _bound_history(ctx: Auth.types.AuthContext, thread: Any) -> None:
    """Prune the thread's history to its bound and charge what it holds (403 past the quota)."""
    try:
        await bound_history(thread, LIMITS.checkpoints_per_thread, _me(ctx), LEDGER)
    except QuotaExceeded as exc:
        raise _deny(403, exc.detail) from None


@auth.on.threads.read  # type: ignore[arg-type]  # one filter for three value types
@auth.on.threads.delete  # type: ignore[arg-type]
@auth.on.threads.search
async def on_thread_access(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """The user's own threads and runs only; a deleted thread's bytes no longer count.

    The delete handler never waits: langgraph-runtime-inmem's ``Threads.delete`` calls it
    between finding the thread's index and popping it (see :func:`_before_route`). The bulk
    delete's check (``POST /threads/prune``, ``thread_ids``) runs before any thread is removed,
    so it may."""
    if ctx.action == "delete" and not value.get("run_id") and LEDGER.limit:
        me = _me(ctx)
        if value.get("thread_ids"):
            await _link_kept_runs(me, list(value["thread_ids"]))
        elif value.get("thread_id") is not None:
            LEDGER.free(me, thread_key(value["thread_id"]))  # with its history, crons, runs
    return _mine(ctx)


async def _link_kept_runs(me: str, threads: list[Any]) -> None:
    """Link each thread to the stateless runs that made it (charged to the run: the runtime
    chooses the thread's id after the handler), so deleting the thread frees them."""
    book = LEDGER.book(me)
    if not any(key.startswith("run:") for key in book):
        return
    for thread in threads:
        try:
            runs = await loopback().runs.list(str(thread), limit=1000)
        except Exception:  # noqa: BLE001, S112  # not found or not a thread id: nothing to link
            continue
        for run in runs:
            if run_key(run["run_id"]) in book:
                LEDGER.link(me, thread_key(thread), run_key(run["run_id"]))


# Assistants
@auth.on.assistants.create
async def on_assistant_create(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """An assistant's settings become run settings: the same checks as a run. The filter turns a
    client-chosen ``assistant_id`` of another user's (or a graph's own) assistant into 409."""
    _checked(check_assistant, value)
    _stamp(ctx, value)
    await _within_quota(ctx, "assistants", value.get("assistant_id"))
    if LEDGER.limit and not await exists("assistants", value.get("assistant_id")):
        await _charge(ctx, assistant_key(value.get("assistant_id")), _body_or(value),
                      mode="new")  # the body: the handler does not see the description
    return _mine(ctx)


@auth.on.assistants.update
async def on_assistant_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Only the owner updates; the graphs' own assistants have none, so nobody does."""
    _checked(check_assistant, value)
    _no_owner_change(ctx, value)
    await _charge(ctx, assistant_key(value.get("assistant_id")), _body_or(value))  # a version
    return _mine(ctx)


@auth.on.assistants.read  # type: ignore[arg-type]  # one filter for two value types
@auth.on.assistants.search
async def on_assistant_read(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """The user's own assistants and the graphs' own."""
    return {"$or": [_mine(ctx), {SYSTEM_FILTER_KEY: "system"}]}


@auth.on.assistants.delete
async def on_assistant_delete(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Only the owner deletes."""
    LEDGER.free(_me(ctx), assistant_key(value.get("assistant_id")))
    return _mine(ctx)


# Crons: a cron creates runs later, as its owner.
@auth.on.crons.create
async def on_cron_create(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Check the payload; the scheduler runs it as this user (it reads the user from it)."""
    _checked(check_cron_payload, value.get("payload"))
    _stamp(ctx, value)
    _run_as_me(ctx, value.get("payload"))
    await _within_quota(ctx, "crons")
    cron = cron_key(value.get("cron_id"))
    await _charge(ctx, cron, _body_or_bytes(cron_bytes(value.get("payload"),
                                                       value.get("metadata"))), mode="new")
    if value.get("thread_id") is not None:  # the runtime deletes it with its thread
        LEDGER.link(_me(ctx), thread_key(value["thread_id"]), cron)
    return _mine(ctx)


def _run_as_me(ctx: Auth.types.AuthContext, payload: dict[str, Any] | None) -> None:
    """The scheduler takes a cron run's user from ``config.configurable.langgraph_auth_user``."""
    if payload is None:
        return
    configurable = payload.setdefault("config", {}).setdefault("configurable", {})
    configurable["langgraph_auth_user"] = {"identity": _me(ctx), "permissions": []}


@auth.on.crons.update
async def on_cron_update(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Only the owner updates, with the same payload checks; ownership does not move."""
    _checked(check_cron_payload, value.get("payload"))
    _no_owner_change(ctx, value)
    _run_as_me(ctx, value.get("payload"))
    await _charge(ctx, cron_key(value.get("cron_id")),
                  _body_or_bytes(cron_bytes(value.get("payload"), value.get("metadata"))))
    return _mine(ctx)


@auth.on.crons.read  # type: ignore[arg-type]  # one filter for three value types
@auth.on.crons.delete  # type: ignore[arg-type]
@auth.on.crons.search
async def on_cron_access(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """The user's own crons only; a deleted cron's bytes no longer count."""
    if ctx.action == "delete":
        LEDGER.free(_me(ctx), cron_key(value.get("cron_id")))
    return _mine(ctx)


# Store: namespaces start with the user's identity.
@auth.on.store
async def on_store(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Scope every store operation to ``(identity, ...)``."""
    namespace = tuple(value.get("namespace") or ())
    if not namespace and ctx.action in ("search", "list_namespaces"):
        value["namespace"] = (_me(ctx),)
        return
    if not namespace or namespace[0] != _me(ctx):
        raise _deny(403, f"store namespaces of {_me(ctx)!r} start with {_me(ctx)!r}; "
                    f"use [{_me(ctx)!r}, ...]")
    key = store_key(namespace, value.get("key"))
    if ctx.action == "delete" or (ctx.action == "put" and value.get("value") is None):
        LEDGER.free(_me(ctx), key)
    elif ctx.action == "put":  # a put replaces the item, and its charge
        await _charge(ctx, key, _body_or([namespace, value.get("key"), value.get("value")]),
                      mode="set")
