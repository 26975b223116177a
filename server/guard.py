"""ASGI middleware of the whole LangGraph server (the custom app's middleware runs on every route).

langgraph-api applies the middleware of the ``http.app`` named in ``langgraph.json`` to all of its
routes, before its own (CORS, access log, auth). :class:`ServerGuard` adds, without reading or
buffering any body but those of the history and state reads below (streams stay streams):

* **No keys, no Studio bypass.** Under ``langgraph dev`` a request with ``x-auth-scheme:
  langsmith`` skips the ``authenticate`` handler (Studio's local bypass). On a server without API
  keys that bypass would be the only open door of a deny-by-default server, so it is refused
  with the same 401 as a plain request, unless ``FACTDEBATE_AUTH=off``.
* **Request size.** A request body above ``FACTDEBATE_MAX_REQUEST_BYTES`` (default 1 MiB) is
  refused with 413: at once when its ``Content-Length`` says so, or as soon as a chunked body
  passes the limit (the route sees a disconnect, the client gets the 413).
* **Body bytes.** The bytes a request's body holds are counted for the byte quota of the auth
  handlers (:class:`factdebate.server.usage.RequestInfo`): a state update's values are not
  passed to them.
* **History and state reads** (``/threads/{id}/history``, ``/threads/{id}/state/{checkpoint}``,
  ``/threads/{id}/state/checkpoint``) pass :class:`factdebate.server.reads.ReadCheck` first: a
  body or query langgraph-api cannot read is refused with 422 naming the field, a read at a
  checkpoint the caller's thread does not hold with 404; so is a state update's checkpoint
  object (these bodies alone are read whole here, within the size limit, and handed on).
* **Unhandled errors.** An exception no route or handler answered, raised before any response
  started, is logged (with its traceback, through the server's redacting log handlers) and
  answered with a JSON 500 here, so the keep-alive connection stays open (Starlette's own 500
  re-raises and the server then resets the connection); one raised while a response is under
  way (a stream) ends that response as before.
* **Browser headers on ``/app``** (the web page and its JSON routes): a Content-Security-Policy
  that allows only the page's own files and API (the page has no inline script or style, no CDN),
  ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY`` (no framing, no clickjacking),
  ``Referrer-Policy: no-referrer`` (links to evidence sources carry no server URL),
  ``X-Content-Type-Options: nosniff``. The API routes are left alone (Studio calls them cross-origin;
  ``/docs`` loads its viewer from a CDN).

The server's own in-process requests (``root_path`` ``/noauth``:
:func:`factdebate.server.loopback.is_loopback`) pass untouched: they carry no key, their bodies
are the server's own and nothing reads their sizes (the auth handlers do not run on them).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from factdebate.server.auth import LIMITS, NO_KEYS, studio_bypass_refused
from factdebate.server.limits import REQUEST_BYTES_ENV
from factdebate.server.loopback import is_loopback
from factdebate.server.reads import ReadCheck, route_of
from factdebate.server.usage import REQUEST, RequestInfo

log = logging.getLogger("factdebate.server")
UNHANDLED = "internal server error: the server's log names the cause"
"""The detail of a 500 the guard answers for an error no handler answered."""
PAGE_PREFIX = "/app"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
PAGE_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
)

Scope = dict[str, Any]


def _is_page(path: str) -> bool:
    return path == PAGE_PREFIX or path.startswith(PAGE_PREFIX + "/")


class ServerGuard:
    """Pure ASGI middleware (see the module docstring)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Refuse the Studio bypass on a key-less server and oversized bodies; add the page's
        headers on ``/app``."""
        if scope["type"] not in ("http", "websocket") or is_loopback(scope):
            await self.app(scope, receive, send)  # the server's own requests: its own sizes
            return
        studio = any(k == b"x-auth-scheme" and v.strip().lower() == b"langsmith"
                     for k, v in scope.get("headers") or ())
        if studio and studio_bypass_refused():
            await _refuse(scope, send)
            return
        if scope["type"] == "http" and _is_page(scope.get("path", "")):
            send = _with_headers(send)
        if scope["type"] == "http":
            info = RequestInfo(method=scope.get("method", ""), path=scope.get("path", ""))
            token = REQUEST.set(info)  # the auth handlers read the route and the body size
            app = ReadCheck(self.app) if route_of(info.method, info.path) else self.app
            try:
                await _bounded(app, scope, receive, send, LIMITS.request_bytes, info)
            finally:
                REQUEST.reset(token)
            return
        await self.app(scope, receive, send)


async def _bounded(app: Any, scope: Scope, receive: Any, send: Any, limit: int,
                   info: RequestInfo) -> None:
    """Run ``app`` reading at most ``limit`` body bytes (0: any number); beyond them answer 413.
    ``info.read`` counts the bytes read."""
    declared = next((v for k, v in scope.get("headers") or () if k == b"content-length"), None)
    if limit and declared is not None and declared.strip().isdigit() and int(declared) > limit:
        await _too_large(send, limit)
        return
    state = {"read": 0, "over": False, "started": False}

    async def counted() -> dict[str, Any]:
        if state["over"]:
            return {"type": "http.disconnect"}
        message = await receive()
        if message["type"] == "http.request":
            state["read"] += len(message.get("body", b""))
            info.received(message.get("body", b""))
            if limit and state["read"] > limit:
                state["over"] = True
                return {"type": "http.disconnect"}
        return message

    async def tracked(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            state["started"] = True
        await send(message)

    try:
        await app(scope, counted, tracked)
    except Exception:
        if state["started"]:
            raise  # a response under way: the server closes the connection, as it does
        if not state["over"]:  # an error before any answer: a 500 here keeps the connection
            log.error("unhandled error answering %s %s", scope.get("method"), scope.get("path"),
                      exc_info=True)
            await _json(send, 500, {"detail": UNHANDLED})
            return
    if state["over"] and not state["started"]:
        await _too_large(send, limit)


async def _too_large(send: Any, limit: int) -> None:
    await _json(send, 413, {"detail": f"the request body is larger than this server's limit of "
                                      f"{limit} bytes ({REQUEST_BYTES_ENV})"})


def _with_headers(send: Any) -> Any:
    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            names = {k.lower() for k, _ in message.get("headers") or ()}
            extra = [(k, v) for k, v in PAGE_HEADERS if k not in names]
            message = {**message, "headers": [*(message.get("headers") or ()), *extra]}
        await send(message)

    return wrapped


async def _refuse(scope: Scope, send: Any) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 4401, "reason": "no API keys configured"})
        return
    await _json(send, 401, {"detail": NO_KEYS})


async def _json(send: Any, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
