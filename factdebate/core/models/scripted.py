"""The deterministic scripted chat model: a test double for graph tests and overhead benchmarks.

It is never a default and its outputs are never results. A *responder* decides each reply from a
``ScriptCall`` (role, agent, round, requested schema, messages); nodes name their role in the call
metadata (``fd_role``, ``fd_agent``, ``fd_round``), so scripts do not have to parse prompts.
Every call is recorded in ``timeline`` with start and end times, which the overhead benchmark
checks against the critical path. ``latency_s`` simulates provider latency with ``asyncio.sleep``
(so concurrent calls overlap, as they would against a real API).

Specs: ``scripted:<scenario>`` with optional ``?latency=0.1`` (seconds) and ``cite=shown|wrong|none``
(how verdicts cite the documents they were shown, ``scripted_citations.py``), e.g.
``scripted:disagree?latency=0.1``. Scenarios are registered in ``SCENARIOS``.

The double stands in for a provider, so every call goes through ``BaseChatModel``'s public path
(callbacks, tracing, ``usage_metadata`` with whitespace-word token counts); only its own
bookkeeping is kept cheap, because the overhead and scaling benchmarks count it as framework CPU.
Measured per call with ``timeit`` (py-spy ``--gil`` of Tool-MAD claims put the double at ~6 % of
the event loop): the prompt is joined once per call (``ScriptCall.prompt`` is cached; responders
and the token count used to join it up to three times), the reply's words are counted once, and
``_get_ls_params`` is overridden - as LangChain asks providers to - with the value the base class
derives for this class (the base probes ``model``/``model_name``/``temperature``/``max_tokens``
with ``hasattr``, each miss a pydantic ``__getattr__`` raising ``AttributeError``: 22 us -> 1 us).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, ClassVar
from urllib.parse import parse_qsl

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, PrivateAttr

from factdebate.core.errors import ConfigError
from factdebate.core.models.script import (  # noqa: F401 - re-exported for scripts and tests
    SCENARIOS,
    CallRecord,
    Responder,
    ScriptCall,
    ScriptFault,
)
from factdebate.core.models.scripted_citations import CITE_MODES, add_citations
from factdebate.core.models.structured import json_structured_output


def _words(text: str) -> int:
    """The double's token count: about one per word (spaces and line breaks + 1).

    Counted without splitting: ``len(text.split())`` built a list of every word of every prompt
    (judge prompts carry all evidence) and was ~2.5% of an eval worker's CPU (py-spy).
    """
    if not text:
        return 0
    return text.count(" ") + text.count("\n") + 1


class ScriptedChatModel(BaseChatModel):
    """A chat model whose replies come from a Python responder."""

    fd_native_json: ClassVar[bool] = True
    """Writes schema-valid JSON itself for every structured-output method (negotiation.py)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responder: Any
    """The ``Responder`` callable."""
    latency_s: float = 0.0
    """Simulated latency per call."""
    scenario: str = "custom"
    """Name shown in traces."""
    cite: str = "shown"
    """How replies cite the documents they were shown: ``shown``, ``wrong`` or ``none``
    (``scripted_citations.py``)."""

    _timeline: list[CallRecord] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "factdebate-scripted"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """LangSmith params, equal to what ``BaseChatModel._get_ls_params`` derives for this class
        (no ``model``/``model_name``/``temperature``/``max_tokens`` fields: only per-call kwargs)."""
        provider = type(self).__name__
        provider = provider[4:] if provider.startswith("Chat") else \
            provider[:-4] if provider.endswith("Chat") else provider
        params = LangSmithParams(ls_provider=provider.lower(), ls_model_type="chat")
        if stop:
            params["ls_stop"] = stop
        if isinstance(kwargs.get("model"), str):
            params["ls_model_name"] = kwargs["model"]
        if isinstance(kwargs.get("temperature"), (int, float)):
            params["ls_temperature"] = kwargs["temperature"]
        if isinstance(kwargs.get("max_tokens"), int):
            params["ls_max_tokens"] = kwargs["max_tokens"]
        return params

    @property
    def timeline(self) -> list[CallRecord]:
        """Calls made so far, in start order."""
        return sorted(self._timeline, key=lambda r: r.start)

    def reset(self) -> None:
        """Clear the timeline."""
        with self._lock:
            self._timeline.clear()

    # -- generation -------------------------------------------------------------------------
    def _make_call(
        self, messages: list[BaseMessage], run_manager: Any, kwargs: dict
    ) -> tuple[ScriptCall, CallRecord]:
        meta: dict[str, Any] = dict(getattr(run_manager, "metadata", None) or {})
        # pydantic serves each private-attribute read through __getattr__ (~2 us): read the dict once
        private: dict[str, Any] = self.__pydantic_private__ or {}
        timeline = private["_timeline"]
        with private["_lock"]:
            record = CallRecord(len(timeline), "", "", 0, time.monotonic(), 0.0)
            timeline.append(record)
        call = ScriptCall(
            index=record.index,
            role=str(meta.get("fd_role", "")),
            agent=str(meta.get("fd_agent", "")),
            round=int(meta.get("fd_round", 0) or 0),
            schema=kwargs.get("fd_schema"),
            messages=list(messages),
            metadata=meta,
        )
        return call, record

    def _finish(self, call: ScriptCall, record: CallRecord) -> ChatResult:
        reply: Any = add_citations(call, self.responder(call), self.cite)
        extra_meta: dict[str, Any] = {}
        if isinstance(reply, AIMessage):  # a responder setting response_metadata too
            reply, extra_meta = str(reply.content), dict(reply.response_metadata)
        if isinstance(reply, BaseModel):
            text = reply.model_dump_json()
        elif isinstance(reply, dict):
            text = json.dumps(reply)
        else:
            text = str(reply)
        with (self.__pydantic_private__ or {})["_lock"]:
            record.role, record.agent, record.round = call.role, call.agent, call.round
            record.end = time.monotonic()
        prompt_words, reply_words = _words(call.prompt), _words(text)
        msg = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": prompt_words,
                "output_tokens": reply_words,
                "total_tokens": prompt_words + reply_words,
            },
            response_metadata={"model_name": f"scripted:{self.scenario}", **extra_meta},
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call, record = self._make_call(messages, run_manager, kwargs)
        if self.latency_s:
            time.sleep(self.latency_s)
        return self._finish(call, record)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call, record = self._make_call(messages, run_manager, kwargs)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return self._finish(call, record)

    # -- structured output --------------------------------------------------------------------
    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable:
        """Ask the responder for ``schema`` and validate its JSON reply against it."""
        return json_structured_output(self, schema, include_raw=include_raw)


def load_scripted_model(name: str, options: dict[str, Any]) -> ScriptedChatModel:
    """Provider loader for ``scripted:<scenario>[?latency=S]``."""
    scenario, _, query = name.partition("?")
    params = dict(parse_qsl(query))
    responder = SCENARIOS.get(scenario)()
    cite = params.get("cite", "shown")
    if cite not in CITE_MODES:
        raise ConfigError(f"scripted model option cite={cite!r} is not one of {', '.join(CITE_MODES)}",
                          "use scripted:<scenario>?cite=shown|wrong|none")
    return ScriptedChatModel(
        responder=responder, latency_s=float(params.get("latency", 0.0)), scenario=scenario,
        cite=cite,
    )


def scripted(responder: Responder, *, latency_s: float = 0.0) -> ScriptedChatModel:
    """A scripted model around an ad-hoc responder (tests)."""
    return ScriptedChatModel(responder=responder, latency_s=latency_s)
