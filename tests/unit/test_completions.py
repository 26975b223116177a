"""``n`` completions per request and the ledger's counting of them, without a server.

The provider path (an OpenAI-compatible server that serves, ignores or rejects ``n`` and reports
``cached_tokens``) is tested over HTTP in ``tests/integration/test_n_completions.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult, LLMResult

from factdebate.core.labels import QueryOut
from factdebate.core.ledger import UsageTracker, usage_detail, usage_of
from factdebate.core.models import completions
from factdebate.testing.scripted import load_scripted_model, scripted


class OneChoiceModel(BaseChatModel):
    """A chat model of a class that takes no ``n`` (like the embedded llama.cpp model)."""

    seen: list[dict[str, Any]] = []
    fd_native_json: bool = True

    @property
    def _llm_type(self) -> str:
        return "one-choice"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.seen.append(kwargs)
        return ChatResult(generations=[ChatGeneration(message=AIMessage('{"query": "q"}'))])


def test_a_model_that_does_not_serve_n_gets_one_request_per_completion() -> None:
    completions.N_SUPPORT.reset()
    model = OneChoiceModel()
    assert not completions.N_SUPPORT.may_serve(model)
    outs = asyncio.run(completions.ask_n(model, [HumanMessage("x")], QueryOut, 3, config=None,
                                         setting="auto"))
    assert [o["parsed"] for o in outs] == [QueryOut(query="q")] * 3
    assert len(model.seen) == 3 and all("n" not in kw for kw in model.seen)


def test_the_double_serves_n_with_one_usage_on_every_completion() -> None:
    model = scripted(lambda call: {"query": f"q{call.index}"})
    assert completions.N_SUPPORT.may_serve(model)
    result = asyncio.run(model.agenerate([[HumanMessage("one two three")]], n=3,
                                         fd_schema=QueryOut))
    gens = result.generations[0]
    assert [g.message.content for g in gens] == ['{"query": "q0"}'] * 3  # one call, 3 replies
    assert all(g.message.usage_metadata == gens[0].message.usage_metadata for g in gens)
    assert gens[0].message.usage_metadata["input_tokens"] == 3
    assert usage_detail(result) == (3, 6, 0) and usage_of(result) == (3, 6)
    assert len(model.timeline) == 1


def test_the_ledger_counts_a_multi_completion_request_once_and_its_cached_tokens() -> None:
    usage = {"input_tokens": 100, "output_tokens": 30, "total_tokens": 130,
             "input_token_details": {"cache_read": 64}}
    result = LLMResult(generations=[[ChatGeneration(message=AIMessage("a", usage_metadata=usage))
                                     for _ in range(3)]])
    tracker = UsageTracker()
    tracker.on_llm_end(result, run_id=None)  # type: ignore[arg-type]
    assert tracker.delta() == {"llm_calls": 1, "prompt_tokens": 100, "completion_tokens": 30,
                               "cached_tokens": 64, "multi_completion_calls": 1}
    # OpenAI's usage object in llm_output when the messages carry none
    raw = LLMResult(generations=[[ChatGeneration(message=AIMessage("a"))]], llm_output={
        "token_usage": {"prompt_tokens": 40, "completion_tokens": 2,
                        "prompt_tokens_details": {"cached_tokens": 32}}})
    assert usage_detail(raw) == (40, 2, 32)


def test_the_double_reports_cached_prefixes_as_openai_counts_them() -> None:
    model = load_scripted_model("disagree?cache=prefix", {})
    long = " ".join(f"w{i}" for i in range(1500))

    def cached(text: str) -> int:
        result = asyncio.run(model.agenerate([[HumanMessage(text)]], fd_schema=QueryOut,
                                             metadata={"fd_role": "query"}))
        return result.generations[0][0].message.usage_metadata["input_token_details"]["cache_read"]

    assert cached(long) == 0  # nothing seen yet
    assert cached(long + " tail") == 1408  # 11 whole steps of 128 tokens of the seen prompt
    assert cached(" ".join(f"w{i}" for i in range(900))) == 0  # under 1,024 tokens: never cached
    with pytest.raises(Exception, match="cache="):
        load_scripted_model("disagree?cache=yes", {})
