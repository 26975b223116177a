"""Structured-output negotiation and error triage (no network: real OpenAI SDK error objects)."""

from __future__ import annotations

import httpx
import openai
import pytest

from factdebate.core.models import load_model
from factdebate.core.models.negotiation import (
    Negotiator,
    format_refusal,
    json_candidates,
    request_rejected,
)
from factdebate.nodes.llm import is_retryable

LLAMA_500 = ("1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', "
             "'type'), 'msg': \"Input should be 'text' or 'json_object'\"}")


def status_error(cls: type, status: int, message: str) -> Exception:
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    response = httpx.Response(status, request=request, json={"error": {"message": message}})
    return cls(message, response=response, body={"message": message})


def test_a_refused_format_is_recognised_and_not_retried():
    exc = status_error(openai.InternalServerError, 500, LLAMA_500)
    assert format_refusal(exc) and request_rejected(exc) and not is_retryable(exc)


def test_overload_and_connection_errors_are_transient():
    for exc in (status_error(openai.InternalServerError, 503, "server overloaded"),
                status_error(openai.RateLimitError, 429, "slow down"),
                openai.APIConnectionError(request=httpx.Request("POST", "http://x"))):
        assert is_retryable(exc) and not format_refusal(exc) and request_rejected(exc) is None


def test_auto_falls_back_once_per_model_and_keeps_explicit_methods():
    negotiator = Negotiator()
    model = load_model("openai:m1", base_url="http://127.0.0.1:9/v1")
    other = load_model("openai:m2", base_url="http://127.0.0.1:9/v1")
    refusal = status_error(openai.InternalServerError, 500, LLAMA_500)
    assert negotiator.method(model, "auto") == "json_schema"
    assert negotiator.fall_back(model, "json_schema", refusal) == "function_calling"
    # a concurrent call that saw the same refusal does not move the method twice
    assert negotiator.fall_back(model, "json_schema", refusal) == "function_calling"
    assert negotiator.method(model, "auto") == "function_calling"
    assert negotiator.method(other, "auto") == "json_schema"
    assert negotiator.method(model, "text") == "text"
    assert negotiator.fall_back(model, "function_calling", refusal) == "json_mode"
    assert negotiator.fall_back(model, "json_mode", refusal) == "text"
    assert negotiator.fall_back(model, "text", refusal) is None


def test_text_replies_yield_every_json_object():
    text = 'Sure. ```json\n{"label": "SUPPORTS", "x": {"y": 1}}\n``` then {bad} {"label": "NO"}'
    assert json_candidates(text) == [{"label": "SUPPORTS", "x": {"y": 1}}, {"label": "NO"}]


def test_a_provider_without_its_package_names_the_package():
    from factdebate.core.errors import ConfigError

    with pytest.raises(ConfigError, match="pip install langchain-anthropic"):
        load_model("anthropic:claude-3-5-haiku-latest")
