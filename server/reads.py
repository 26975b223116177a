"""Reads of a thread's past (history, state at a checkpoint) checked before langgraph-api.

langgraph-api validates these bodies against its OpenAPI schema, which leaves shapes its handlers
and the in-memory runtime cannot read: ``POST /threads/{id}/history`` with ``before`` as an object
without ``configurable`` (the schema's own ``CheckpointConfig`` shape, ``{"checkpoint_id": ...}``)
or with ``configurable`` that is no object, or a ``checkpoint_id`` that is no string, ends in a
``KeyError``/``AttributeError``/``TypeError`` (500, and the connection reset); the schema lets any
extra key of ``checkpoint`` through into the ``configurable`` LangGraph reads (or updates) the
thread with; and a read at a checkpoint the
thread does not hold (removed by the history bound, :mod:`factdebate.server.usage`, or never there)
answers 200 with empty values. :class:`ReadCheck`, run by :class:`factdebate.server.guard.ServerGuard`
for these routes, answers them first:

* ``POST /threads/{id}/history``: a JSON object of ``limit`` (an integer from 1 to
  :data:`MAX_LIMIT`), ``before`` (a checkpoint id, or an object naming one with ``checkpoint_id``,
  or ``{"configurable": {"checkpoint_id": ...}}``), ``metadata`` (an object, nested at most
  :data:`MAX_DEPTH` deep, integers within 64 bits, finite numbers) and ``checkpoint`` (an object of
  ``checkpoint_id``, ``checkpoint_ns``, ``checkpoint_map``, ``thread_id``); ``null`` is the same as
  leaving a field out. The body langgraph-api then reads is the checked one, rewritten to the
  shape its handler and runtime read (``before`` as ``{"configurable": {"checkpoint_id": ...}}``);
* ``GET /threads/{id}/history``: ``limit`` (digits, 1 to :data:`MAX_LIMIT`) and ``before`` (a
  checkpoint id) in the query;
* ``GET /threads/{id}/state/{checkpoint_id}`` and ``POST /threads/{id}/state/checkpoint``
  (``checkpoint`` required, ``subgraphs`` a boolean);
* ``POST /threads/{id}/state`` (a state update): its ``checkpoint`` and ``checkpoint_id`` only,
  which langgraph-api merges into the update's ``configurable`` (the rest is its schema's; a
  checkpoint the thread does not hold is the auth handler's 404).

Anything else is refused with 422 naming the field and what it must be (quoting at most a short
part of a value). A checkpoint id (or a namespace) the request names that the caller's own thread
does not hold is refused with 404 naming it, as a fork or a run from it is: never empty values, and
never a page of history before a cursor that is gone. A thread that is not the caller's (or not a
thread) is left to langgraph-api, whose answer is the same "not found" as for any other read of it;
so is a request without a valid key (401/403 first, whatever its body). The runtime's checkpoints
are read through :func:`factdebate.server.usage.missing_checkpoint` (the in-memory runtime of
``langgraph dev``; on another runtime only the shapes are checked).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from langgraph_sdk import Auth

from factdebate.core.json_input import loads
from factdebate.server.auth import LIMITS, STUDIO_IDENTITY, authenticate
from factdebate.server.loopback import loopback
from factdebate.server.policy import MAX_SHOWN_CHARS, shown
from factdebate.server.usage import missing_checkpoint, missing_namespace

MAX_LIMIT = 1000
"""Most states one history request may ask for (langgraph-api's own schema maximum)."""
MAX_DEPTH = 16
"""Deepest nesting of a history ``metadata`` filter (checkpoint metadata is a flat record)."""
MAX_ID_CHARS = 256
"""Longest checkpoint id or namespace a request may name (an id is 36 characters)."""
MAX_MAP_ENTRIES = 64
"""Most entries of a ``checkpoint_map`` (one per nesting level of a subgraph)."""
INT64 = 1 << 63
CHECKPOINT_KEYS = ("checkpoint_id", "checkpoint_ns", "checkpoint_map", "thread_id")
"""What a checkpoint object may hold (the ``checkpoint`` of a state snapshot, as returned)."""
HISTORY_KEYS = ("limit", "before", "metadata", "checkpoint")
STATE_KEYS = ("checkpoint", "subgraphs")

_HISTORY = re.compile(r"^/threads/([^/]+)/history/?$")
_STATE_AT = re.compile(r"^/threads/([^/]+)/state/([^/]+)/?$")
_STATE = re.compile(r"^/threads/([^/]+)/state/?$")
BODY_ROUTES = ("history", "state-post", "state-write")
"""The checked routes whose body is read here (and handed on)."""

Scope = dict[str, Any]


class BadRead(Exception):
    """A history or state read the server does not pass on (422, or 404 for a checkpoint)."""

    def __init__(self, field: str, detail: str, status: int = 422) -> None:
        """``field``: the refused field; ``detail``: the one-line answer."""
        super().__init__(detail)
        self.field = field
        self.detail = detail
        self.status = status


@dataclass
class Read:
    """A checked read: its thread, the checkpoints it names (namespace, id; id None: the namespace
    alone) and the body langgraph-api gets (None: the request's own, unchanged)."""

    thread_id: str
    names: list[tuple[str, str | None]] = field(default_factory=list)
    body: bytes | None = None


def route_of(method: str, path: str) -> str | None:
    """Which checked request ``method path`` is (``history``, ``history-query``, ``state-at``,
    ``state-post``, ``state-write``), or None."""
    if method == "POST" and _STATE.match(path):
        return "state-write"
    if _HISTORY.match(path):
        return {"POST": "history", "GET": "history-query"}.get(method)
    found = _STATE_AT.match(path)
    if found is None:
        return None
    if method == "POST" and found.group(2) == "checkpoint":
        return "state-post"
    return "state-at" if method == "GET" else None


def _thread(path: str) -> str:
    found = _HISTORY.match(path) or _STATE_AT.match(path) or _STATE.match(path)
    assert found is not None
    return found.group(1)


def quoted(value: Any) -> str:
    """``value`` as JSON for a refusal, cut to :data:`~factdebate.server.policy.MAX_SHOWN_CHARS`
    characters (its length said when cut)."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return shown(value)
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"{text[:MAX_SHOWN_CHARS]}... ({len(text)} characters)"


def _refuse(name: str, must: str, value: Any) -> BadRead:
    return BadRead(name, f"{name} must be {must}, not {quoted(value)}")


def _text(name: str, value: Any, *, empty: bool = False) -> str:
    """A checkpoint id or namespace: a string of at most :data:`MAX_ID_CHARS` characters without
    control characters (``empty``: "" allowed)."""
    if (not isinstance(value, str) or len(value) > MAX_ID_CHARS or (not value and not empty)
            or any(ord(c) < 32 or 0x7f <= ord(c) < 0xa0 for c in value)):
        what = "a string" if empty else "a non-empty string"
        raise _refuse(name, f"{what} of at most {MAX_ID_CHARS} characters without control "
                            "characters", value)
    return value


def _absent(value: Any) -> bool:
    return value is None


def checkpoint_object(name: str, value: Any, thread_id: str) -> dict[str, Any]:
    """A checkpoint object (``checkpoint`` of a history or state read): only the keys of
    :data:`CHECKPOINT_KEYS`, each of its type; a ``thread_id`` must be the thread read."""
    if not isinstance(value, Mapping):
        raise _refuse(name, "an object with checkpoint_id and checkpoint_ns", value)
    stray = [k for k in value if k not in CHECKPOINT_KEYS]
    if stray:
        raise BadRead(f"{name}.{stray[0]}"[:80], f"{name} holds {quoted(stray[0])}, which is not a "
                      f"checkpoint field; use {', '.join(CHECKPOINT_KEYS)}")
    out: dict[str, Any] = {}
    if not _absent(value.get("checkpoint_id")):
        out["checkpoint_id"] = _text(f"{name}.checkpoint_id", value["checkpoint_id"])
    if not _absent(value.get("checkpoint_ns")):
        out["checkpoint_ns"] = _text(f"{name}.checkpoint_ns", value["checkpoint_ns"], empty=True)
    if not _absent(value.get("thread_id")) and value["thread_id"] != thread_id:
        raise _refuse(f"{name}.thread_id", f"this thread's id ({thread_id}) or left out",
                      value["thread_id"])
    cmap = value.get("checkpoint_map")
    if not _absent(cmap):
        if (not isinstance(cmap, Mapping) or len(cmap) > MAX_MAP_ENTRIES
                or not all(isinstance(v, str) and len(k) <= MAX_ID_CHARS
                           and len(v) <= MAX_ID_CHARS for k, v in cmap.items())):
            raise _refuse(f"{name}.checkpoint_map", f"an object of at most {MAX_MAP_ENTRIES} "
                          "namespaces to checkpoint ids (strings)", cmap)
        out["checkpoint_map"] = dict(cmap)
    return out


def before_id(value: Any, thread_id: str) -> str | None:
    """The checkpoint id of a history ``before``: a string, ``{"checkpoint_id": ...}`` (a
    checkpoint object) or ``{"configurable": {"checkpoint_id": ...}}``."""
    if _absent(value):
        return None
    if isinstance(value, str):
        return _text("before", value)
    must = ("a checkpoint id, an object with checkpoint_id, or "
            "{\"configurable\": {\"checkpoint_id\": ...}}")
    if isinstance(value, Mapping) and set(value) == {"configurable"}:
        inner = checkpoint_object("before.configurable", value["configurable"], thread_id)
    elif isinstance(value, Mapping):
        inner = checkpoint_object("before", value, thread_id)
    else:
        raise _refuse("before", must, value)
    if "checkpoint_id" not in inner:
        raise _refuse("before", must, value)
    return str(inner["checkpoint_id"])


def limit_of(value: Any, name: str = "limit") -> int | None:
    """A history ``limit``: an integer from 1 to :data:`MAX_LIMIT` (a whole float too)."""
    if _absent(value):
        return None
    if (isinstance(value, float) and math.isfinite(value) and value.is_integer()
            and 1 <= value <= MAX_LIMIT):
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise _refuse(name, f"an integer from 1 to {MAX_LIMIT}", value)
    return value


def check_metadata(value: Any, name: str = "metadata", depth: int = 0) -> None:
    """A history ``metadata`` filter: an object; inside it, at most :data:`MAX_DEPTH` levels,
    integers within 64 bits, finite numbers."""
    if depth == 0 and not isinstance(value, Mapping):
        raise _refuse(name, "an object of metadata keys and the values to match", value)
    if depth > MAX_DEPTH:
        raise BadRead(name, f"{name} is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if not -INT64 <= value < INT64:
            raise _refuse(name, "an integer within 64 bits", value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _refuse(name, "a finite number", value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_metadata(item, f"{name}.{key}"[:80], depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_metadata(item, f"{name}[{i}]"[:80], depth + 1)


def _dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


def check_read(method: str, path: str, query: str = "", body: bytes = b"") -> Read | None:
    """The checked form of a history or state read (None: not one of them).

    Raises:
        BadRead: 422 naming the field and what it must be.
    """
    route = route_of(method, path)
    if route is None:
        return None
    thread = _thread(path)
    read = Read(thread)
    if route == "history-query":
        for key, value in parse_qsl(query, keep_blank_values=True):
            if key == "limit" and not (value.isascii() and value.isdigit() and len(value) <= 6
                                       and 1 <= int(value) <= MAX_LIMIT):
                raise _refuse("limit", f"an integer from 1 to {MAX_LIMIT}", value)
            if key == "before" and value:
                read.names.append(("", _text("before", value)))
        return read
    if route == "state-at":
        read.names.append(("", _text("checkpoint_id", _STATE_AT.match(path).group(2))))
        return read
    if route == "state-write":  # the checkpoint a state update forks from (its 404: the auth
        data = _strict(body, ())  # handler); the rest is langgraph-api's schema
        if not _absent(data.get("checkpoint")):
            checkpoint_object("checkpoint", data["checkpoint"], thread)
        if not _absent(data.get("checkpoint_id")):
            _text("checkpoint_id", data["checkpoint_id"])
        return read
    if route == "state-post":
        data = _strict(body, STATE_KEYS)
        if _absent(data.get("checkpoint")):
            raise BadRead("checkpoint", "checkpoint is required: the checkpoint to read, e.g. "
                          "{\"checkpoint_id\": ...} from POST /threads/{id}/history")
        checkpoint = checkpoint_object("checkpoint", data["checkpoint"], thread)
        out: dict[str, Any] = {"checkpoint": checkpoint}
        if not _absent(data.get("subgraphs")):
            if not isinstance(data["subgraphs"], bool):
                raise _refuse("subgraphs", "true or false", data["subgraphs"])
            out["subgraphs"] = data["subgraphs"]
        read.names.extend(_named(checkpoint))
        read.body = _dumps(out)
        return read
    data = _strict(body, HISTORY_KEYS)
    out = {}
    limit = limit_of(data.get("limit"))
    if limit is not None:
        out["limit"] = limit
    checkpoint = {}
    if not _absent(data.get("checkpoint")):
        checkpoint = checkpoint_object("checkpoint", data["checkpoint"], thread)
        out["checkpoint"] = checkpoint
        read.names.extend(_named(checkpoint))
    before = before_id(data.get("before"), thread)
    if before is not None:
        out["before"] = {"configurable": {"checkpoint_id": before}}
        read.names.append((checkpoint.get("checkpoint_ns", ""), before))
    if not _absent(data.get("metadata")):
        check_metadata(data["metadata"])
        out["metadata"] = data["metadata"]
    read.body = _dumps(out)
    return read


def _strict(body: bytes, keys: tuple[str, ...]) -> dict[str, Any]:
    """The body as a JSON object of ``keys`` (none: any keys; an empty body: ``{}``)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRead("body", "the body must be UTF-8 JSON") from None
    return _json_object_strict(text, keys) if text.strip() else {}


def _json_object_strict(text: str, keys: tuple[str, ...]) -> dict[str, Any]:
    try:
        data = _loads_strict(text)
    except ValueError as exc:
        raise BadRead("body", f"the body must be a JSON object ({str(exc)[:120]})") from None
    if not isinstance(data, dict):
        raise BadRead("body", f"the body must be a JSON object of {', '.join(keys)}, not "
                      f"{quoted(data)}")
    stray = [k for k in data if keys and k not in keys]
    if stray:
        raise BadRead(stray[0][:80], f"{quoted(stray[0])} is not a field of this request; its "
                      f"fields: {', '.join(keys)}")
    return data


def _loads_strict(text: str) -> Any:
    """``text`` as JSON through the project's depth-bounded decoder; NaN/Infinity refused."""
    data = loads(text)
    _finite(data, 0)
    return data


def _finite(value: Any, depth: int) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("NaN and Infinity are not JSON")
    if depth > 64:
        return
    if isinstance(value, dict):
        for item in value.values():
            _finite(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _finite(item, depth + 1)


def _named(checkpoint: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """The (namespace, id) a checkpoint object names: its id in its namespace, or a namespace
    other than the root alone."""
    ns = str(checkpoint.get("checkpoint_ns") or "")
    if checkpoint.get("checkpoint_id"):
        return [(ns, str(checkpoint["checkpoint_id"]))]
    return [(ns, None)] if ns else []


def missing(read: Read) -> str | None:
    """The 404 detail when the thread does not hold a checkpoint (or namespace) ``read`` names."""
    for ns, checkpoint_id in read.names:
        if checkpoint_id is None:
            detail = missing_namespace(read.thread_id, ns, LIMITS.checkpoints_per_thread)
        else:
            detail = missing_checkpoint(read.thread_id, checkpoint_id, ns,
                                        LIMITS.checkpoints_per_thread, action="read")
        if detail is not None:
            return detail
    return None


async def identity_of(scope: Scope) -> str | None:
    """The caller's identity by the server's own ``authenticate`` (Studio's bypass: its
    identity), or None when the request would be refused (langgraph-api answers it)."""
    headers = {k.lower(): v for k, v in scope.get("headers") or ()}
    if headers.get(b"x-auth-scheme", b"").strip().lower() == b"langsmith":
        return STUDIO_IDENTITY  # the guard refused it already on a server without keys
    try:
        user = await authenticate(headers)
    except Auth.exceptions.HTTPException:
        return None
    return str(user["identity"])


async def owns(identity: str, thread_id: str) -> bool:
    """Whether ``thread_id`` is a thread of ``identity`` (its ``metadata.owner``)."""
    from factdebate.server.auth import OWNER

    try:
        thread = await loopback().threads.get(thread_id)
    except Exception:  # noqa: BLE001  # not found, or not a thread id: langgraph-api answers
        return False
    return (thread.get("metadata") or {}).get(OWNER) == identity


class ReadCheck:
    """ASGI app wrapper: history and state reads checked (module docstring) before ``app``."""

    def __init__(self, app: Any) -> None:
        """Wrap ``app`` (the rest of the server)."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Answer a malformed read (422) or a read at a checkpoint the thread does not hold (404);
        pass the rest on, a history or state body in its checked form."""
        method, path = scope.get("method", ""), scope.get("path", "")
        route = route_of(method, path) if scope["type"] == "http" else None
        if route is None:
            await self.app(scope, receive, send)
            return
        body = b""
        if route in BODY_ROUTES:
            chunks: list[bytes] = []
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client left, or the body is over the size limit (the guard)
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body = b"".join(chunks)
        identity = await identity_of(scope)
        if identity is None:  # 401/403 first, whatever the body
            await self.app(scope, _replay(body, receive) if route in BODY_ROUTES else receive,
                           send)
            return
        try:
            read = check_read(method, path, (scope.get("query_string") or b"").decode("latin-1"),
                              body)
        except BadRead as exc:
            await _answer(send, exc.status, exc.detail)
            return
        assert read is not None
        if read.names:
            detail = missing(read)
            if detail is not None and await owns(identity, read.thread_id):
                await _answer(send, 404, detail)
                return
        if read.body is not None:
            body = read.body
            headers = [(k, v) for k, v in scope.get("headers") or () if k.lower() not in (
                b"content-length", b"transfer-encoding")]
            headers.append((b"content-length", str(len(body)).encode()))
            scope = {**scope, "headers": headers}
        if route in BODY_ROUTES:
            receive = _replay(body, receive)
        await self.app(scope, receive, send)


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that gives ``body`` once, then waits on the client (its disconnect)."""
    sent = False

    async def replayed() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _answer(send: Any, status: int, detail: str) -> None:
    payload = json.dumps({"detail": detail}, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})
