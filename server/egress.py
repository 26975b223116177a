"""The server's edge: everything the LangGraph server sends passes the one secret filter.

The secret filter (:mod:`factdebate.core.secrets_filter`) is applied where errors are made (every
``FactDebateError``, every exception a node raises, tool faults, traces, log records); a path past
those places - a library's exception whose text is computed rather than stored (pydantic's
``ValidationError`` quoting a model reply that holds the operator's key), a model's completion
that repeats a key into the run's state - would reach a client as it is. :class:`EgressFilter`
is the last place before the network: an ASGI middleware of the custom app (``server/webapp.py``),
which langgraph-api runs on every route before its own (``langgraph.json``: ``http.app``,
``"middleware_order": "middleware_first"``). It redacts:

* every response's headers and body: thread state and history, runs, assistants, crons, store
  items, run errors (``__error__``), ``runs/wait``'s reply, the 4xx/5xx details, the web page and
  its files. A body sent in one piece is redacted whole (``Content-Length`` set anew); a streamed
  one piece by piece (:class:`~factdebate.core.secrets_filter.StreamRedactor`: only an end that
  could begin a secret waits for the next piece, so nothing is delayed otherwise);
* Server-Sent Events (``runs/stream``, ``threads/{id}/runs/{id}/stream``, every stream mode) event
  by event: an event is sent when it is complete, redacted, so SSE framing stays intact. The model
  text that a stream splits over many events is redacted across them: the token chunks of
  ``messages-tuple`` (``messages``) and ``events`` (``on_chat_model_stream``) per message, each
  event's text held back only where it could begin a secret (it goes out in the message's next
  event, its last chunk, or one added event of the same message when the stream ends); the
  accumulated ``messages/partial`` text without such an end;
* the tool-call arguments a model streams with function calling, across events likewise: one
  :class:`~factdebate.core.secrets_filter.StreamRedactor` per message and tool-call ``index`` for
  the argument deltas (``tool_call_chunks[].args``; the provider's raw
  ``additional_kwargs.tool_calls[].function.arguments`` alike), a held-back end sent with the
  call's next chunk, the message's last chunk (one more tool-call chunk of that index) or the added
  event at the stream's end; each chunk's parsed ``tool_calls``/``invalid_tool_calls`` derived anew
  from the arguments it shows (:func:`parsed_calls`), so none holds what the arguments held back;
  ``messages/partial``'s accumulated arguments without an end that could begin a secret (in
  langgraph-api's partial messages, which carry the calls parsed so far: the value still arriving);
* an error reply (4xx, 5xx) longer than :data:`MAX_ERROR_BYTES` is cut to its first part, saying
  so (langgraph-api's request validation quotes the offending value whole);
* gzip- or deflate-encoded bodies are decoded and sent as identity (langgraph-api does not
  compress; a proxy or an app that does is handled); a body in an encoding it cannot read is
  replaced by a 502 naming the encoding.

The server's own in-process requests (``langgraph_sdk`` without a URL, ``root_path`` ``/noauth``:
:func:`factdebate.server.loopback.is_loopback`, the rule langgraph-api's auth bypass applies) pass
unfiltered: their replies go to the server's code (counting runs, pruning history), never to a
client, and whatever of them a route hands on leaves in that route's own reply, filtered here.

What it cannot catch is listed in ``docs/deployment.md`` (secrets it does not know, secrets
shorter than ``MIN_SECRET_CHARS``, other transformations, images, structured content parts split
across stream events, a tool call streamed without an ``index``).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
import time
import zlib
from typing import Any

from factdebate.core.secrets_filter import Forms, StreamRedactor, held_from, known_forms, redact
from factdebate.server.loopback import is_loopback

Scope = dict[str, Any]
Message = dict[str, Any]

_EVENT_END = re.compile(r"\r\n\r\n|\n\n|\r\r")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_DECODABLE = {b"gzip": 16 + zlib.MAX_WBITS, b"x-gzip": 16 + zlib.MAX_WBITS,
              b"deflate": zlib.MAX_WBITS}
MAX_ERROR_BYTES = 4096
"""Largest error reply (4xx, 5xx) sent whole: a longer one is cut (a refusal that quotes a client's
200 KB value - langgraph-api's request validation does - is not sent back whole)."""
ERROR_KEEP_BYTES = 1 << 20
"""Most bytes of an error reply streamed in pieces that are kept to send it whole."""
FORMS_TTL_S = 1.0
"""How long one response reuses the secrets it looked up (a secret registered meanwhile is searched
for from then on)."""
_FILE_SENDS = ("http.response.pathsend", "http.response.zerocopysend")
"""ASGI extensions that send a file without body messages: withheld so every byte is seen."""


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def redact_bytes(data: bytes) -> bytes:
    """``data`` (any bytes; UTF-8 text where it is text) without the secrets the process knows."""
    return _encode(redact(_decode(data))) if data else data


def _bounded_error(body: bytes) -> bytes:
    """An error reply of at most about :data:`MAX_ERROR_BYTES`: its ``detail`` cut, saying so."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    limit = MAX_ERROR_BYTES // 2
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        detail = data["detail"]
        cut = f"{detail[:limit]}... (cut: the reply was {len(body)} bytes)"
        return json.dumps({"detail": cut}, ensure_ascii=False).encode()
    return body[:limit] + f"... (cut: the reply was {len(body)} bytes)".encode()


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    return next((v for k, v in headers if k.lower() == name), None)


class EgressFilter:
    """Pure ASGI middleware: every response of the server through the secret filter (module
    docstring)."""

    def __init__(self, app: Any) -> None:
        """Wrap ``app`` (the rest of the server)."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Run the server with a ``send`` that redacts what it sends."""
        if scope["type"] == "http" and is_loopback(scope):  # to our own code, not a client
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            extensions = scope.get("extensions") or {}
            if any(k in extensions for k in _FILE_SENDS):
                scope = {**scope, "extensions": {k: v for k, v in extensions.items()
                                                 if k not in _FILE_SENDS}}
            await self.app(scope, receive, _Response(send, scope.get("method") == "HEAD").send)
        elif scope["type"] == "websocket":
            await self.app(scope, receive, _websocket(send))
        else:
            await self.app(scope, receive, send)


def _websocket(send: Any) -> Any:
    async def redacted(message: Message) -> None:
        if message.get("type") == "websocket.send":
            if message.get("text"):
                message = {**message, "text": redact(message["text"])}
            elif message.get("bytes"):
                message = {**message, "bytes": redact_bytes(message["bytes"])}
        elif message.get("type") == "websocket.close" and message.get("reason"):
            message = {**message, "reason": redact(message["reason"])}
        await send(message)

    return redacted


class _Response:
    """One response's ``send``: holds the start until the first body piece says how to filter."""

    def __init__(self, send: Any, head: bool = False) -> None:
        self._send = send
        self._head = head  # a HEAD reply keeps the length of the body it does not send
        self._lock = asyncio.Lock()  # the SSE heartbeat task sends beside the stream
        self._start: Message | None = None
        self._mode = ""
        self._decoder: Any = None
        self._inflate: Any = None
        self._text = StreamRedactor()
        self._events: _SseEvents | None = None
        self._forms: tuple[float, Forms] | None = None
        self._error = bytearray()
        self._error_size = 0
        self._error_start: tuple[Message, list[tuple[bytes, bytes]]] = ({}, [])

    def forms(self) -> Forms:
        """The secrets' forms, looked up at most once per :data:`FORMS_TTL_S`."""
        now = time.monotonic()
        if self._forms is None or now - self._forms[0] > FORMS_TTL_S:
            self._forms = (now, known_forms())
        return self._forms[1]

    async def send(self, message: Message) -> None:
        async with self._lock:
            kind = message.get("type")
            if kind == "http.response.start":
                self._start = message
                return
            if kind != "http.response.body":
                await self._send(message)
                return
            if not self._mode:
                if await self._begin(message):
                    return
            await self._body(message.get("body", b""), bool(message.get("more_body")))

    async def _begin(self, message: Message) -> bool:
        """Send the start; True when ``message`` was answered whole here."""
        start = self._start or {"type": "http.response.start", "status": 200, "headers": []}
        headers = [(k, redact(v.decode("latin-1"), self.forms()).encode("latin-1", "replace"))
                   for k, v in start.get("headers") or ()]
        encoding = (_header(headers, b"content-encoding") or b"identity").strip().lower()
        if encoding not in (b"identity", b"") and encoding not in _DECODABLE:
            await self._refuse(encoding)
            return True
        if encoding in _DECODABLE:
            self._inflate = zlib.decompressobj(_DECODABLE[encoding])
            headers = [(k, v) for k, v in headers if k.lower() != b"content-encoding"]
        kind = (_header(headers, b"content-type") or b"").split(b";")[0].strip().lower()
        body = message.get("body", b"")
        if not message.get("more_body"):
            if self._inflate is not None:
                body = self._inflate.decompress(body) + self._inflate.flush()
            await self._whole(start, headers, body)
            return True
        if start.get("status", 200) >= 400 and kind != b"text/event-stream":
            self._mode, self._error_start = "error", (start, headers)  # sent whole at its end
            return False
        headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
        await self._send({**start, "headers": headers})
        self._mode = "sse" if kind == b"text/event-stream" else "text"
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        if self._mode == "sse":
            self._events = _SseEvents(self.forms)
        return False

    async def _whole(self, start: Message, headers: list[tuple[bytes, bytes]],
                     body: bytes) -> None:
        """Send a response whose body is all here: redacted, an error bounded, its length set."""
        body = _encode(redact(_decode(body), self.forms())) if body else body
        if start.get("status", 200) >= 400 and len(body) > MAX_ERROR_BYTES:
            body = _bounded_error(body)
        if not self._head or self._inflate is not None:
            headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
        await self._send({**start, "headers": headers})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})
        self._mode = "done"

    async def _refuse(self, encoding: bytes) -> None:
        body = json.dumps({"detail": f"the response is {encoding.decode('latin-1')}-encoded, "
                                     "which this server's secret filter cannot read"}).encode()
        await self._send({"type": "http.response.start", "status": 502, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})
        self._mode = "refused"

    async def _body(self, body: bytes, more: bool) -> None:
        if self._mode in ("done", "refused"):
            return
        if self._inflate is not None:
            body = self._inflate.decompress(body) + (b"" if more else self._inflate.flush())
        if self._mode == "error":  # an error reply streamed in pieces: sent whole, bounded
            self._error_size += len(body)
            self._error.extend(body[:max(0, ERROR_KEEP_BYTES - len(self._error))])
            if not more:
                start, headers = self._error_start
                kept = bytes(self._error)
                if self._error_size > len(kept):
                    kept += f"... (cut: the reply was {self._error_size} bytes)".encode()
                await self._whole(start, headers, kept)
            return
        text = self._decoder.decode(body, final=not more)
        if self._mode == "sse":
            assert self._events is not None
            out = self._events.feed(text, final=not more)
        else:
            out = self._text.feed(text, final=not more, known=self.forms())
        if out or not more:
            await self._send({"type": "http.response.body", "body": _encode(out),
                              "more_body": more})
        if not more:
            self._mode = "done"


class _Stream:
    """One model message streamed over events: the redactors of its text and of each of its tool
    calls' arguments (by the call's ``index``), and the event it started with (the template of
    an added event)."""

    def __init__(self, name: str, template: Any) -> None:
        self.name = name
        self.template = template
        self.text: StreamRedactor | None = None
        self.args: dict[Any, StreamRedactor] = {}  # tool_call_chunks[].args
        self.raw: dict[Any, StreamRedactor] = {}  # additional_kwargs.tool_calls[].function.arguments


class _SseEvents:
    """Server-Sent Events redacted event by event, model text and tool-call arguments across
    events (module docstring)."""

    def __init__(self, forms: Any) -> None:
        self.forms = forms  # the response's secrets' forms (_Response.forms)
        self.buffer = ""
        self.streams: dict[tuple[str, ...], _Stream] = {}

    def feed(self, text: str, final: bool) -> str:
        """The complete events of ``buffer + text``, redacted (all of it when ``final``)."""
        self.buffer += text
        last = None
        for match in _EVENT_END.finditer(self.buffer):
            last = match
        if final:
            events, self.buffer = self.buffer, ""
        elif last is None:
            return ""
        else:
            events, self.buffer = self.buffer[:last.end()], self.buffer[last.end():]
        out: list[str] = []
        pos = 0
        for end in _EVENT_END.finditer(events):
            out.append(self._event(events[pos:end.end()]))
            pos = end.end()
        if pos < len(events):
            out.append(self._event(events[pos:]))
        if final:
            out.extend(self._flush(key) for key in list(self.streams))
        return "".join(out)

    def _event(self, raw: str) -> str:
        """One event (its blank line included), its model text redacted across events."""
        lines = _LINE.findall(raw)  # SSE lines end at CR, LF or CRLF only (not at U+2028)
        names = [ln for ln in lines if ln.startswith("event:")]
        datas = [i for i, ln in enumerate(lines) if ln.startswith("data:")]
        if len(names) != 1 or len(datas) != 1:
            return redact(raw, self.forms())
        name = names[0][6:].strip()
        line = lines[datas[0]]
        body = line[5:].lstrip(" ").rstrip("\r\n")
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return redact(raw, self.forms())
        before = ""
        changed = self._model_text(name.split("|")[0], name, data)
        if isinstance(changed, tuple):
            before, data = changed
        elif changed is None:
            return redact(raw, self.forms())
        else:
            data = changed
        ending = line[len(line.rstrip("\r\n")):]
        lines[datas[0]] = "data: " + json.dumps(data, ensure_ascii=False,
                                                separators=(",", ":")) + ending
        return before + redact("".join(lines), self.forms())

    def _model_text(self, mode: str, name: str, data: Any) -> Any:
        """``data`` with its model text redacted across events (None: no model text here); a
        tuple (events to send first, data) when an earlier stream must be flushed first."""
        if mode == "messages" and isinstance(data, list) and data and isinstance(data[0], dict):
            first: dict[str, Any] = data[0]
            key = ("messages", name, str(first.get("id")))
            return [self._delta(key, name, data, first), *data[1:]]
        if mode == "messages/partial" and isinstance(data, list):
            return [_partial(m, self.forms()) for m in data]
        if mode == "events" and isinstance(data, dict):
            run, event = str(data.get("run_id")), data.get("event")
            chunk = (data.get("data") or {}).get("chunk") if isinstance(
                data.get("data"), dict) else None
            key = ("events", name, run)
            if event == "on_chat_model_stream" and isinstance(chunk, dict):
                new = self._delta(key, name, data, chunk)
                return {**data, "data": {**data["data"], "chunk": new}}
            if event == "on_chat_model_end" and key in self.streams:
                return self._flush(key), data
        return None

    def _delta(self, key: tuple[str, ...], name: str, template: Any,
               chunk: dict[str, Any]) -> dict[str, Any]:
        """One chunk of stream ``key``: its text and its tool calls' argument deltas as far as no
        later chunk can change them; a last chunk carries everything still held back."""
        stream = self.streams.get(key) or _Stream(name, template)
        meta = chunk.get("response_metadata") or {}
        last = chunk.get("chunk_position") == "last" or bool(
            isinstance(meta, dict) and meta.get("finish_reason"))
        out = dict(chunk)
        content = chunk.get("content")
        if isinstance(content, str):
            stream.text = stream.text or StreamRedactor()
            out["content"] = stream.text.feed(content, final=last, known=self.forms())
        if isinstance(chunk.get("tool_call_chunks"), list):
            out = self._calls(stream, out, last)
        if last:
            self.streams.pop(key, None)
        else:
            self.streams[key] = stream
        return out

    def _calls(self, stream: _Stream, chunk: dict[str, Any], last: bool) -> dict[str, Any]:
        """``chunk``'s tool-call argument deltas through the call's redactor (one per tool-call
        index; a call without an index is whole in its chunk), the parsed calls re-derived from
        what is shown; a last chunk adds the rest of every call it does not carry."""
        forms = self.forms()
        parts, seen = [], set()
        for part in chunk["tool_call_chunks"]:
            if isinstance(part, dict) and isinstance(part.get("args"), str):
                index = _index(part.get("index"))
                if index is None:
                    part = {**part, "args": redact(part["args"], forms)}
                else:
                    seen.add(index)
                    redactor = stream.args.setdefault(index, StreamRedactor())
                    part = {**part, "args": redactor.feed(part["args"], final=last, known=forms)}
            parts.append(part)
        if last:
            parts.extend(_rest_part(index, rest) for index, rest in _rests(stream.args, seen,
                                                                           forms))
        chunk["tool_call_chunks"] = parts
        kwargs = chunk.get("additional_kwargs")
        raw = kwargs.get("tool_calls") if isinstance(kwargs, dict) else None
        raw_seen: set[Any] = set()
        if isinstance(raw, list):
            raw = list(raw)
            for i, entry in enumerate(raw):
                function = entry.get("function") if isinstance(entry, dict) else None
                if not (isinstance(function, dict) and isinstance(function.get("arguments"), str)):
                    continue
                index = _index(entry.get("index"))
                if index is None:
                    arguments = redact(function["arguments"], forms)
                else:
                    raw_seen.add(index)
                    redactor = stream.raw.setdefault(index, StreamRedactor())
                    arguments = redactor.feed(function["arguments"], final=last, known=forms)
                raw[i] = {**entry, "function": {**function, "arguments": arguments}}
        rests = ([_rest_raw(index, rest) for index, rest in _rests(stream.raw, raw_seen, forms)]
                 if last else [])
        if isinstance(raw, list) or rests:
            chunk["additional_kwargs"] = {**(kwargs if isinstance(kwargs, dict) else {}),
                                          "tool_calls": [*(raw or []), *rests]}
        if parts and ("tool_calls" in chunk or "invalid_tool_calls" in chunk):
            chunk.update(parsed_calls(parts))
        return chunk

    def _flush(self, key: tuple[str, ...]) -> str:
        """One added event of stream ``key`` carrying the text and tool-call arguments it still
        holds back (nothing when it holds none)."""
        stream = self.streams.pop(key)
        forms = self.forms()
        text = stream.text.feed("", final=True, known=forms) if stream.text else ""
        parts = [_rest_part(index, rest) for index, rest in _rests(stream.args, set(), forms)]
        raw = [_rest_raw(index, rest) for index, rest in _rests(stream.raw, set(), forms)]
        if not (text or parts or raw):
            return ""
        first = stream.template[0] if key[0] == "messages" else stream.template["data"]["chunk"]
        chunk = {**first, "content": text if isinstance(first.get("content"), str) or text
                 else []}
        if parts or "tool_call_chunks" in first:
            chunk["tool_call_chunks"] = parts
            chunk.update(parsed_calls(parts))
        if "additional_kwargs" in first or raw:
            chunk["additional_kwargs"] = {"tool_calls": raw} if raw else {}
        for field, empty in (("response_metadata", {}), ("usage_metadata", None)):
            if field in chunk:  # said once, by the message's own chunks
                chunk[field] = empty
        data: Any
        if key[0] == "messages":
            data = [chunk, *stream.template[1:]]
        else:
            data = {**stream.template, "data": {**stream.template["data"], "chunk": chunk}}
        return redact(f"event: {stream.name}\r\ndata: "
                      f"{json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\r\n\r\n",
                      forms)


def _index(value: Any) -> Any:
    """A tool call's stream index (an int or a string; None: the call is whole in its chunk)."""
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _rests(redactors: dict[Any, StreamRedactor], seen: set[Any],
           forms: Forms) -> list[tuple[Any, str]]:
    """(index, held-back arguments) of every call in ``redactors`` not in ``seen``; all of them
    are done after this."""
    rests = [(index, redactor.feed("", final=True, known=forms))
             for index, redactor in redactors.items() if index not in seen]
    redactors.clear()
    return [(index, rest) for index, rest in rests if rest]


def _rest_part(index: Any, args: str) -> dict[str, Any]:
    """A tool-call chunk carrying only more arguments of call ``index`` (merged by index)."""
    return {"name": None, "args": args, "id": None, "index": index, "type": "tool_call_chunk"}


def _rest_raw(index: Any, arguments: str) -> dict[str, Any]:
    """A provider's raw tool-call delta carrying only more arguments of call ``index``."""
    return {"index": index, "function": {"arguments": arguments}}


def parsed_calls(parts: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """``tool_calls`` and ``invalid_tool_calls`` of a chunk whose tool-call chunks are ``parts``,
    as langchain-core derives them (``AIMessageChunk``: each chunk's arguments parsed as partial
    JSON): what a client sees parsed is what the shown arguments say, never more."""
    from langchain_core.messages import AIMessageChunk

    chunks = [{"name": p.get("name"), "args": p.get("args"), "id": p.get("id"),
               "index": p.get("index")} for p in parts if isinstance(p, dict)]
    try:
        message = AIMessageChunk(content="", tool_call_chunks=chunks)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001  # a chunk langchain-core cannot read: shown unparsed
        return {"tool_calls": [], "invalid_tool_calls": [
            {"name": c["name"], "args": c["args"], "id": c["id"], "error": None,
             "type": "invalid_tool_call"} for c in chunks]}
    return {"tool_calls": [dict(c) for c in message.tool_calls],
            "invalid_tool_calls": [dict(c) for c in message.invalid_tool_calls]}


def _held(text: Any, forms: Forms) -> Any:
    """Accumulated text without the end that may begin a secret (a non-string as it is)."""
    if not isinstance(text, str):
        return text
    text = redact(text, forms)
    return text[:held_from(text, forms)]


def _held_args(args: Any, forms: Forms) -> Any:
    """A call's arguments parsed from a partial stream (nested values): every string redacted,
    the last one - the value still arriving - without an end that may begin a secret."""
    def walk(value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return redact(value, forms)
        if depth > 32:
            return value
        if isinstance(value, dict):
            return {k: walk(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, depth + 1) for v in value]
        return value

    out = walk(args, 0)
    if isinstance(out, str):
        return out[:held_from(out, forms)]
    parent: Any = None
    key: Any = None
    current = out
    for _ in range(34):  # down the last value at each level: the one the stream is writing
        if isinstance(current, dict) and current:
            parent, key = current, list(current)[-1]
        elif isinstance(current, list) and current:
            parent, key = current, len(current) - 1
        else:
            break
        current = parent[key]
    if isinstance(current, str) and parent is not None:
        parent[key] = current[:held_from(current, forms)]
    return out


def _partial(message: Any, forms: Forms) -> Any:
    """An accumulated message (``messages/partial``) without the ends that may begin a secret:
    of its text and of each tool call's accumulated arguments (the parsed calls re-derived)."""
    if not isinstance(message, dict):
        return message
    out = dict(message)
    if isinstance(out.get("content"), str):
        out["content"] = _held(out["content"], forms)
    parts = out.get("tool_call_chunks")
    if isinstance(parts, list) and parts:
        out["tool_call_chunks"] = [{**p, "args": _held(p.get("args"), forms)}
                                   if isinstance(p, dict) else p for p in parts]
        if "tool_calls" in out or "invalid_tool_calls" in out:
            out.update(parsed_calls(out["tool_call_chunks"]))
    elif isinstance(out.get("tool_calls"), list):  # langgraph-api's partial: parsed calls only
        out["tool_calls"] = [{**c, "args": _held_args(c.get("args"), forms)}
                             if isinstance(c, dict) else c for c in out["tool_calls"]]
        if isinstance(out.get("invalid_tool_calls"), list):
            out["invalid_tool_calls"] = [{**c, "args": _held(c.get("args"), forms)}
                                         if isinstance(c, dict) else c
                                         for c in out["invalid_tool_calls"]]
    kwargs = out.get("additional_kwargs")
    raw = kwargs.get("tool_calls") if isinstance(kwargs, dict) else None
    if isinstance(raw, list) and isinstance(kwargs, dict):
        out["additional_kwargs"] = {**kwargs, "tool_calls": [
            {**e, "function": {**e["function"], "arguments": _held(
                e["function"].get("arguments"), forms)}}
            if isinstance(e, dict) and isinstance(e.get("function"), dict) else e for e in raw]}
    return out
