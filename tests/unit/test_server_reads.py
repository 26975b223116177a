"""History and state reads checked before langgraph-api (``factdebate.server.reads``): each shape
is passed on in the form langgraph-api and the in-memory runtime read, or refused with 422 naming
the field; a checkpoint the thread does not hold is named for the 404."""

from __future__ import annotations

import json
from typing import Any

import pytest

from factdebate.server.reads import MAX_LIMIT, BadRead, ReadCheck, check_read, route_of

T = "0a1b2c3d-0000-4000-8000-000000000001"
HISTORY = f"/threads/{T}/history"


def history(body: Any) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    read = check_read("POST", HISTORY, "", raw)
    assert read is not None and read.body is not None
    return json.loads(read.body), read.names


@pytest.mark.parametrize(("before", "named"), [
    ("c1", "c1"),
    ({"checkpoint_id": "c1"}, "c1"),
    ({"checkpoint_id": "c1", "checkpoint_ns": "", "thread_id": T, "checkpoint_map": None}, "c1"),
    ({"configurable": {"checkpoint_id": "c1"}}, "c1"),
])
def test_every_shape_of_before_is_handed_on_as_the_runtime_reads_it(before: Any, named: str):
    body, names = history({"before": before, "limit": 2})
    assert body == {"limit": 2, "before": {"configurable": {"checkpoint_id": named}}}
    assert names == [("", named)]


@pytest.mark.parametrize(("body", "field"), [
    ({"before": {}}, "before"), ({"before": {"configurable": 1}}, "before.configurable"),
    ({"before": {"configurable": {}}}, "before"), ({"before": []}, "before"),
    ({"before": 7}, "before"), ({"before": True}, "before"),
    ({"before": {"configurable": {"checkpoint_id": 5}}}, "before.configurable.checkpoint_id"),
    ({"before": {"checkpoint_id": "c", "thread_id": "other"}}, "before.thread_id"),
    ({"before": "a\x00b"}, "before"), ({"before": "x" * 300}, "before"),
    ({"limit": 0}, "limit"), ({"limit": -1}, "limit"), ({"limit": MAX_LIMIT + 1}, "limit"),
    ({"limit": 10 ** 30}, "limit"), ({"limit": "5"}, "limit"), ({"limit": 1.5}, "limit"),
    ({"limit": True}, "limit"),
    ({"metadata": 1}, "metadata"), ({"metadata": [1]}, "metadata"),
    ({"metadata": {"step": 10 ** 30}}, "metadata.step"),
    ({"checkpoint": "x"}, "checkpoint"), ({"checkpoint": {"__pregel_read": 1}},
                                          "checkpoint.__pregel_read"),
    ({"checkpoint": {"checkpoint_map": {"a": 1}}}, "checkpoint.checkpoint_map"),
    ({"limt": 1}, "limt"), ([], "body"), ("x", "body"), (b"null", "body"),
    (b"{nope", "body"), (b'{"limit": NaN}', "body"), (b"\xff", "body"),
    (b"[" * 5000 + b"]" * 5000, "body"),
])
def test_a_shape_the_runtime_cannot_read_is_422_naming_its_field(body: Any, field: str):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(BadRead) as info:
        check_read("POST", HISTORY, "", raw)
    assert info.value.status == 422 and info.value.field == field, info.value.detail
    assert field.split(".")[0] in info.value.detail or field == "body"
    assert len(info.value.detail) < 400


def test_metadata_nested_past_the_bound_is_refused_and_within_it_passes():
    deep: Any = 1
    for _ in range(40):
        deep = {"a": deep}
    with pytest.raises(BadRead, match="nested deeper"):
        check_read("POST", HISTORY, "", json.dumps({"metadata": deep}).encode())
    body, _ = history({"metadata": {"a": {"b": [1, None, "\u202e"]}}, "limit": 2.0})
    assert body == {"metadata": {"a": {"b": [1, None, "\u202e"]}}, "limit": 2}


def test_nulls_and_an_empty_body_are_fields_left_out():
    assert history(b"") == ({}, [])
    assert history({"before": None, "limit": None, "metadata": None, "checkpoint": None}) == ({},
                                                                                              [])


def test_a_checkpoint_or_namespace_a_read_names_is_listed_for_the_404():
    assert history({"checkpoint": {"checkpoint_ns": "turn:1"}})[1] == [("turn:1", None)]
    assert history({"checkpoint": {"checkpoint_ns": "turn:1", "checkpoint_id": "c"},
                    "before": "b"})[1] == [("turn:1", "c"), ("turn:1", "b")]
    assert check_read("GET", f"/threads/{T}/state/c9").names == [("", "c9")]
    assert check_read("GET", HISTORY, "limit=3&before=c8").names == [("", "c8")]
    read = check_read("POST", f"/threads/{T}/state/checkpoint", "",
                      b'{"checkpoint": {"checkpoint_id": "c7", "thread_id": "' + T.encode()
                      + b'"}, "subgraphs": true}')
    assert read.names == [("", "c7")]
    assert json.loads(read.body) == {"checkpoint": {"checkpoint_id": "c7"}, "subgraphs": True}


@pytest.mark.parametrize(("method", "path", "query", "body", "field"), [
    ("GET", HISTORY, "limit=-1", b"", "limit"), ("GET", HISTORY, "limit=0", b"", "limit"),
    ("GET", HISTORY, "limit=%D9%A1", b"", "limit"), ("GET", HISTORY, "limit=2&limit=x", b"",
                                                     "limit"),
    ("GET", HISTORY, "before=%00", b"", "before"),
    ("GET", f"/threads/{T}/state/%00".replace("%00", "\x00"), "", b"", "checkpoint_id"),
    ("POST", f"/threads/{T}/state/checkpoint", "", b"{}", "checkpoint"),
    ("POST", f"/threads/{T}/state/checkpoint", "", b'{"checkpoint": null}', "checkpoint"),
    ("POST", f"/threads/{T}/state/checkpoint", "", b'{"checkpoint": {}, "subgraphs": 1}',
     "subgraphs"),
    ("POST", f"/threads/{T}/state/checkpoint", "", b'{"checkpoint": {"configurable": {}}}',
     "checkpoint.configurable"),
])
def test_query_path_and_state_shapes_are_checked_too(method: str, path: str, query: str,
                                                    body: bytes, field: str):
    with pytest.raises(BadRead) as info:
        check_read(method, path, query, body)
    assert info.value.field == field and info.value.status == 422, info.value.detail


def test_only_the_four_reads_are_checked():
    assert route_of("POST", HISTORY) == "history" and route_of("GET", HISTORY) == "history-query"
    assert route_of("GET", f"/threads/{T}/state/c") == "state-at"
    assert route_of("POST", f"/threads/{T}/state/checkpoint") == "state-post"
    assert route_of("POST", f"/threads/{T}/state") == "state-write"
    for method, path in (("GET", f"/threads/{T}/state"),
                         ("POST", f"/threads/{T}/state/c"), ("DELETE", HISTORY),
                         ("POST", "/threads/search")):
        assert route_of(method, path) is None and check_read(method, path) is None


async def _through(app: Any, scope: dict[str, Any], body: bytes) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    pieces = [{"type": "http.request", "body": body[:3], "more_body": True},
              {"type": "http.request", "body": body[3:], "more_body": False}]

    async def receive() -> dict[str, Any]:
        return pieces.pop(0) if pieces else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await ReadCheck(app)(scope, receive, send)
    return sent


async def test_the_middleware_answers_422_and_hands_on_the_checked_body(monkeypatch):
    from factdebate.server import reads

    async def user(scope: Any) -> str:
        return "alice"

    monkeypatch.setattr(reads, "identity_of", user)
    seen: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        seen.append(message["body"])
        assert dict(scope["headers"])[b"content-length"] == str(len(message["body"])).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"[]"})

    scope = {"type": "http", "method": "POST", "path": HISTORY, "query_string": b"",
             "headers": [(b"content-length", b"99")]}
    sent = await _through(app, scope, b'{"before": {"checkpoint_id": "c1"}}')
    assert sent[0]["status"] == 200
    assert json.loads(seen[0]) == {"before": {"configurable": {"checkpoint_id": "c1"}}}
    sent = await _through(app, scope, b'{"before": {}}')
    assert sent[0]["status"] == 422 and b"before must be" in sent[1]["body"]
    assert len(seen) == 1  # the refused read never reached langgraph-api


async def test_a_request_without_a_valid_key_reaches_langgraph_api_as_it_came(monkeypatch):
    from factdebate.server import reads

    async def nobody(scope: Any) -> None:
        return None

    monkeypatch.setattr(reads, "identity_of", nobody)
    seen: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 401, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    scope = {"type": "http", "method": "POST", "path": HISTORY, "query_string": b"",
             "headers": []}
    sent = await _through(app, scope, b'{"before": {}}')
    assert sent[0]["status"] == 401 and seen == [b'{"before": {}}']


@pytest.mark.parametrize(("body", "field"), [
    ({"values": {}, "checkpoint": {"__pregel_task_id": "x"}}, "checkpoint.__pregel_task_id"),
    ({"values": {}, "checkpoint_id": {}}, "checkpoint_id"),
    ({"values": {}, "checkpoint_id": [1]}, "checkpoint_id"),
    ({"values": {}, "checkpoint": {"checkpoint_id": 5}}, "checkpoint.checkpoint_id"),
    (b"[" * 5000 + b"]" * 5000, "body"),
])
def test_a_state_updates_checkpoint_carries_checkpoint_fields_only(body: Any, field: str):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(BadRead) as info:
        check_read("POST", f"/threads/{T}/state", "", raw)
    assert info.value.field == field and info.value.status == 422, info.value.detail
    read = check_read("POST", f"/threads/{T}/state", "", json.dumps({
        "values": {"claim": "x"}, "as_node": "n", "checkpoint": {"checkpoint_id": "c"}}).encode())
    assert read is not None and read.body is None and read.names == []  # handed on as it came


def test_a_state_body_nested_past_the_decoder_is_no_json_for_the_handlers():
    from factdebate.server.usage import RequestInfo

    info = RequestInfo("POST", f"/threads/{T}/state")
    info.received(b'{"values": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    assert info.json_body() is None


async def test_an_error_no_handler_answered_is_a_json_500_and_the_connection_stays():
    """The guard answers an exception raised before any response with a JSON 500 (logged) instead
    of letting it reach the server, which would reset the keep-alive connection; one raised
    while a response is under way still ends that response."""
    from factdebate.server.guard import UNHANDLED, ServerGuard

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        raise KeyError("configurable")

    async def failing_mid_stream(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise KeyError("configurable")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": f"/threads/{T}/runs", "headers": []}
    await ServerGuard(failing)(scope, receive, send)
    assert sent[0]["status"] == 500
    assert json.loads(sent[1]["body"]) == {"detail": UNHANDLED}
    sent.clear()
    with pytest.raises(KeyError):
        await ServerGuard(failing_mid_stream)(scope, receive, send)
    assert [m["type"] for m in sent] == ["http.response.start"]
