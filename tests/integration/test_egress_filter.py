"""The server's edge filter (``factdebate.server.egress.EgressFilter``) on real ASGI traffic.

Small ASGI apps send what langgraph-api sends (a JSON body in one piece, a streamed body in
pieces, Server-Sent Events as ``sse.py`` frames them, a gzip body, a heartbeat beside a stream);
the middleware's output is read back as a client reads it. The end-to-end proof on a running
LangGraph server with a model that repeats the key is in ``tests/integration/test_secrets.py``.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import re
from typing import Any

import pytest

from factdebate.core.secrets_filter import INVISIBLE
from factdebate.server.egress import EgressFilter
from factdebate.server.logs import RedactingFormatter

KEY = "sk-op-5f0c7a1e9b2d4c6a8e0f1a2b"


@pytest.fixture(autouse=True)
def operator_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def hidden_forms() -> dict[str, str]:
    """The key as a reply may carry it."""
    data = KEY.encode()
    return {"plain": KEY, "base64": base64.b64encode(data).decode(),
            "url-safe base64": base64.urlsafe_b64encode(b"\xfb" + data).decode(),
            "hex": data.hex(), "HEX": data.hex().upper(),
            "zero-width split": "\u200b".join(KEY),
            "zero-width split (escaped)": "\\u200b".join(KEY)}


def leaked(text: str) -> list[str]:
    """Which forms of the key ``text`` shows (invisible characters and their escapes removed)."""
    visible = INVISIBLE.sub("", text)
    data = KEY.encode()
    shown = {"plain": KEY, "base64": base64.b64encode(data).decode()[:-4],
             "url-safe base64 (its core)": base64.urlsafe_b64encode(b"\xfb" + data).decode()[4:-4],
             "hex": data.hex(), "HEX": data.hex().upper(), "prefix": KEY[:12]}
    return [name for name, form in shown.items() if form in visible]


async def through(app: Any, path: str = "/x") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run ``EgressFilter(app)`` once: (the response start, its body messages)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "headers": [], "extensions": {
        "http.response.pathsend": {}}}
    await EgressFilter(app)(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start, [m for m in sent if m["type"] == "http.response.body"]


def sender(headers: list[tuple[bytes, bytes]], pieces: list[bytes], status: int = 200) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert "http.response.pathsend" not in scope["extensions"]  # every byte passes the filter
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for i, piece in enumerate(pieces):
            await send({"type": "http.response.body", "body": piece,
                        "more_body": i < len(pieces) - 1})

    return app


@pytest.mark.parametrize("form", list(hidden_forms()))
async def test_a_body_in_one_piece_is_redacted_and_its_length_set_anew(form: str):
    body = json.dumps({"values": {"rationale": f"the key {hidden_forms()[form]} said"}},
                      ensure_ascii=False).encode()
    start, bodies = await through(sender([(b"content-type", b"application/json"),
                                          (b"content-length", str(len(body)).encode()),
                                          (b"location", f"/x?api_key={KEY}".encode())], [body]))
    [out] = bodies
    assert leaked(out["body"].decode()) == [], out["body"]
    assert json.loads(out["body"])["values"]["rationale"].startswith("the key ")
    headers = dict(start["headers"])
    assert int(headers[b"content-length"]) == len(out["body"])
    assert KEY.encode() not in headers[b"location"]


@pytest.mark.parametrize("form", list(hidden_forms()))
async def test_a_streamed_body_split_anywhere_shows_no_form_of_the_key(form: str):
    body = f'{{"message": "1 validation error: input_value=\'{hidden_forms()[form]}\'"}}'
    data = body.encode()
    for size in (1, 2, 3, 5, 8, 13):
        pieces = [data[i:i + size] for i in range(0, len(data), size)] + [b""]
        start, bodies = await through(sender([(b"content-type", b"application/json"),
                                              (b"content-length", str(len(data)).encode())],
                                             pieces))
        out = b"".join(m["body"] for m in bodies).decode()
        assert leaked(out) == [], (size, out)
        assert json.loads(out)["message"].startswith("1 validation error")
        assert b"content-length" not in dict(start["headers"])  # it changed: chunked instead
        assert not bodies[-1]["more_body"]


async def test_a_streamed_body_without_secrets_is_sent_as_it_comes():
    pieces = [b'{"a": "Paris is ', b'a city", ', b'"b": 2}', b""]
    _, bodies = await through(sender([(b"content-type", b"application/json")], pieces))
    assert [m["body"] for m in bodies][:3] == pieces[:3]


def sse(event: str, data: Any) -> bytes:
    return f"event: {event}\r\ndata: {json.dumps(data, ensure_ascii=False)}\r\n\r\n".encode()


def events_of(raw: str) -> list[tuple[str, Any]]:
    out = []
    for block in re.split(r"\r\n\r\n", raw):
        lines = dict(ln.split(": ", 1) for ln in block.split("\r\n") if ": " in ln)
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


@pytest.mark.parametrize("form", list(hidden_forms()))
async def test_model_text_split_over_stream_events_is_redacted_across_them(form: str):
    """messages-tuple token chunks, events-mode chunks and accumulated partial messages: the key
    split over many events, each event framed whole, the text a client joins holds no key."""
    text = f"I read {hidden_forms()[form]} in the reply. The Eiffel Tower is in Paris."
    tokens = [text[i:i + 4] for i in range(0, len(text), 4)]
    meta = {"langgraph_node": "judge"}
    pieces = [sse("metadata", {"run_id": "r1"})]
    for i, token in enumerate(tokens):
        last = i == len(tokens) - 1
        chunk = {"type": "AIMessageChunk", "id": "m1", "content": token,
                 "response_metadata": {"finish_reason": "stop"} if last else {}}
        pieces.append(sse("messages", [chunk, meta]))
        pieces.append(sse("events", {"event": "on_chat_model_stream", "run_id": "e1",
                                     "data": {"chunk": {"id": "m2", "content": token}}}))
        pieces.append(sse("messages/partial", [{"id": "m3", "content": "".join(tokens[:i + 1])}]))
    pieces.append(sse("events", {"event": "on_chat_model_end", "run_id": "e1",
                                 "data": {"output": {"content": text}}}))
    pieces.append(sse("messages", [{"id": "m4", "content": tokens[0]}, meta]))  # never finished
    pieces.append(b"")
    split = [p[i:i + 7] for p in pieces for i in range(0, max(len(p), 1), 7)]  # mid-event too
    _, bodies = await through(sender([(b"content-type", b"text/event-stream")], split))
    raw = "".join(m["body"].decode() for m in bodies)
    for m in bodies:  # every piece sent is whole events: the framing is intact
        assert m["body"].decode().endswith("\r\n\r\n") or not m["body"], m["body"]
    got = events_of(raw)
    joined = {"m1": "", "m2": "", "m4": ""}
    for name, data in got:
        if name == "messages":
            joined[data[0]["id"]] += data[0]["content"]
        elif name == "events" and data["event"] == "on_chat_model_stream":
            joined[data["data"]["chunk"]["id"]] += data["data"]["chunk"]["content"]
        assert leaked(json.dumps(data, ensure_ascii=False)) == [], (name, data)
    partials = [d[0]["content"] for n, d in got if n == "messages/partial"]
    assert partials and all(leaked(p) == [] for p in partials)
    for joined_text in (joined["m1"], joined["m2"]):
        assert leaked(joined_text) == [], joined_text
        assert joined_text.startswith("I read ") and joined_text.endswith("is in Paris.")
    assert joined["m4"] == tokens[0]  # held text of an unfinished message comes at the end


async def test_ordinary_sse_events_pass_unchanged_and_at_once():
    pieces = [sse("values", {"claim": "The Nile is in Egypt."}), b": heartbeat\r\n\r\n",
              sse("messages", [{"id": "m", "content": "Egypt"}, {}]), b""]
    _, bodies = await through(sender([(b"content-type", b"text/event-stream")], pieces))
    assert bodies[0]["body"] == pieces[0] and bodies[1]["body"] == pieces[1]


async def test_gzip_is_read_and_an_unreadable_encoding_refused():
    body = gzip.compress(json.dumps({"error": f"Bearer {KEY}"}).encode())
    start, [out] = await through(sender([(b"content-encoding", b"gzip"),
                                         (b"content-type", b"application/json")], [body]))
    assert json.loads(out["body"]) == {"error": "Bearer ***"}
    assert b"content-encoding" not in dict(start["headers"])
    start, [out] = await through(sender([(b"content-encoding", b"br")], [b"\x00\x01"]))
    assert start["status"] == 502 and b"br-encoded" in out["body"]


def test_a_log_line_is_redacted_after_every_formatter():
    """A structured log event whose value is an exception object (rendered with ``repr`` by the
    formatter, after the record was made) holds no key in the written line."""
    class Structured(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"{record.msg['event']} error={record.msg['error']!r}"

    error = ValueError(f"1 validation error input_value='{chr(0x200B).join(KEY)}'")
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, {"event": "run failed",
                                                                  "error": error}, (), None)
    line = RedactingFormatter(Structured()).format(record)
    assert line.startswith("run failed error=ValueError(") and leaked(line) == [], line


async def test_an_event_whose_text_holds_line_separators_keeps_its_framing():
    """JSON may carry U+2028 and U+2029 raw (orjson does): they end no SSE line, so such an
    event's model text is still held back across events."""
    first = {"id": "m", "content": f"a\u2028b\u2029c {KEY[:10]}"}
    last = {"id": "m", "content": KEY[10:], "response_metadata": {"finish_reason": "stop"}}
    pieces = [sse("messages", [first, {}]), sse("messages", [last, {}]), b""]
    _, bodies = await through(sender([(b"content-type", b"text/event-stream")], pieces))
    got = events_of("".join(m["body"].decode() for m in bodies))
    assert [n for n, _ in got] == ["messages", "messages"]
    assert "".join(d[0]["content"] for _, d in got) == "a\u2028b\u2029c ***"


async def test_a_long_error_reply_is_cut():
    """langgraph-api's request validation quotes the offending value: a 200 KB name is a 200 KB
    422 unless the edge cuts it."""
    detail = f"{'n' * 200_000!r} is not of type 'array'"
    body = json.dumps({"detail": detail}).encode()
    start, [out] = await through(sender([(b"content-type", b"application/json")], [body],
                                        status=422))
    assert start["status"] == 422 and len(out["body"]) < 4096
    assert json.loads(out["body"])["detail"].endswith(f"(cut: the reply was {len(body)} bytes)")
    assert int(dict(start["headers"])[b"content-length"]) == len(out["body"])
    pieces = [body[i:i + 65536] for i in range(0, len(body), 65536)] + [b""]  # streamed, too
    start, [out] = await through(sender([(b"content-type", b"application/json")], pieces,
                                        status=422))
    assert start["status"] == 422 and len(out["body"]) < 4096 and not out["more_body"]
    assert json.loads(out["body"])["detail"].endswith(f"(cut: the reply was {len(body)} bytes)")
    small = [b'{"detail": "no such ', f'thread {KEY}"}}'.encode(), b""]
    _, [out] = await through(sender([(b"content-type", b"application/json")], small, 404))
    assert json.loads(out["body"]) == {"detail": "no such thread ***"}
    ok = json.dumps({"values": "x" * 10_000}).encode()  # a long reply that is no error: whole
    _, [whole] = await through(sender([(b"content-type", b"application/json")], [ok]))
    assert whole["body"] == ok


def measure(events: int = 5000) -> list[str]:
    """What the filter adds: SSE events (``values`` and messages-tuple token chunks) and a 1 MB
    JSON body through ``EgressFilter``, against the same app without it (best of three)."""
    import asyncio
    import os
    import time

    os.environ.setdefault("OPENAI_API_KEY", KEY)

    async def timed(app: Any) -> float:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        async def send(message: dict[str, Any]) -> None:
            return None

        began = time.perf_counter()
        await app({"type": "http", "method": "GET", "path": "/", "headers": [],
                   "extensions": {}}, receive, send)
        return time.perf_counter() - began

    values = [sse("values", {"claim": "The Eiffel Tower is in Paris.", "round": i,
                             "turns": ["x" * 300]}) for i in range(events)] + [b""]
    tokens = [sse("messages", [{"id": "m1", "content": "token ", "type": "AIMessageChunk"},
                               {"langgraph_node": "respond"}]) for _ in range(events)] + [b""]
    body = json.dumps({"values": [{"text": "The Eiffel Tower is a lattice tower. " * 27}
                                  for _ in range(1000)]}).encode()
    lines = []
    for name, kind, pieces, n in (
            ("SSE values events", b"text/event-stream", values, events),
            ("SSE messages-tuple token events", b"text/event-stream", tokens, events),
            (f"a {len(body) / 1e6:.1f} MB JSON body", b"application/json", [body], 1)):
        app = sender([(b"content-type", kind)], pieces)
        bare = min(asyncio.run(timed(app)) for _ in range(3))
        filtered = min(asyncio.run(timed(EgressFilter(app))) for _ in range(3))
        lines.append(f"{name}: {n} in {bare * 1e3:.1f} ms without the filter, "
                     f"{filtered * 1e3:.1f} ms with it ({(filtered - bare) / n * 1e6:.0f} us "
                     f"added per {'event' if n > 1 else 'body'})")
    return lines


if __name__ == "__main__":  # python -m tests.integration.test_egress_filter
    print("\n".join(measure()))
