"""RAGAS' questions in one request with ``n`` where the provider serves it; cached tokens counted.

A real loopback HTTP server poses as an OpenAI-compatible endpoint (LangChain's ``ChatOpenAI``
over HTTP, as in production): it answers ``/v1/chat/completions`` with schema-valid JSON and an
OpenAI ``usage`` object that reports ``prompt_tokens_details.cached_tokens``, and, per test, serves
``n`` choices, ignores ``n`` (one choice, as llama.cpp's server does) or rejects it (HTTP 400).
The prompt is billed once for 3 questions where ``n`` is served, the fallback is
decided once per model and recorded, and the ledger counts the provider's cached tokens.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage

from factdebate.core.ledger import UsageTracker
from factdebate.core.models import clear_model_cache, completions, load_model, negotiation
from factdebate.testing.scenario_replies import fill_schema

PROMPT_TOKENS, CACHED, COMPLETION = 1300, 1152, 7


class Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint; ``mode`` says what it does with ``n`` (``serves``,
    ``ignores``, ``rejects``) or that it refuses ``json_schema`` as llama.cpp's server does and
    serves ``n`` tool calls (``tools_only``)."""

    mode: ClassVar[str] = "serves"
    requests: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def _send(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        Endpoint.requests.append(request)
        n = int(request.get("n") or 1)
        if n > 1 and Endpoint.mode == "rejects":
            self._send(400, {"error": {"message": "'n' is not supported: only n=1",
                                       "type": "invalid_request_error", "param": "n"}})
            return
        fmt = request.get("response_format") or {}
        if Endpoint.mode == "tools_only" and fmt.get("type") == "json_schema":  # llama.cpp's words
            self._send(500, {"error": {"message": "1 validation error: {'type': 'literal_error', "
                                       "'loc': ('body', 'response_format', 'type'), 'msg': "
                                       "\"Input should be 'text' or 'json_object'\"}"}})
            return
        choices = 1 if Endpoint.mode == "ignores" else n
        text = "Is it true that Paris is in France?"
        message: dict[str, Any] = {"role": "assistant", "refusal": None}
        if request.get("tools"):  # function calling: the reply is the tool's arguments
            function = request["tools"][0]["function"]
            message |= {"content": None, "tool_calls": [{
                "id": "call_1", "type": "function", "function": {
                    "name": function["name"],
                    "arguments": json.dumps(fill_schema(function["parameters"], text=text))}}]}
        else:
            schema = (fmt.get("json_schema") or {}).get("schema")
            message["content"] = json.dumps(fill_schema(schema, text=text))
        self._send(200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
            "model": request.get("model", "m"),
            "choices": [{"index": i, "finish_reason": "stop", "logprobs": None,
                         "message": message} for i in range(choices)],
            "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION * choices,
                      "total_tokens": PROMPT_TOKENS + COMPLETION * choices,
                      "prompt_tokens_details": {"cached_tokens": CACHED}}})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def model(url: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Any:
    """``openai:<test name>`` on the endpoint, with fresh negotiation and ``n`` records."""
    monkeypatch.delenv("FACTDEBATE_STRUCTURED_OUTPUT", raising=False)
    Endpoint.requests.clear()
    negotiation.NEGOTIATOR.reset()
    completions.N_SUPPORT.reset()
    clear_model_cache()
    return load_model(f"openai:{request.node.name[:40]}?max_retries=0", base_url=url)


def _questions(model: Any, n: int = 3) -> tuple[list[Any], UsageTracker]:
    """``n`` answer-relevancy questions through the RAGAS adapter, counted by a tracker."""
    from ragas.metrics.collections.answer_relevancy.util import AnswerRelevanceOutput

    from factdebate.tools import scoring

    tracker = UsageTracker()
    judge = scoring.LangChainRagasLLM(model)

    async def ask() -> list[Any]:
        token = scoring._CALL.set(scoring.metric_config({"callbacks": [tracker]},
                                                        "answer_relevancy"))
        try:
            return await judge.agenerate_n("Generate a question for: Paris is in France.",
                                           AnswerRelevanceOutput, n)
        finally:
            scoring._CALL.reset(token)

    return asyncio.run(ask()), tracker


def test_a_provider_that_serves_n_gets_one_request_billed_once(model: Any) -> None:
    pytest.importorskip("ragas")
    Endpoint.mode = "serves"
    questions, tracker = _questions(model)
    assert [q.question for q in questions] == ["Is it true that Paris is in France?"] * 3
    assert [r.get("n") for r in Endpoint.requests] == [3]  # one request for the three
    assert Endpoint.requests[0]["response_format"]["type"] == "json_schema"
    # one usage for the request, on every choice: the prompt is counted once
    assert (tracker.llm_calls, tracker.prompt_tokens, tracker.completion_tokens) == \
        (1, PROMPT_TOKENS, 3 * COMPLETION)
    assert tracker.cached_tokens == CACHED and tracker.multi_completion_calls == 1
    assert tracker.delta()["cached_tokens"] == CACHED
    assert tracker.structured_output == {"json_schema": 1}
    assert completions.N_SUPPORT.served() == {f"MaskedChatOpenAI {model.model_name} "
                                              f"{model.openai_api_base}": True}


def test_a_provider_that_ignores_n_is_topped_up_and_then_asked_once_per_question(
        model: Any) -> None:
    pytest.importorskip("ragas")
    Endpoint.mode = "ignores"  # llama.cpp's server: one choice whatever n says
    questions, tracker = _questions(model)
    assert len(questions) == 3
    assert [r.get("n") for r in Endpoint.requests] == [3, None, None]  # the two missing ones
    assert tracker.llm_calls == 3 and tracker.prompt_tokens == 3 * PROMPT_TOKENS
    assert tracker.cached_tokens == 3 * CACHED and tracker.multi_completion_calls == 0
    assert list(completions.N_SUPPORT.served().values()) == [False]
    Endpoint.requests.clear()
    questions, tracker = _questions(model)  # recorded: no n any more
    assert len(questions) == 3 and [r.get("n") for r in Endpoint.requests] == [None] * 3


def test_a_provider_that_rejects_n_falls_back_to_one_request_per_question(model: Any) -> None:
    pytest.importorskip("ragas")
    Endpoint.mode = "rejects"
    questions, tracker = _questions(model)
    assert len(questions) == 3
    assert [r.get("n") for r in Endpoint.requests] == [3, None, None, None]
    assert tracker.llm_calls == 3 and tracker.llm_errors == 1  # the refused request
    assert list(completions.N_SUPPORT.served().values()) == [False]


def test_a_refused_output_method_is_negotiated_not_taken_for_a_refused_n(model: Any) -> None:
    """The first request with n=3 meets a server that refuses json_schema: the negotiation moves
    to function calling and the request with n=3 is sent again (n is not blamed)."""
    pytest.importorskip("ragas")
    Endpoint.mode = "tools_only"
    questions, tracker = _questions(model)
    assert [q.question for q in questions] == ["Is it true that Paris is in France?"] * 3
    assert [(r.get("n"), "tools" in r) for r in Endpoint.requests] == [(3, False), (3, True)]
    assert tracker.structured_output == {"function_calling": 1} and tracker.llm_errors == 1
    assert list(completions.N_SUPPORT.served().values()) == [True]
    assert list(negotiation.NEGOTIATOR.served().values()) == ["function_calling"]


def test_cached_tokens_of_a_single_call_reach_the_ledger(model: Any) -> None:
    from factdebate.core.labels import QueryOut
    from factdebate.nodes.llm import CallLog, ask_structured, call_config

    Endpoint.mode = "serves"
    calls = CallLog()
    parsed, _ = asyncio.run(ask_structured(
        model, [HumanMessage("Claim: Paris is in France.")], QueryOut, retries=0,
        config=call_config(calls, role="query", agent="rag", round_=1)))
    assert isinstance(parsed, QueryOut)
    ledger = calls.update()["ledger"]
    assert (ledger["llm_calls"], ledger["prompt_tokens"], ledger["cached_tokens"]) == \
        (1, PROMPT_TOKENS, CACHED)


class OneAtATime(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, float(len(text) % 5), 0.5]


def test_a_stability_score_on_an_n_serving_provider_makes_three_requests(model: Any) -> None:
    """Faithfulness' two requests and answer relevancy's one (n=3), instead of 5 requests."""
    pytest.importorskip("ragas")
    from factdebate.nodes.llm import CallLog, call_config
    from factdebate.tools.scoring import stability_scores

    Endpoint.mode = "serves"
    calls = CallLog()
    result = asyncio.run(stability_scores(
        question="Paris is in France.", answer="Paris is in France.",
        contexts=["Paris is the capital of France."], llm=model, embeddings=OneAtATime(),
        config=call_config(calls, role="ragas", agent="rag", round_=1)))
    assert result["errors"] == [] and result["answer_relevancy"] is not None
    assert sorted(r.get("n") or 1 for r in Endpoint.requests) == [1, 1, 3]
    ledger = calls.update()["ledger"]
    assert ledger["llm_calls"] == 3 and ledger["prompt_tokens"] == 3 * PROMPT_TOKENS
    assert ledger["cached_tokens"] == 3 * CACHED and ledger["multi_completion_calls"] == 1
    # the RAGAS prompts carry no second copy of the schema (factdebate.patches.ragas_prompts)
    for request in Endpoint.requests:
        assert "complies with the following schema" not in request["messages"][-1]["content"]
