"""Model faults: bad replies and provider errors through every registered framework.

Every model call of a run gets the same bad reply (or raises the same provider error) from the
scripted double. Whatever the framework, the run must finish - or, when a provider fault outlives
its retries, raise the original error, which the CLI turns into its resume message - and it must
never invent a label: a final label is one that some model reply actually named, and a run that
ends without one says why in ``flags``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.errors import FactDebateError
from factdebate.core.labels import get_label_set
from factdebate.graphs.registry import FRAMEWORKS, build_framework, context_class
from factdebate.nodes import llm
from factdebate.run.engine import interrupted_run
from factdebate.testing.scenarios import verdict
from factdebate.testing.scripted import ScriptCall

CLAIM = "The Eiffel Tower is in Paris."
DOCS = [
    {"id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a tower in Paris.",
     "source": "item", "url": "", "score": 1.0},
    {"id": "d2", "title": "Paris", "text": "Paris is the capital of France.", "source": "item",
     "url": "", "score": 1.0},
]
NEEDS_DOCUMENTS = {"madam_rag", "concat_rag"}
"""Frameworks that answer from the item's own documents (RAMDocs-style items)."""

Reply = Callable[[ScriptCall], Any]


def _good(call: ScriptCall) -> dict[str, Any]:
    return verdict(call, 1, "reasoning")


BAD_REPLIES: dict[str, Reply] = {
    "malformed_json": lambda c: '{"reasoning": "x", "label": "SUPP',
    "empty": lambda c: "",
    "truncated": lambda c: '{"reasoning": "The evidence shows that the tow',
    "wrong_field_name": lambda c: '{"reasoning": "r", "verdict_is": "REFUTES"}',
    "label_outside_set": lambda c: '{"reasoning": "r", "label": "PANTS ON FIRE"}',
    "over_long_200kb": lambda c: "lorem ipsum " * 17_000,
    "over_long_then_verdict": lambda c: "lorem ipsum " * 17_000 + json.dumps(_good(c)),
    "markdown_fenced_json": lambda c: "```json\n" + json.dumps(_good(c)) + "\n```",
    "two_conflicting_json": lambda c: '{"reasoning": "a", "label": "SUPPORTS"} '
                                      '{"reasoning": "b", "label": "REFUTES"}',
    "other_language_label": lambda c: '{"reasoning": "r", "label": "UNTERSTÜTZT"}',
    "lower_case_label": lambda c: '{"reasoning": "r", "label": "refutes"}',
    "control_characters": lambda c: '{"reasoning": "a\x07\x1b[31mb", "label": "REF\x08UTES"}',
    "null_bytes": lambda c: "\x00" * 64,
    "whitespace_only": lambda c: " \n\t \r\n  ",
    "every_label": lambda c: "SUPPORTS REFUTES NOT ENOUGH INFO CONFLICTING A B C D yes no maybe",
    "json_array": lambda c: '[{"label": "REFUTES"}]',
    "json_null": lambda c: "null",
    "wrong_types": lambda c: '{"reasoning": 5, "label": 3, "answers": "x", "selected": "all"}',
    "html_error_page": lambda c: "<html><body><h1>502 Bad Gateway</h1></body></html>",
    "refusal": lambda c: "I'm sorry, but I can't help with that request.",
    "unicode_junk": lambda c: "\u202e\ufeff\u200b🤖 \U0001f4a5 ﷽",
    "lone_surrogates": lambda c: '{"reasoning": "\ud800", "label": "REFUTES\udfff"}',
    "valid_json_then_trailing_text": lambda c: json.dumps(_good(c)) + " I hope this helps!",
    "bold_markdown_verdict": lambda c: "After weighing it all:\n**Verdict:** REFUTES",
}


def surface_labels(text: str, label_set_name: str) -> set[str]:
    """Labels of the set that ``text`` names in any surface form (label or synonym)."""
    upper = f" {re.sub(r'[^A-Z0-9]+', ' ', text.upper())} "
    return {label for surface, label in get_label_set(label_set_name).vocabulary()
            if f" {surface} " in upper}


def item_for(name: str) -> dict[str, Any]:
    return {"claim": CLAIM, "documents": DOCS} if name in NEEDS_DOCUMENTS else {"claim": CLAIM}


def context_for(name: str, spec: str, **overrides: Any) -> Any:
    extra: dict[str, Any] = {"tool_provider": "in_process", "wiki_backend": "static"} \
        if name == "mermaid" else {}
    return context_class(name)(debater_model=spec, rag_backend="static", search_backend="static",
                               llm_retries=1, **extra, **overrides)


async def run(name: str, spec: str, **overrides: Any) -> dict[str, Any]:
    graph = build_framework(name).compile(checkpointer=InMemorySaver())
    return await graph.ainvoke(item_for(name), {"configurable": {"thread_id": "fault"}},
                               context=context_for(name, spec, **overrides))


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries keep their count and order; the test does not wait out the back-off."""
    monkeypatch.setattr(llm, "BACKOFF_BASE_S", 0.0)


@pytest.mark.parametrize("variant", list(BAD_REPLIES))
@pytest.mark.parametrize("name", FRAMEWORKS.names())
async def test_bad_replies_never_crash_and_never_invent_a_label(scenario, name, variant):
    replies: list[str] = []

    def respond(call: ScriptCall) -> Any:
        reply = BAD_REPLIES[variant](call)
        replies.append(reply)
        return reply

    out = await run(name, scenario(respond))
    assert replies, "the framework made no model call"
    named = set().union(*(surface_labels(r, "fever") for r in replies))
    label, flags = out.get("label"), out.get("flags") or []
    assert label is None or label in named, f"{label!r} was never named by the model"
    if label is None and not out.get("answers"):
        assert flags, "a run without a label must say why in flags"
    if any(t.get("parse") == "guessed" for t in out.get("turns") or []):
        assert any("guessed" in f for f in flags), "a guessed parse must be flagged"
    for answer in out.get("answers") or []:
        assert any(answer.casefold() in r.casefold() for r in replies), answer


class RateLimited(Exception):
    """Shaped like an OpenAI/httpx 429: a status code and a Retry-After header."""

    status_code = 429

    def __init__(self, retry_after: str = "0") -> None:
        super().__init__("Error code: 429 - rate limit exceeded")
        self.response = type("R", (), {"headers": {"retry-after": retry_after}})()


PROVIDER_FAULTS: dict[str, Callable[[], Exception]] = {
    "timeout": asyncio.TimeoutError,
    "connection_error": lambda: ConnectionError("Connection refused"),
    "rate_limit_429": RateLimited,
}


@pytest.mark.parametrize("fault", list(PROVIDER_FAULTS))
@pytest.mark.parametrize("name", FRAMEWORKS.names())
async def test_persistent_provider_fault_raises_the_error_the_cli_reports(scenario, name, fault):
    attempts: list[str] = []

    def respond(call: ScriptCall) -> Any:
        attempts.append(call.role)
        raise PROVIDER_FAULTS[fault]()

    with pytest.raises(type(PROVIDER_FAULTS[fault]())) as caught:
        await run(name, scenario(respond))
    # every call in flight is tried once and retried llm_retries=1 time, then the run gives up
    assert 2 <= len(attempts) <= 2 * 10
    message = str(interrupted_run(caught.value, "t-42"))
    assert "--resume --thread-id t-42" in message and "checkpointed" in message


@pytest.mark.parametrize("fault", list(PROVIDER_FAULTS))
@pytest.mark.parametrize("name", FRAMEWORKS.names())
async def test_transient_provider_fault_is_retried_and_the_run_recovers(scenario, name, fault):
    from tests.graph.test_baselines import default_reply

    seen: set[tuple[str, str, int]] = set()

    def respond(call: ScriptCall) -> Any:
        key = (call.role, call.agent, call.round)
        if key not in seen:  # the first attempt of every distinct call fails
            seen.add(key)
            raise PROVIDER_FAULTS[fault]()
        return good_reply(call, default_reply)

    out = await run(name, scenario(respond))
    assert out.get("label") or out.get("answers")


def good_reply(call: ScriptCall, fallback: Reply) -> Any:
    """A valid reply for any role of any framework (the graph tests' own scripts)."""
    from factdebate.testing.scenarios import answer_role, madam_role, madke_role

    if call.role in ("query", "ragas"):
        return answer_role(call, debater_label=0)
    if call.role in ("select_knowledge",) or (call.schema and
                                              call.schema.__name__ == "ConsensusOut"):
        return madke_role(call)
    if call.role in ("agent", "aggregator"):
        return madam_role(call)
    if call.role == "decomposer":
        return {"triplets": [], "topic": "landmarks"}
    if call.role == "executor":
        return {"thought": "known", "answer": "SUPPORTS"}
    return fallback(call)


class Unauthorized(Exception):
    status_code = 401


@pytest.mark.parametrize(("make", "waits"), [
    (RateLimited, [0.0]),  # Retry-After: 0 -> the back-off alone (0 here)
    (lambda: RateLimited("7"), [7.0]),
    (lambda: RateLimited("86400"), [llm.MAX_RETRY_AFTER_S]),
    (lambda: __import__("factdebate.tools.tavily_search", fromlist=["x"]).SearchBackendError(
        "HTTP 429", status=429, retry_after=3.0), [3.0]),
    (Unauthorized, []),  # a client error other than 408/429 is not retried
    (lambda: __import__("factdebate.core.errors", fromlist=["x"]).ConfigError("no key"), []),
], ids=["429-no-wait", "429-retry-after-7", "429-capped", "search-backend-429", "401", "config"])
async def test_with_retries_honours_retry_after_with_a_cap(monkeypatch, make, waits):
    slept: list[float] = []

    async def no_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(llm.asyncio, "sleep", no_sleep)
    attempts = 0

    async def failing() -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise make()

    if waits:
        await llm.with_retries(failing, retries=2, what="test")
        assert attempts == 2 and slept == waits
    else:
        with pytest.raises((Unauthorized, FactDebateError)):
            await llm.with_retries(failing, retries=2, what="test")
        assert attempts == 1 and slept == []
