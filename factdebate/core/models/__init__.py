"""Provider-agnostic chat models (STYLE.md §5).

``load_model("provider:model")`` is the only way nodes obtain a model:

* ``openai:<model>`` and every other ``init_chat_model`` provider (``anthropic:...``, ``ollama:...``);
  with ``base_url`` (Context.model_base_url) an ``openai:<model>`` spec talks to any
  OpenAI-compatible server (vLLM, Ollama, LM Studio).
* ``local:smollm2`` - the embedded GGUF model run by llama.cpp, with JSON-schema constrained
  structured output (``factdebate.core.models.local``).
* ``scripted:<scenario>[?latency=0.1]`` - the deterministic test double
  (``factdebate.core.models.scripted``), for graph tests and orchestration benchmarks only.

Models are cached per (spec, base_url, temperature) so a run never re-creates clients or reloads
weights per call; ``cached_model`` reads that cache without loading (or waiting for a load), so
callers on the event loop need no worker thread once a model is loaded. Importing this package
installs ``factdebate.patches.lc_fastpaths`` (a version-gated cache for the signature inspection
langchain-core repeats on every chat-model call).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from langchain_core.language_models import BaseChatModel

from factdebate.core.errors import ConfigError
from factdebate.core.registry import Registry
from factdebate.patches import lc_fastpaths

lc_fastpaths.install()

ProviderLoader = Any  # Callable[[str, dict[str, Any]], BaseChatModel]
PROVIDERS: Registry[ProviderLoader] = Registry("model provider")
PROVIDERS.register("local", "factdebate.core.models.local:load_local_model", aliases=("embedded",))
PROVIDERS.register("scripted", "factdebate.core.models.scripted:load_scripted_model")

# init_chat_model providers we document; any other init_chat_model provider is passed through.
_API_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

_cache: dict[tuple[str, str, float], BaseChatModel] = {}
_lock = threading.Lock()


def split_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini"`` -> ``("openai", "gpt-4o-mini")``; a bare name is an error."""
    provider, sep, name = spec.partition(":")
    if not sep or not provider or not name:
        raise ConfigError(
            f"model spec {spec!r} is not 'provider:model'",
            "e.g. local:smollm2, openai:gpt-4o-mini, scripted:agree",
        )
    return provider, name


def load_model(spec: str, *, base_url: str = "", temperature: float = 0.0) -> BaseChatModel:
    """The chat model for ``spec`` (cached per process)."""
    key = (spec, base_url, temperature)
    with _lock:
        if key not in _cache:
            _cache[key] = _create(spec, base_url=base_url, temperature=temperature)
        return _cache[key]


def cached_model(
    spec: str, *, base_url: str = "", temperature: float = 0.0
) -> BaseChatModel | None:
    """The model ``load_model`` already returned for these arguments, or None; never loads.

    Lock-free (one atomic dict read), so the event loop can ask without waiting for a load that
    holds the lock in a worker thread: ``factdebate.nodes.llm.model_for`` skips its thread hop on a hit.
    """
    return _cache.get((spec, base_url, temperature))


def clear_model_cache() -> None:
    """Forget loaded models (tests)."""
    with _lock:
        _cache.clear()


def _create(spec: str, *, base_url: str, temperature: float) -> BaseChatModel:
    provider, name = split_spec(spec)
    if provider in PROVIDERS:
        return PROVIDERS.get(provider)(name, {"temperature": temperature, "base_url": base_url})
    key_var = _API_KEYS.get(provider)
    if key_var and not base_url and not os.environ.get(key_var):
        raise ConfigError(
            f"model {spec!r} needs {key_var}",
            f"export {key_var}=... or use --model local:smollm2 offline",
        )
    from langchain.chat_models import init_chat_model

    kwargs: dict[str, Any] = {"temperature": temperature, "max_retries": 0}
    if base_url:
        kwargs["base_url"] = base_url
        if provider == "openai" and not os.environ.get("OPENAI_API_KEY"):
            kwargs["api_key"] = "not-needed"  # local OpenAI-compatible servers ignore it
    try:
        return init_chat_model(f"{provider}:{name}", **kwargs)
    except (ValueError, ImportError) as exc:
        raise ConfigError(
            f"cannot load model {spec!r}: {str(exc).splitlines()[0]}",
            f"known embedded providers: {', '.join(PROVIDERS.names())}; or an init_chat_model "
            "provider such as openai",
        ) from exc
