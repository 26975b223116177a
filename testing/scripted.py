"""The deterministic scripted chat model: a test double for graph tests and overhead benchmarks.

It is never a default and its outputs are never results. A *responder* decides each reply from a
``ScriptCall`` (role, agent, round, requested schema, messages); nodes name their role in the call
metadata (``fd_role``, ``fd_agent``, ``fd_round``), so scripts do not have to parse prompts.
Every call is recorded in ``timeline`` with start and end times, which the overhead benchmark
checks against the critical path. ``latency_s`` simulates provider latency with ``asyncio.sleep``
(so concurrent calls overlap, as they would against a real API).

Specs: ``scripted:<scenario>`` with optional ``?latency=0.1`` (seconds), ``cite=shown|wrong|none``
(how verdicts cite the documents they were shown, ``scripted_citations.py``), ``cache=prefix``
(report ``cached_tokens`` as OpenAI's prompt cache would, see below) and, for ``disagree``,
``first=AGENT[,AGENT...]`` (the agents that keep the first label, e.g. a plug-in framework's own),
e.g. ``scripted:disagree?latency=0.1``. Scenarios are registered in ``SCENARIOS``
(``factdebate.testing.script``): ``SCENARIOS.register(name, factory)`` with a factory that
returns a responder (a callable from ``ScriptCall`` to a reply), or a lazy ``"module:attr"``
string naming one; a plug-in module registers its own there at import time, so the CLI and the
server find them through ``FACTDEBATE_PLUGINS`` too.

Like OpenAI's API it serves ``n`` completions in one call (``agenerate(..., n=3)``: the responder
answers the same ``ScriptCall`` ``n`` times) and reports one usage for the request - the prompt
once, the completions summed - on every completion, as LangChain's OpenAI client does
(``fd_supports_n``; ``factdebate.core.models.completions``). With ``cache=prefix`` it keeps the
prompts it has seen, as a provider's prompt cache does across requests, and reports in
``usage_metadata["input_token_details"]["cache_read"]`` the tokens of the longest seen prefix, in
OpenAI's units: prompts of 1,024 tokens or more, cached in steps of 128 tokens from the start.

The double stands in for a provider, so every call goes through ``BaseChatModel``'s public path
(callbacks, tracing, ``usage_metadata`` with whitespace-word token counts); only its own
bookkeeping is kept cheap, because the overhead and scaling benchmarks count it as framework CPU.
Measured per call with ``timeit`` (py-spy ``--gil`` of Tool-MAD claims put the double at ~6 % of
the event loop): the prompt is joined once per call (``ScriptCall.prompt`` is cached, not joined
again by responders and the token count), the reply's words are counted once, and
``_get_ls_params`` is overridden - as LangChain asks providers to - with the value the base class
derives for this class (the base probes ``model``/``model_name``/``temperature``/``max_tokens``
with ``hasattr``, each miss a pydantic ``__getattr__`` raising ``AttributeError``: 22 us -> 1 us).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable
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
from factdebate.core.models.structured import json_structured_output
from factdebate.testing.script import (  # noqa: F401 - re-exported for scripts and tests
    SCENARIOS,
    CallRecord,
    Responder,
    ScriptCall,
    ScriptFault,
)
from factdebate.testing.scripted_citations import CITE_MODES, add_citations

CACHE_MIN_TOKENS = 1024
"""OpenAI caches prompts of at least this many tokens ..."""
CACHE_STEP_TOKENS = 128
"""... in steps of this many tokens from the start of the prompt."""
_SEPARATOR = re.compile(r"[ \n]")


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
    fd_supports_n: ClassVar[bool] = True
    """Serves ``n`` completions in one call (``factdebate.core.models.completions``)."""
    observers: ClassVar[list[Callable[[ScriptCall, int], None]]] = []
    """Called with every call (and its ``n``) of every instance, after the reply (benchmarks read
    the prompts back: ``factdebate bench tokens``)."""

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
    prompt_cache: bool = False
    """Report ``cached_tokens`` for prompt prefixes seen before (``cache=prefix``)."""

    _timeline: list[CallRecord] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _prefixes: set[int] = PrivateAttr(default_factory=set)

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

    def _reply(self, call: ScriptCall) -> tuple[str, dict[str, Any]]:
        """One completion's text and extra response metadata."""
        reply: Any = add_citations(call, self.responder(call), self.cite)
        extra_meta: dict[str, Any] = {}
        if isinstance(reply, AIMessage):  # a responder setting response_metadata too
            reply, extra_meta = str(reply.content), dict(reply.response_metadata)
        if isinstance(reply, BaseModel):
            return reply.model_dump_json(), extra_meta
        if isinstance(reply, dict):
            return json.dumps(reply), extra_meta
        return str(reply), extra_meta

    def _cached_tokens(self, prompt: str, tokens: int) -> int:
        """Tokens of ``prompt`` an OpenAI-style prompt cache holds (whole 128-token steps of the
        longest prefix seen before, 0 under 1,024); the prompt's steps are remembered."""
        ends = [m.start() for i, m in enumerate(_SEPARATOR.finditer(prompt), 1)
                if i % CACHE_STEP_TOKENS == 0]
        seen: set[int] = (self.__pydantic_private__ or {})["_prefixes"]
        keys = [hash(prompt[:end]) for end in ends]
        with (self.__pydantic_private__ or {})["_lock"]:
            hits = next((i for i, key in enumerate(keys) if key not in seen), len(keys))
            seen.update(keys)
        cached = hits * CACHE_STEP_TOKENS
        return cached if tokens >= CACHE_MIN_TOKENS and cached >= CACHE_MIN_TOKENS else 0

    def _finish(self, call: ScriptCall, record: CallRecord, n: int = 1) -> ChatResult:
        replies = [self._reply(call) for _ in range(max(1, n))]
        for observe in self.observers:
            observe(call, n)
        with (self.__pydantic_private__ or {})["_lock"]:
            record.role, record.agent, record.round = call.role, call.agent, call.round
            record.end = time.monotonic()
        prompt_words = _words(call.prompt)
        reply_words = sum(_words(text) for text, _ in replies)
        usage: dict[str, Any] = {"input_tokens": prompt_words, "output_tokens": reply_words,
                                 "total_tokens": prompt_words + reply_words}
        if self.prompt_cache:
            usage["input_token_details"] = {"cache_read": self._cached_tokens(call.prompt,
                                                                              prompt_words)}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(
            content=text, usage_metadata=usage,  # one usage per request, on every completion
            response_metadata={"model_name": f"scripted:{self.scenario}", **extra_meta},
        )) for text, extra_meta in replies])

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
        return self._finish(call, record, int(kwargs.get("n") or 1))

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
        return self._finish(call, record, int(kwargs.get("n") or 1))

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
    if "first" in params:
        if SCENARIOS.resolve(scenario) != "disagree":
            raise ConfigError(f"scripted model option first= is for the disagree scenario, not "
                              f"{scenario!r}", "use scripted:disagree?first=AGENT[,AGENT...]")
        from factdebate.testing.scenario_replies import disagree

        responder = disagree(tuple(a.strip() for a in params["first"].split(",") if a.strip()))
    else:
        responder = SCENARIOS.get(scenario)()
    cite = params.get("cite", "shown")
    if cite not in CITE_MODES:
        raise ConfigError(f"scripted model option cite={cite!r} is not one of {', '.join(CITE_MODES)}",
                          "use scripted:<scenario>?cite=shown|wrong|none")
    cache = params.get("cache", "none")
    if cache not in ("none", "prefix"):
        raise ConfigError(f"scripted model option cache={cache!r} is not none or prefix",
                          "use scripted:<scenario>?cache=prefix")
    return ScriptedChatModel(
        responder=responder, latency_s=float(params.get("latency", 0.0)), scenario=scenario,
        cite=cite, prompt_cache=cache == "prefix",
    )


def scripted(responder: Responder, *, latency_s: float = 0.0) -> ScriptedChatModel:
    """A scripted model around an ad-hoc responder (tests)."""
    return ScriptedChatModel(responder=responder, latency_s=latency_s)
