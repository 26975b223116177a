"""Several structured completions of one prompt: one request with ``n`` where the provider serves it.

RAGAS' answer relevancy samples ``strictness`` (3) questions from one prompt. ragas' own LangChain
wrapper asks for them with ``n=strictness`` in one request when the model can return several
choices (``ragas.llms.base.LangchainLLMWrapper.agenerate_text`` sets ``n`` on models that have it,
``is_multiple_completion_supported`` names OpenAI's) and sends ``strictness`` copies of the prompt
otherwise. :func:`ask_n` does the same over our structured output: the prompt is billed once instead
of ``n`` times (Tool-MAD with the stability score: 18 of a claim's 43 calls were these questions).

Which models are asked with ``n`` is decided per model class, model name and base URL, once per
process, and recorded (:data:`N_SUPPORT`, :meth:`NSupport.served`):

* a model that says it serves ``n`` (``fd_supports_n``: the scripted double) or LangChain's
  ``ChatOpenAI`` (OpenAI; vLLM and other OpenAI-compatible servers accept ``n`` as well) is asked
  once with ``n``;
* a reply with fewer choices than asked for (llama.cpp's server ignores ``n`` and answers one) or a
  request the server refuses (HTTP 4xx, e.g. a server that rejects ``n``) records the model as not
  serving ``n``: the missing completions are asked for one request each, and so is every later
  call of that model; a refused structured-output *method* is negotiated as for any call
  (``auto`` moves down to the next method) and the request with ``n`` is sent again;
* every other model (the embedded llama.cpp model, Anthropic, Ollama's own API ...) gets ``n``
  requests, sent concurrently.

A result's ledger shows what served: ``multi_completion_calls`` counts requests answered with
several completions (``factdebate.core.ledger``), and ``llm_calls`` the requests.

The request carries the structured-output method the negotiation settled on
(``factdebate.core.models.negotiation``): the request options LangChain's own
``with_structured_output(schema, method=...)`` binds (``response_format``, ``tools``), the schema
instruction for ``json_mode``/``text``, the ``structured_output:<method>`` tag the ledger counts.
Each completion is read as the single-call path reads it (tool-call arguments, else the JSON in the
text); one that does not validate comes back with its ``parsing_error`` for the caller to re-ask.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig, ensure_config
from pydantic import ValidationError

from factdebate.core.models import negotiation

log = logging.getLogger(__name__)


def _openai_class(model: BaseChatModel) -> bool:
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        return False
    return isinstance(model, ChatOpenAI)


class NSupport:
    """Whether each (model class, name, base URL) serves ``n`` completions per request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str, str], bool] = {}

    def may_serve(self, model: BaseChatModel) -> bool:
        """Ask this model with ``n`` (not yet seen refusing it, and of a class that takes it)."""
        known = self._known.get(negotiation.model_key(model))
        if known is not None:
            return known
        return bool(getattr(model, "fd_supports_n", False)) or _openai_class(model)

    def record(self, model: BaseChatModel, serves: bool, why: str = "") -> None:
        """Remember what a request with ``n`` showed (logged once when it is a refusal)."""
        key = negotiation.model_key(model)
        with self._lock:
            before = self._known.get(key)
            self._known[key] = serves
        if not serves and before is not False:
            log.warning("%s does not serve n completions per request (%s); asking one request "
                        "per completion from now on", negotiation.describe(model), why)

    def served(self) -> dict[str, bool]:
        """``"<class> <model> <url>" -> serves n`` as recorded so far (for run metadata)."""
        return {" ".join(p for p in key if p): v for key, v in self._known.items()}

    def reset(self) -> None:
        """Forget what was recorded (tests)."""
        with self._lock:
            self._known.clear()


N_SUPPORT = NSupport()


def _request_options(model: BaseChatModel, schema: Any, method: str) -> dict[str, Any]:
    """The keyword arguments a structured call by ``method`` sends with the messages: what
    ``model.with_structured_output(schema, method=method)`` binds (its first step is the model
    bound to them), ``fd_schema`` for natively-JSON models, none for ``text``."""
    if negotiation.native_json(model):
        return {"fd_schema": schema}
    if method == "text":
        return {}
    bound = model.with_structured_output(schema, method=method)
    first = getattr(bound, "first", None)
    options = getattr(first, "kwargs", None)
    if not isinstance(options, dict):
        raise NotImplementedError(f"{type(model).__name__}.with_structured_output(method="
                                  f"{method!r}) binds no request options to read")
    return dict(options)


def _parse(raw: AIMessage, schema: Any) -> dict[str, Any]:
    """LangChain's include_raw result for one completion: tool-call arguments, else the JSON of
    the text (``negotiation.parse_text_reply``)."""
    calls = getattr(raw, "tool_calls", None) or []
    if calls:
        args = calls[0].get("args", {})
        try:
            parsed = args if isinstance(schema, dict) else schema.model_validate(args)
            return {"raw": raw, "parsed": parsed, "parsing_error": None}
        except ValidationError as exc:
            return {"raw": raw, "parsed": None, "parsing_error": exc}
    return negotiation.parse_text_reply(raw, schema)


async def _one_request(model: BaseChatModel, messages: list[BaseMessage], schema: Any, n: int,
                       method: str, config: RunnableConfig | None) -> list[dict[str, Any]]:
    """One request for ``n`` completions: their include_raw results (as many as came back)."""
    if method in ("json_mode", "text") and not negotiation.native_json(model):
        messages = [*messages, negotiation.schema_instruction(schema)]
    options = _request_options(model, schema, method)
    cfg = ensure_config(negotiation.tagged(config, "json_schema" if negotiation.native_json(model)
                                           else method))
    result = await model.agenerate(
        [messages], callbacks=cfg.get("callbacks"), tags=cfg.get("tags"),
        metadata=cfg.get("metadata"), run_name=cfg.get("run_name"), n=n, **options)
    messages_out = [getattr(g, "message", None) for g in result.generations[0]]
    return [_parse(m, schema) for m in messages_out if isinstance(m, AIMessage)]


async def ask_n(
    model: BaseChatModel, messages: list[BaseMessage], schema: Any, n: int, *,
    config: RunnableConfig | None, setting: str,
) -> list[dict[str, Any]]:
    """``n`` structured completions of ``messages``: include_raw results, in one request where the
    model serves ``n`` (see the module docstring), else one request each (concurrently)."""

    async def separately(k: int) -> list[dict[str, Any]]:
        tasks = [asyncio.ensure_future(negotiation.ask_negotiated(
            model, messages, schema, config=config, setting=setting)) for _ in range(k)]
        try:
            outs = await asyncio.gather(*tasks)
        except BaseException:  # the first failure fails them all, like one request would
            for task in tasks:
                task.cancel()
            raise
        return [out for out, _ in outs]

    if n <= 1 or not N_SUPPORT.may_serve(model):
        return await separately(n)
    method = negotiation.NEGOTIATOR.method(model, setting)
    while True:
        try:
            got = await _one_request(model, messages, schema, n, method, config)
            break
        except Exception as exc:  # providers raise many types; triaged as ask_negotiated does
            if negotiation.format_refusal(exc) and not isinstance(exc, NotImplementedError):
                # the structured-output method was refused, not n: negotiate it as any call does
                nxt = negotiation.NEGOTIATOR.fall_back(model, method, exc) \
                    if setting == "auto" else None
                if nxt is None:
                    raise negotiation.unsupported_error(
                        model, method, negotiation.error_text(exc), setting) from exc
                method = nxt
                continue
            if negotiation.request_rejected(exc) is not None or isinstance(exc, NotImplementedError):
                N_SUPPORT.record(model, False, negotiation.error_text(exc)[:200])
                return await separately(n)
            raise
    if len(got) >= n:
        N_SUPPORT.record(model, True)
        return got[:n]
    N_SUPPORT.record(model, False, f"asked for n={n}, the reply has {len(got)} choice(s)")
    return got + await separately(n - len(got))

