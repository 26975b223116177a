"""The server's own in-process requests pass the edge middlewares untouched; nothing else does.

langgraph_sdk's client without a URL (``server/loopback.py``) sends its requests with ASGI
``root_path`` ``/noauth``, which a request from outside cannot set. Their replies go to the
server's own code, so :class:`EgressFilter` and :class:`ServerGuard` let them through as they are;
a request from outside - whatever its path - is filtered and bounded as before.
"""

from __future__ import annotations

from typing import Any

import pytest

from factdebate.server.egress import EgressFilter
from factdebate.server.guard import ServerGuard
from factdebate.server.loopback import is_loopback

KEY = "sk-op-5f0c7a1e9b2d4c6a8e0f1a2b"


@pytest.fixture(autouse=True)
def operator_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


async def replying_app(scope: Any, receive: Any, send: Any) -> None:
    body = f'{{"echo": "{KEY}"}}'.encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def scope(root_path: str, path: str = "/threads/t/state") -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": path, "root_path": root_path,
            "headers": [], "query_string": b""}


async def reply(app: Any, request: dict[str, Any]) -> bytes:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(request, receive, send)
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@pytest.mark.parametrize(("root_path", "ours"), [
    ("/noauth", True), ("/noauth/lgp", True),  # a mount prefix appends to it
    ("", False), ("/noauthx", False), ("/api", False)])
def test_only_the_in_process_root_path_is_loopback(root_path: str, ours: bool) -> None:
    assert is_loopback(scope(root_path)) is ours


async def test_the_egress_filter_passes_loopback_replies_and_filters_every_other() -> None:
    edge = EgressFilter(replying_app)
    assert KEY.encode() in await reply(edge, scope("/noauth"))
    for outside in (scope(""), scope("", "/noauth/threads/t/state"), scope("/noauthx")):
        body = await reply(edge, outside)
        assert KEY.encode() not in body and b"echo" in body


async def test_the_guard_leaves_loopback_requests_to_the_server(monkeypatch) -> None:
    """A loopback request is not bounded (its body is the server's own) and sets no request
    info; an outside request with a body above the limit is refused with 413."""
    import dataclasses

    from factdebate.server import guard

    monkeypatch.setattr(guard, "LIMITS", dataclasses.replace(guard.LIMITS, request_bytes=10))
    big = {**scope("/noauth"), "method": "POST",
           "headers": [(b"content-length", b"1000")]}
    assert KEY.encode() in await reply(ServerGuard(replying_app), big)
    outside = {**big, "root_path": ""}
    sent = await reply(ServerGuard(replying_app), outside)
    assert KEY.encode() not in sent and b"larger than this server's limit of 10 bytes" in sent
