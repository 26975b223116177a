"""Structured output that any model server can serve: method negotiation and error triage.

Servers differ in how they let a client ask for JSON: OpenAI takes ``response_format:
json_schema``; llama.cpp's server, older vLLM/Ollama builds take only ``json_object`` or tools; some
take neither. The Context field ``structured_output`` (``--set structured_output=...``,
``FACTDEBATE_STRUCTURED_OUTPUT`` for the operator) picks one of :data:`METHODS`, strongest first:

* ``json_schema`` - the provider constrains the reply to the schema;
* ``function_calling`` - the schema is a tool the model must call;
* ``json_mode`` - the reply is some JSON object; the schema is stated in the prompt;
* ``text`` - no request option at all; the schema is stated in the prompt and the last JSON object
  of the reply that validates is used (``ask_verdict`` then falls back to
  ``factdebate.core.labels.parse_label`` for verdicts).

``auto`` starts at ``json_schema`` and, when the server answers that the requested format is
unsupported (:func:`format_refusal`), moves down the list - once per (model, base URL) per
process (:class:`Negotiator`), so later calls go straight to the method that served. Models that
produce schema-valid JSON themselves (the embedded llama.cpp model with its grammar, the scripted
double) serve every method natively as ``json_schema`` unless ``text`` is asked for.

Every call is tagged ``structured_output:<method>``; the ``UsageTracker`` counts those tags into
the ledger (``ledger["structured_output"] = {method: calls}``), so each result records the method
that served. A refusal that no fallback can fix, and a request the server calls invalid, raise a
:class:`ModelRequestRejected` naming the cause and the setting that fixes it - never retried.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import OrderedDict
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

from factdebate.core.errors import ConfigError

log = logging.getLogger(__name__)

METHODS = ("json_schema", "function_calling", "json_mode", "text")
"""Structured-output methods, strongest first (``auto`` walks down this list)."""
CHOICES = ("auto", *METHODS)
TAG = "structured_output:"
"""Prefix of the run tag naming the method of a call (counted into the ledger)."""

_FORMAT_WORDS = re.compile(
    r"response_format|json_schema|json_object|\btools?\b|tool_choice|function|grammar", re.I)
_REFUSAL_WORDS = re.compile(
    r"not supported|unsupported|does not support|doesn't support|input should be|"
    r"not allowed|unknown|unrecognized|invalid|not implemented|extra inputs", re.I)
_INVALID_WORDS = re.compile(
    r"invalid|validation error|input should be|unsupported|not supported|unrecognized|"
    r"extra inputs|bad request|malformed|missing required|context length|maximum context", re.I)


ENV = "FACTDEBATE_STRUCTURED_OUTPUT"


def current_setting() -> str:
    """The run's ``structured_output``: the Context of the LangGraph run this call belongs to
    (nodes, and the ragas adapter inside the score node), else ``$FACTDEBATE_STRUCTURED_OUTPUT``
    (callers outside a graph, e.g. the eval judge), else ``auto``."""
    try:
        from langgraph.runtime import get_runtime

        value = getattr(get_runtime().context, "structured_output", None)
    except (RuntimeError, KeyError, AttributeError):
        value = None
    return str(value or os.environ.get(ENV) or "auto")


class ModelRequestRejected(ConfigError):
    """The model server rejected a request as invalid or unsupported; retrying cannot help."""


def status_of(exc: BaseException) -> int | None:
    """HTTP status of a provider error (OpenAI SDK, httpx, LangChain wrappers), or None."""
    status = getattr(exc, "status_code", None) or getattr(
        getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def error_text(exc: BaseException) -> str:
    """The error's message and body as one line of text."""
    body = getattr(exc, "body", None)
    text = f"{exc} {json.dumps(body, default=str) if body else ''}"
    return " ".join(text.split())


def format_refusal(exc: BaseException) -> bool:
    """True when ``exc`` says the requested structured-output format is unsupported.

    Build-time refusals (a LangChain model without that ``method``: ``NotImplementedError``,
    ``ValueError`` naming the method) and HTTP 400/404/415/422/500/501 whose body names the
    format (``response_format``, ``json_schema``, tools ...) together with a refusal
    ("not supported", "Input should be 'text' or 'json_object'", "invalid" ...).
    """
    if isinstance(exc, NotImplementedError):
        return True
    text = error_text(exc)
    if isinstance(exc, (ValueError, TypeError)) and status_of(exc) is None:
        return "method" in text.lower() and bool(_FORMAT_WORDS.search(text) or "mode" in text)
    if status_of(exc) not in (400, 404, 415, 422, 500, 501):
        return False
    return bool(_FORMAT_WORDS.search(text) and _REFUSAL_WORDS.search(text))


def request_rejected(exc: BaseException) -> str | None:
    """The cause when the server rejected the request itself (retrying cannot help), else None.

    4xx other than 408/429 always; a 5xx only when its body says the request was invalid (servers
    such as llama.cpp's answer a validation error with 500). Overload (429, 502-504, a bare 500)
    and connection errors return None: those are transient.
    """
    status = status_of(exc)
    if status is None:
        return None
    text = error_text(exc)
    if 400 <= status < 500 and status not in (408, 429):
        return f"HTTP {status}: {text[:240]}"
    if status >= 500 and _INVALID_WORDS.search(text):
        return f"HTTP {status}: {text[:240]}"
    return None


def model_key(model: BaseChatModel) -> tuple[str, str, str]:
    """(class, model name, base URL) of a model: the unit a negotiated method is remembered for.

    Remembered per model object (a loaded model is shared by every call of a run; each miss of
    these ``getattr`` probes is a pydantic ``__getattr__`` raising ``AttributeError``, 4 per call).
    """
    hit = _keys.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or ""
    url = getattr(model, "openai_api_base", None) or getattr(model, "base_url", None) or ""
    key = type(model).__name__, str(name), str(url)
    with _keys_lock:
        _keys[id(model)] = (model, key)  # holds the model: its id is not reused while cached
        while len(_keys) > _RUNNABLES_MAX:
            _keys.popitem(last=False)
    return key


_keys: OrderedDict[int, tuple[BaseChatModel, tuple[str, str, str]]] = OrderedDict()
_keys_lock = threading.Lock()


def describe(model: BaseChatModel) -> str:
    """``<model> at <url>`` for messages."""
    from factdebate.core.settings import mask_url

    _, name, url = model_key(model)
    return f"model {name or type(model).__name__}" + (f" at {mask_url(url)}" if url else "")


def native_json(model: BaseChatModel) -> bool:
    """Models that write schema-valid JSON themselves (embedded llama.cpp, scripted double)."""
    return bool(getattr(model, "fd_native_json", False))


class Negotiator:
    """The method each (model, base URL) uses under ``auto``; a refusal moves it down once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: dict[tuple[str, str, str], str] = {}

    def method(self, model: BaseChatModel, setting: str) -> str:
        """The method to use now for ``model`` under ``setting`` (``auto`` or a method)."""
        if setting not in CHOICES:
            raise ConfigError(f"unknown structured_output {setting!r}", f"use {', '.join(CHOICES)}")
        if setting != "auto":
            return setting
        return self._current.get(model_key(model), METHODS[0])

    def fall_back(self, model: BaseChatModel, refused: str, exc: BaseException) -> str | None:
        """After ``refused`` was refused: the next method (None after ``text``).

        Concurrent calls that saw the same refusal move the method only once.
        """
        key = model_key(model)
        with self._lock:
            current = self._current.get(key, METHODS[0])
            if current != refused:  # another call already moved on
                return current
            index = METHODS.index(refused)
            if index + 1 >= len(METHODS):
                return None
            self._current[key] = METHODS[index + 1]
        log.warning("%s refused structured output %s (%s); using %s from now on",
                    describe(model), refused, error_text(exc)[:200], METHODS[index + 1])
        return METHODS[index + 1]

    def served(self) -> dict[str, str]:
        """``"<class> <model> <url>" -> method`` negotiated so far (for run metadata)."""
        return {" ".join(p for p in key if p): m for key, m in self._current.items()}

    def reset(self) -> None:
        """Forget negotiated methods (tests)."""
        with self._lock:
            self._current.clear()


NEGOTIATOR = Negotiator()


def schema_instruction(schema: Any) -> HumanMessage:
    """The prompt addendum of ``json_mode``/``text``: the JSON schema the reply must follow."""
    body = schema if isinstance(schema, dict) else schema.model_json_schema()
    return HumanMessage(
        "Reply with only one JSON object that follows this JSON schema, no other text:\n"
        + json.dumps(body, separators=(",", ":"))
    )


def json_candidates(text: str) -> list[Any]:
    """Every JSON object in ``text`` that parses (code fences and prose around them ignored)."""
    decoder, found, pos = json.JSONDecoder(), [], text.find("{")
    while pos >= 0:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        found.append(obj)
        pos = text.find("{", end)
    return found


def parse_text_reply(raw: AIMessage, schema: Any) -> dict[str, Any]:
    """LangChain's include_raw result for a ``text`` reply: the last object that validates."""
    err: Exception | None = None
    for obj in reversed(json_candidates(str(raw.content or ""))):
        try:
            parsed = obj if isinstance(schema, dict) else schema.model_validate(obj)
            return {"raw": raw, "parsed": parsed, "parsing_error": None}
        except ValidationError as exc:
            err = err or exc
    return {"raw": raw, "parsed": None,
            "parsing_error": err or ValueError("no JSON object in the reply")}


_RUNNABLES_MAX = 128
_runnables: OrderedDict[tuple[int, Any, str], tuple[BaseChatModel, Any]] = OrderedDict()
_runnables_lock = threading.Lock()


def structured_runnable(model: BaseChatModel, schema: Any, method: str) -> Any:
    """``model.with_structured_output(schema, method=..., include_raw=True)``, built once per
    (model, schema, method) (an LRU holding the model, so an id is not reused while cached).

    Natively-JSON models ignore ``method``. An unhashable schema (a dict) is built per call.
    """
    kwargs = {} if native_json(model) else {"method": method}
    key = (id(model), schema, method)
    try:
        hash(key)
    except TypeError:
        return model.with_structured_output(schema, include_raw=True, **kwargs)
    with _runnables_lock:
        hit = _runnables.get(key)
        if hit is not None and hit[0] is model:
            _runnables.move_to_end(key)
            return hit[1]
    runnable = model.with_structured_output(schema, include_raw=True, **kwargs)
    with _runnables_lock:
        _runnables[key] = (model, runnable)
        while len(_runnables) > _RUNNABLES_MAX:
            _runnables.popitem(last=False)
    return runnable


def tagged(config: RunnableConfig | None, method: str) -> RunnableConfig:
    """``config`` with the ``structured_output:<method>`` tag (a shallow copy, of the same class:
    a ``MergedConfig`` stays one, ``core/models/call_configs.py``)."""
    out: RunnableConfig = config.copy() if config is not None else {}
    out["tags"] = [*(out.get("tags") or []), TAG + method]
    return out


async def invoke_method(
    model: BaseChatModel, messages: list[BaseMessage], schema: Any, method: str,
    config: RunnableConfig | None,
) -> dict[str, Any]:
    """One structured call with ``method``: ``{"raw", "parsed", "parsing_error"}``."""
    if method == "text":
        raw = await model.ainvoke([*messages, schema_instruction(schema)], tagged(config, method))
        return parse_text_reply(raw, schema)
    if method == "json_mode" and not native_json(model):
        messages = [*messages, schema_instruction(schema)]
    out = await structured_runnable(model, schema, method).ainvoke(
        messages, tagged(config, "json_schema" if native_json(model) else method))
    return out if isinstance(out, dict) else {"raw": None, "parsed": out, "parsing_error": None}


def unsupported_error(model: BaseChatModel, method: str, cause: str, setting: str) -> ConfigError:
    """The one-line error of a refused method that no fallback is left for."""
    later = METHODS[METHODS.index(method) + 1:] if method in METHODS else ()
    fix = "--set structured_output=text" if method != "text" else "a model server that can chat"
    return ModelRequestRejected(
        f"{describe(model)} refused structured output method {method!r} "
        f"(structured_output={setting}): {cause[:240]}",
        f"use {fix} (or another of {', '.join(later)})" if later else f"use {fix}",
    )


async def ask_negotiated(
    model: BaseChatModel, messages: list[BaseMessage], schema: Any, *,
    config: RunnableConfig | None, setting: str,
) -> tuple[dict[str, Any], str]:
    """A structured reply by the negotiated method: ``(include_raw result, method that served)``.

    A refused format falls back (``auto``) or raises :func:`unsupported_error`; a request the server
    calls invalid raises ``ModelRequestRejected``; anything else (transient) propagates for the
    caller's retries.
    """
    method = NEGOTIATOR.method(model, setting)
    while True:
        try:
            return await invoke_method(model, messages, schema, method, config), method
        except Exception as exc:  # providers raise many types; triaged below
            if not format_refusal(exc):
                cause = request_rejected(exc)
                if cause is None:
                    raise
                raise ModelRequestRejected(
                    f"{describe(model)} rejected the request ({cause})",
                    "check --model and --base-url; if the server lacks a feature the request "
                    "uses, --set structured_output=text",
                ) from exc
            nxt = NEGOTIATOR.fall_back(model, method, exc) if setting == "auto" else None
            if nxt is None:
                raise unsupported_error(model, method, error_text(exc), setting) from exc
            method = nxt
