"""A key a model streams inside tool-call arguments reaches no client of ``langgraph dev``.

The operator's model is an OpenAI-compatible stand-in that answers every verdict request - the
server asks with function calling (``FACTDEBATE_STRUCTURED_OUTPUT=function_calling``) - with a
tool call whose arguments quote the operator's key, streamed in deltas of a few characters, so
the key is split over many ``tool_call_chunks`` (and the provider's raw deltas). A client streams
the run in ``messages-tuple``, ``messages`` and ``events`` modes: no event, no parsed call and no
arguments it joins per call show the key, and the joined arguments show it masked.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.loopback import serve_http
from tests.integration.servers import needs_langgraph, serving, tiny_index, warm_home

pytestmark = needs_langgraph

OP_KEY = f"sk-op-{secrets.token_hex(16)}"
USER_KEY = f"bob-{secrets.token_hex(10)}"
CLAIM = "Berlin is the capital of Germany."


class ToolCaller(BaseHTTPRequestHandler):
    """A chat-completions server: a request with ``tools`` is answered with a call of the first
    tool whose arguments hold the key, streamed in ``size``-character deltas when asked."""

    size = 4
    sent: list[str] = []

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        tools = request.get("tools") or []
        name = tools[0]["function"]["name"] if tools else None
        args = json.dumps({"reasoning": f"the reply read {OP_KEY} twice", "label": "SUPPORTS"})
        ToolCaller.sent.append(args)
        if request.get("stream"):
            chunks = []
            for i in range(0, len(args), self.size):
                call: dict[str, Any] = {"index": 0, "function": {"arguments": args[i:i + self.size]}}
                if i == 0:
                    call.update(id="call_1", type="function",
                                function={"name": name, "arguments": args[:self.size]})
                delta = {"role": "assistant", "tool_calls": [call]} if name else {
                    "content": args[i:i + self.size]}
                chunks.append({"id": "c1", "object": "chat.completion.chunk", "created": 0,
                               "model": "m", "choices": [{"index": 0, "delta": delta,
                                                          "finish_reason": None}]})
            chunks.append({"id": "c1", "object": "chat.completion.chunk", "created": 0,
                           "model": "m", "choices": [{"index": 0, "delta": {},
                                                      "finish_reason": "tool_calls"}]})
            body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
            self._send("text/event-stream", body + b"data: [DONE]\n\n")
            return
        message: dict[str, Any] = {"role": "assistant", "content": None if name else args}
        if name:
            message["tool_calls"] = [{"id": "call_1", "type": "function",
                                      "function": {"name": name, "arguments": args}}]
        self._send("application/json", json.dumps({
            "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode())

    def _send(self, kind: str, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work: Path = tmp_path_factory.mktemp("tool-call-secrets")
    with serve_http(ToolCaller) as host, serving(work, {
            "OPENAI_API_KEY": OP_KEY, "FACTDEBATE_BASE_URL": f"http://{host}/v1",
            "FACTDEBATE_MODEL": "openai:gpt-4o-mini",
            "FACTDEBATE_STRUCTURED_OUTPUT": "function_calling",
            "FACTDEBATE_HOME": str(warm_home(work / "home")),
            "FACTDEBATE_API_KEYS": f"bob:{USER_KEY}",
            "FACTDEBATE_INDEX_DIR": str(tiny_index(work))}) as url:
        yield url


def model_chunks(raw: str) -> dict[str, list[dict[str, Any]]]:
    """The model chunks of a stream by message (messages-tuple) or run (events)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for block in raw.replace("\r\n", "\n").split("\n\n"):
        lines = dict(ln.split(": ", 1) for ln in block.split("\n") if ": " in ln)
        name, data = lines.get("event", ""), lines.get("data")
        if data is None:
            continue
        value = json.loads(data)
        if name.split("|")[0] == "messages" and isinstance(value, list):
            out.setdefault(f"messages:{value[0].get('id')}", []).append(value[0])
        elif name == "events" and value.get("event") == "on_chat_model_stream":
            out.setdefault(f"events:{value['run_id']}", []).append(value["data"]["chunk"])
    return out


def shows_key(text: str) -> bool:
    return OP_KEY in text or OP_KEY[:12] in text


@pytest.mark.parametrize("size", [3, 4, 7])
def test_a_key_in_streamed_tool_call_arguments_reaches_no_client(server: str, size: int):
    ToolCaller.size = size
    ToolCaller.sent.clear()
    with httpx.Client(base_url=server, headers={"x-api-key": USER_KEY}, timeout=120) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        streamed = http.post(f"/threads/{thread}/runs/stream", json={
            "assistant_id": "cot", "input": {"claim": CLAIM},
            "stream_mode": ["messages-tuple", "events", "values"]})
        partial = http.post(f"/threads/{thread}/runs/stream", json={
            "assistant_id": "cot", "input": {"claim": CLAIM}, "stream_mode": ["messages"]})
        state = http.get(f"/threads/{thread}/state")
    assert streamed.status_code == 200 and partial.status_code == 200, streamed.text[:500]
    assert any(OP_KEY in sent for sent in ToolCaller.sent)  # the model did send the key
    assert not shows_key(streamed.text) and not shows_key(partial.text)
    assert not shows_key(state.text) and "***" in state.text  # the verdict held it, masked
    calls = 0
    for name, chunks in model_chunks(streamed.text).items():
        joined: dict[Any, str] = {}
        for chunk in chunks:
            for part in chunk.get("tool_call_chunks") or []:
                joined[part["index"]] = joined.get(part["index"], "") + part["args"]
            assert not shows_key(json.dumps(chunk.get("tool_calls"))), chunk
        for args in joined.values():
            calls += 1
            assert not shows_key(args), (name, args)
            assert json.loads(args) == {"reasoning": "the reply read *** twice",
                                        "label": "SUPPORTS"}, (name, args)
    assert calls >= 2, streamed.text[:2000]  # messages-tuple and events both streamed the call
    partials = [json.loads(ln.split(": ", 1)[1]) for ln in partial.text.splitlines()
                if ln.startswith("data: [")]
    shown = [p[0]["tool_calls"][0]["args"] for p in partials  # langgraph-api's partials: parsed
             if isinstance(p[0], dict) and p[0].get("tool_calls")]
    assert len(shown) > 10 and all(not shows_key(json.dumps(s)) for s in shown), shown[-3:]
    assert "***" in json.dumps(shown[-1]), shown[-1]
