"""The two model-call entry points of nodes/llm.py: ``ask`` (schema reply) and ``ask_label`` (verdict).

Every model-calling node goes through one of them, so what they promise is checked once here:
the role's model, the call tagged and counted in the node's ``CallLog``, the reply or ``None``
plus the raw text, and for verdicts the free-text fall-back and the single re-ask.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from factdebate.core.context import Context
from factdebate.core.labels import QueryOut
from factdebate.nodes import llm
from factdebate.testing.script import ScriptCall
from factdebate.testing.scripted import scripted

MESSAGES = [HumanMessage("Claim: Paris is in France.")]


def use_model(
    monkeypatch: pytest.MonkeyPatch, replies: list[Any]
) -> tuple[list[ScriptCall], list[str]]:
    """Route every ``model_for`` to a scripted model answering ``replies`` in turn;
    returns the calls it saw and the specs asked for."""
    seen: list[ScriptCall] = []
    specs: list[str] = []

    def respond(call: ScriptCall) -> Any:
        seen.append(call)
        return replies[call.index]

    model = scripted(respond)

    async def model_for(spec: str, ctx: Context) -> Any:
        specs.append(spec)
        return model

    monkeypatch.setattr(llm, "model_for", model_for)
    return seen, specs


def test_ask_tags_counts_and_returns_the_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    seen, specs = use_model(monkeypatch, [{"query": "capital of France"}, "no JSON here"])
    calls = llm.CallLog()
    ctx = Context()
    parsed, raw = asyncio.run(llm.ask(ctx, "scripted:x", MESSAGES, QueryOut, calls=calls,
                                      role="query", agent="rag", round_=2))
    assert isinstance(parsed, QueryOut) and parsed.query == "capital of France"
    assert "capital of France" in raw
    assert (seen[0].role, seen[0].agent, seen[0].round, seen[0].schema) == (
        "query", "rag", 2, QueryOut)
    assert specs == ["scripted:x"]

    parsed, raw = asyncio.run(llm.ask(ctx, "scripted:x", MESSAGES, QueryOut, calls=calls,
                                      role="query"))
    assert parsed is None and raw == "no JSON here"  # unreadable: the node reads the raw text
    assert (seen[1].agent, seen[1].round) == ("", 0)
    assert calls.update()["ledger"]["llm_calls"] == 2


def test_ask_label_reads_structured_then_free_text(monkeypatch: pytest.MonkeyPatch) -> None:
    seen, _ = use_model(monkeypatch, [{"reasoning": "r", "label": "REFUTES"},
                                   "After all, the claim is refuted."])
    calls = llm.CallLog()
    reasoning, label = asyncio.run(llm.ask_label(Context(), "scripted:x", MESSAGES, "fever",
                                                 calls=calls, role="judge", round_=3))
    assert (reasoning, label.label, label.how) == ("r", "REFUTES", "structured")
    assert seen[0].schema is not None and seen[0].schema.__name__ != "QueryOut"
    assert (seen[0].role, seen[0].round) == ("judge", 3)

    reasoning, label = asyncio.run(llm.ask_label(Context(), "scripted:x", MESSAGES, "fever",
                                                 calls=calls, role="judge"))
    assert label.label == "REFUTES" and label.how != "structured"
    assert reasoning == "After all, the claim is refuted."
    assert len(seen) == 2 and calls.update()["ledger"]["llm_calls"] == 2  # no re-ask needed


def test_ask_label_re_asks_once_then_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    seen, _ = use_model(monkeypatch, ["???", "still nothing", "never asked"])
    calls = llm.CallLog()
    reasoning, label = asyncio.run(llm.ask_label(Context(), "scripted:x", MESSAGES, "fever",
                                                 calls=calls, role="debater", agent="a1"))
    assert (label.label, label.how) == (None, "failed") and reasoning == "still nothing"
    assert len(seen) == 2 and seen[1].messages[-1].content == llm.REASK
    assert calls.update()["ledger"]["llm_calls"] == 2
