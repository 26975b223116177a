"""Tool-call arguments streamed over many events pass the server's edge filter without the key.

A model with function calling streams a call's arguments in deltas (``tool_call_chunks[].args``,
the provider's ``additional_kwargs.tool_calls[].function.arguments``) and each chunk's partial
parse (``tool_calls``/``invalid_tool_calls``). Here SSE text is built as langgraph-api frames it
(``messages`` for messages-tuple, ``events`` for ``on_chat_model_stream``, ``messages/partial``),
a known key is split over 2..N chunks at every position, plain and percent-encoded, and what
leaves :class:`factdebate.server.egress.EgressFilter` is read back as a client reads it: no event,
no chunk's parsed calls, no arguments a client joins per call hold the key or its start, and the
joined arguments are the original ones with the key masked.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
import re
from typing import Any
from urllib.parse import unquote

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.utils.json import parse_partial_json

from factdebate.core.secrets_filter import MASK
from factdebate.server.egress import EgressFilter

KEY = "sk-op-5f0c7a1e9b2d4c6a8e0f1a2b"
META = {"langgraph_node": "debater", "ls_provider": "openai"}


@pytest.fixture(autouse=True)
def operator_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def percent(text: str) -> str:
    return "".join(f"%{ord(c):02X}" for c in text)


FORMS = {
    "plain": KEY,
    "percent-encoded": percent(KEY),
    "partly percent-encoded": KEY[:4] + percent(KEY[4:9]).lower() + KEY[9:],
}


def leaked(text: str) -> list[str]:
    """Which forms of the key (or its first 12 characters) ``text`` shows, %XX decoded too."""
    out = []
    for name, shown in (("text", text), ("decoded", unquote(text))):
        if KEY in shown:
            out.append(f"key ({name})")
        elif KEY[:12] in shown:
            out.append(f"key's start ({name})")
    return out


def sse(event: str, data: Any) -> bytes:
    return f"event: {event}\r\ndata: {json.dumps(data, ensure_ascii=False)}\r\n\r\n".encode()


def chunk_dict(message_id: str, parts: list[tuple[int, str, bool]], *, last: bool = False,
               raw: bool = True) -> dict[str, Any]:
    """An ``AIMessageChunk`` as langgraph-api serializes it: ``parts`` are (index, argument delta,
    first delta of its call); the provider's raw deltas in ``additional_kwargs`` when ``raw``."""
    tool_call_chunks = [{"name": "search" if first else None, "args": args,
                         "id": f"call_{index}" if first else None, "index": index}
                        for index, args, first in parts]
    kwargs: dict[str, Any] = {}
    if raw and parts:
        kwargs["tool_calls"] = [
            {"index": index, "id": f"call_{index}" if first else None,
             "function": {"arguments": args, "name": "search" if first else None},
             "type": "function"} for index, args, first in parts]
    message = AIMessageChunk(
        content="", id=message_id, tool_call_chunks=tool_call_chunks,  # type: ignore[arg-type]
        additional_kwargs=kwargs,
        response_metadata={"finish_reason": "tool_calls"} if last else {})
    return json.loads(json.dumps(message.model_dump(), default=str))


async def filtered(pieces: list[bytes]) -> list[tuple[str, Any]]:
    """``pieces`` (SSE bytes) through the egress filter, 7 bytes at a time: the events sent."""
    split = [p[i:i + 7] for p in pieces for i in range(0, max(len(p), 1), 7)] + [b""]
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for i, piece in enumerate(split):
            await send({"type": "http.response.body", "body": piece,
                        "more_body": i < len(split) - 1})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/runs/stream", "headers": []}
    await EgressFilter(app)(scope, receive, send)
    raw = "".join(m.get("body", b"").decode() for m in sent if m["type"] == "http.response.body")
    for m in sent:
        body = m.get("body", b"").decode()
        assert not body or body.endswith("\r\n\r\n"), body  # whole events only
    out = []
    for block in raw.split("\r\n\r\n"):
        lines = dict(ln.split(": ", 1) for ln in block.split("\r\n") if ": " in ln)
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


def chunks_of(events: list[tuple[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Every model chunk a client reads, by stream (messages: message id; events: run id)."""
    streams: dict[str, list[dict[str, Any]]] = {}
    for name, data in events:
        if name == "messages":
            streams.setdefault(f"messages:{data[0]['id']}", []).append(data[0])
        elif name == "events" and data.get("event") == "on_chat_model_stream":
            streams.setdefault(f"events:{data['run_id']}", []).append(data["data"]["chunk"])
    return streams


def check_chunks(chunks: list[dict[str, Any]]) -> dict[int, str]:
    """Each chunk's parsed calls are what its shown arguments say; the arguments a client joins
    per call (``tool_call_chunks`` and the raw deltas alike) are returned by index."""
    joined: dict[int, str] = {}
    raw_joined: dict[int, str] = {}
    for chunk in chunks:
        assert leaked(json.dumps(chunk, ensure_ascii=False)) == [], chunk
        parts = chunk.get("tool_call_chunks") or []
        for part in parts:
            joined[part["index"]] = joined.get(part["index"], "") + part["args"]
        for entry in (chunk.get("additional_kwargs") or {}).get("tool_calls") or []:
            index = entry["index"]
            raw_joined[index] = raw_joined.get(index, "") + entry["function"]["arguments"]
        parsed = [c["args"] for c in chunk.get("tool_calls") or []]
        expected = []
        for part in parts:
            try:
                value = parse_partial_json(part["args"]) if part["args"] else {}
            except Exception:  # noqa: BLE001
                value = None
            if isinstance(value, dict):
                expected.append(value)
        assert parsed == expected, (parsed, parts)
        invalid = [c["args"] for c in chunk.get("invalid_tool_calls") or []]
        assert all(isinstance(a, str) and a in [p["args"] for p in parts] for a in invalid)
    assert raw_joined in ({}, joined), (raw_joined, joined)
    return joined


def masked(args: str) -> str:
    return re.sub(r"(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9-])*\*\*\*(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9-])*",
                  MASK, args)


def splits(text: str, pieces: int) -> list[list[str]]:
    """``text`` cut into ``pieces`` parts: every cut for 2, a spread of cuts for more."""
    if pieces == 2:
        cuts = [(i,) for i in range(1, len(text))]
    elif pieces >= len(text):
        return [list(text)]
    else:
        every = list(itertools.combinations(range(1, len(text)), pieces - 1))
        cuts = every[::max(1, len(every) // 150)]
    out = []
    for cut in cuts:
        bounds = [0, *cut, len(text)]
        out.append([text[a:b] for a, b in itertools.pairwise(bounds)])
    return out


def stream_of(deltas: list[str], ending: str, *, raw: bool = True) -> list[bytes]:
    """One tool call's ``deltas`` in messages-tuple and events-mode chunks; ``ending``: "last"
    (the last delta's chunk says finish_reason), "empty-last" (an added last chunk with no
    delta), "end-event" (on_chat_model_end, no last chunk) or "none" (the stream just ends)."""
    pieces = [sse("metadata", {"run_id": "r1"})]
    for i, delta in enumerate(deltas):
        last = ending == "last" and i == len(deltas) - 1
        chunk = chunk_dict("m1", [(0, delta, i == 0)], last=last, raw=raw)
        pieces.append(sse("messages", [chunk, META]))
        pieces.append(sse("events", {"event": "on_chat_model_stream", "run_id": "e1",
                                     "data": {"chunk": chunk}}))
    if ending == "empty-last":
        chunk = chunk_dict("m1", [], last=True, raw=raw)
        pieces.append(sse("messages", [chunk, META]))
        pieces.append(sse("events", {"event": "on_chat_model_stream", "run_id": "e1",
                                     "data": {"chunk": chunk}}))
    if ending in ("end-event", "empty-last"):
        pieces.append(sse("events", {"event": "on_chat_model_end", "run_id": "e1",
                                     "data": {"output": {}}}))
    pieces.append(sse("values", {"claim": "Berlin."}))
    return pieces


def args_with(form: str) -> str:
    return json.dumps({"query": f"look up {form} please", "k": 3})


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("pieces", [2, 3, 5, 0])
async def test_a_key_split_over_tool_call_chunks_anywhere_never_reassembles(form: str,
                                                                            pieces: int):
    """Every cut into 2 chunks, a spread of cuts into 3 and 5, one character a chunk (0)."""
    args = args_with(FORMS[form])
    cases = splits(args, pieces or len(args))
    endings = itertools.cycle(["last", "empty-last", "end-event", "none"])
    for deltas in cases:
        ending = next(endings)
        events = await filtered(stream_of(deltas, ending, raw=len(deltas) % 2 == 0))
        streams = chunks_of(events)
        assert set(streams) == {"messages:m1", "events:e1"}, (ending, events)
        for name, chunks in streams.items():
            joined = check_chunks(chunks)[0]
            assert leaked(joined) == [], (name, deltas, joined)
            assert masked(joined) == args_with(MASK), (name, ending, deltas, joined)
            merged = functools.reduce(operator.add, [AIMessageChunk(**c) for c in chunks])
            assert merged.tool_calls[0]["args"] == {"query": f"look up {MASK} please", "k": 3}


async def test_interleaved_calls_each_keep_their_own_held_back_part():
    first, second = args_with(KEY), json.dumps({"url": f"https://x.test/?q={percent(KEY)}"})
    a, b = splits(first, 5)[40], splits(second, 5)[77]
    pieces = []
    for i in range(5):
        chunk = chunk_dict("m2", [(0, a[i], i == 0), (1, b[i], i == 0)], last=i == 4)
        pieces.append(sse("messages", [chunk, META]))
    events = await filtered(pieces)
    joined = check_chunks(chunks_of(events)["messages:m2"])
    assert masked(joined[0]) == args_with(MASK)
    assert leaked(joined[1]) == [] and MASK in joined[1], joined[1]


async def test_arguments_without_a_key_pass_at_once_and_unchanged():
    args = args_with("the Eiffel Tower")
    deltas = splits(args, 3)[5]
    pieces = [sse("messages", [chunk_dict("m3", [(0, d, i == 0)]), META])
              for i, d in enumerate(deltas)]
    events = await filtered(pieces)
    shown = [data[0]["tool_call_chunks"][0]["args"] for name, data in events
             if name == "messages" and data[0]["tool_call_chunks"]]
    assert "".join(shown) == args


async def test_accumulated_partial_messages_show_no_start_of_the_key():
    """messages/partial carries the call's arguments so far: never an end that begins the key."""
    args = args_with(KEY)
    pieces = []
    for cut in range(1, len(args) + 1):
        message = chunk_dict("m4", [(0, args[:cut], True)])
        message["type"] = "AIMessageChunk"
        pieces.append(sse("messages/partial", [message]))
    events = await filtered(pieces)
    for _name, data in events:
        assert leaked(json.dumps(data, ensure_ascii=False)) == [], data
        message = data[0]
        shown = message["tool_call_chunks"][0]["args"]
        try:
            expected = parse_partial_json(shown) if shown else {}
        except Exception:  # noqa: BLE001
            expected = None
        assert [c["args"] for c in message["tool_calls"]] == (
            [expected] if isinstance(expected, dict) else [])
    assert events[-1][1][0]["tool_call_chunks"][0]["args"] == args_with(MASK)


@pytest.mark.parametrize("form", list(FORMS))
async def test_partial_messages_of_parsed_calls_show_no_start_of_the_key(form: str):
    """langgraph-api's messages/partial: the accumulated message as an ``ai`` message whose calls
    are parsed from the arguments so far (no chunks): the value still arriving never ends in the
    start of the key, and the values before it are redacted whole."""
    args = json.dumps({"before": f"x {FORMS[form]} y", "query": f"look up {FORMS[form]} please"})
    pieces = []
    for cut in range(1, len(args) + 1):
        parsed = parse_partial_json(args[:cut])
        message = {"content": "", "additional_kwargs": {}, "type": "ai", "id": "m5",
                   "tool_calls": [{"name": "search", "args": parsed, "id": "call_1",
                                   "type": "tool_call"}], "invalid_tool_calls": []}
        pieces.append(sse("messages/partial", [message]))
    events = await filtered(pieces)
    assert len(events) == len(args)
    for _name, data in events:
        assert leaked(json.dumps(data, ensure_ascii=False)) == [], data
    last = events[-1][1][0]["tool_calls"][0]["args"]
    assert last["before"] == f"x {MASK} y" and last["query"].startswith("look up ")
