"""Provider-agnostic chat models (STYLE.md §5).

``load_model("provider:model")`` is the only way nodes obtain a model:

* ``openai:<model>`` and every other ``init_chat_model`` provider (``anthropic:...``, ``ollama:...``,
  ``google_genai:...``) whose LangChain integration package is installed (a missing one is named in
  a one-line error); ``?max_tokens=256&timeout=60`` after the name passes keyword arguments to the
  provider's chat model. With ``base_url`` (Context.model_base_url) an ``openai:<model>`` spec
  talks to any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server, LM Studio); no API key
  is needed then.
* ``local:smollm2`` - the embedded GGUF model run by llama.cpp, with JSON-schema constrained
  structured output (``factdebate.core.models.local``).
* ``scripted:<scenario>[?latency=0.1]`` - the deterministic test double
  (``factdebate.testing.scripted``), for graph tests and orchestration benchmarks only.

Models are cached per (spec, base_url, temperature) so a run never re-creates clients or reloads
weights per call; ``cached_model`` reads that cache without loading (or waiting for a load), so
callers on the event loop need no worker thread once a model is loaded.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from functools import cache
from typing import Any
from urllib.parse import parse_qsl

from langchain_core.language_models import BaseChatModel

from factdebate.core.caching import ProcessCache
from factdebate.core.errors import ConfigError
from factdebate.core.registry import Registry

ProviderLoader = Any  # Callable[[str, dict[str, Any]], BaseChatModel]
PROVIDERS: Registry[ProviderLoader] = Registry("model provider", entry_points="factdebate.providers")
"""Built-in embedded providers; packages above the core add theirs as ``factdebate.providers``
entry points (``pyproject.toml``: the scripted double, ``factdebate.testing.scripted``)."""
PROVIDERS.register("local", "factdebate.core.models.local:load_local_model", aliases=("embedded",))

# init_chat_model providers we document; any other init_chat_model provider is passed through.
_API_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

_models: ProcessCache[tuple[str, str, float], BaseChatModel] = ProcessCache("chat models")


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
    return _models.get((spec, base_url, temperature),
                       lambda: _create(spec, base_url=base_url, temperature=temperature))


def cached_model(
    spec: str, *, base_url: str = "", temperature: float = 0.0
) -> BaseChatModel | None:
    """The model ``load_model`` already returned for these arguments, or None; never loads.

    Lock-free (one atomic dict read), so the event loop can ask without waiting for a load that
    holds the lock in a worker thread: ``factdebate.nodes.llm.model_for`` skips its thread hop on a hit.
    """
    return _models.peek((spec, base_url, temperature))


def clear_model_cache() -> None:
    """Forget loaded models (tests)."""
    _models.clear()


_PACKAGES = {
    "anthropic": "langchain-anthropic", "google_genai": "langchain-google-genai",
    "google_vertexai": "langchain-google-vertexai", "mistralai": "langchain-mistralai",
    "groq": "langchain-groq", "fireworks": "langchain-fireworks", "together": "langchain-together",
    "bedrock": "langchain-aws", "bedrock_converse": "langchain-aws", "cohere": "langchain-cohere",
    "huggingface": "langchain-huggingface", "deepseek": "langchain-deepseek", "xai": "langchain-xai",
    "ollama": "langchain-ollama", "azure_openai": "langchain-openai", "openai": "langchain-openai",
}
"""init_chat_model provider -> its LangChain integration package (the one-line install hint)."""
_FALLBACK_CLASSES = {"ollama"}
"""Providers init_chat_model still serves from langchain-community when the package is missing."""


def spec_options(name: str) -> tuple[str, dict[str, Any]]:
    """``"gpt-4o-mini?max_tokens=256&timeout=60"`` -> ``("gpt-4o-mini", {"max_tokens": 256, ...})``:
    extra keyword arguments of the provider's chat model, numbers parsed."""
    name, _, query = name.partition("?")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query):
        for cast in (int, float):
            try:
                options[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            options[key] = value
    return name, options


def missing_package(provider: str) -> ConfigError | None:
    """The error for a provider whose LangChain integration package is not installed, or None."""
    package = _PACKAGES.get(provider)
    if package is None or provider in _FALLBACK_CLASSES:
        return None
    if importlib.util.find_spec(package.replace("-", "_")) is not None:
        return None
    return ConfigError(f"model provider {provider!r} needs the package {package}",
                       f"pip install {package} (see docs/usage.md: Model providers)")


@cache
def _masked_chat_openai() -> Callable[..., BaseChatModel]:
    """``ChatOpenAI`` whose trace manifest masks credentials in its base URL.

    ``ChatOpenAI.lc_attributes`` puts ``openai_api_base`` into the ``serialized`` part of every
    LLM run a tracer (LangSmith) records; an operator URL such as ``http://user:pass@host/v1``
    would travel there in clear, and so would the constructor's ``openai_api_base`` kwarg. The
    same class ``init_chat_model("openai:...")`` builds, with the attributes masked
    (``mask_values``) and a base URL that holds credentials serialized as a secret reference."""
    from langchain_openai import ChatOpenAI

    from factdebate.core.settings import mask_values

    class MaskedChatOpenAI(ChatOpenAI):
        """``ChatOpenAI`` with credentials masked in its serialized attributes."""

        @property
        def lc_attributes(self) -> dict[str, Any]:
            return mask_values(super().lc_attributes)  # type: ignore[no-any-return]

        @property
        def lc_secrets(self) -> dict[str, str]:
            # the constructor's kwargs are serialized too: a base URL holding credentials is
            # serialized as a secret reference, like the API key
            secrets = dict(super().lc_secrets)
            base = str(self.openai_api_base or "")
            if base and mask_values(base) != base:
                secrets["openai_api_base"] = "OPENAI_BASE_URL"
            return secrets

    return MaskedChatOpenAI


def _create(spec: str, *, base_url: str, temperature: float) -> BaseChatModel:
    provider, name = split_spec(spec)
    if provider in PROVIDERS:
        return PROVIDERS.get(provider)(name, {"temperature": temperature, "base_url": base_url})
    missing = missing_package(provider)
    if missing is not None:
        raise missing
    key_var = _API_KEYS.get(provider)
    if key_var and not base_url and not os.environ.get(key_var):
        raise ConfigError(
            f"model {spec!r} needs {key_var}",
            f"export {key_var}=... or use --model local:smollm2 offline",
        )
    from langchain.chat_models import init_chat_model

    name, options = spec_options(name)
    kwargs: dict[str, Any] = {"temperature": temperature, "max_retries": 0, **options}
    if base_url:
        kwargs["base_url"] = base_url
        if provider == "openai" and not os.environ.get("OPENAI_API_KEY"):
            kwargs["api_key"] = "not-needed"  # local OpenAI-compatible servers ignore it
    try:
        if provider == "openai":  # replies bounded in bytes (core/bounded_http.py)
            from factdebate.core.bounded_http import bounded_async_client, bounded_client

            kwargs.setdefault("http_client", bounded_client())
            kwargs.setdefault("http_async_client", bounded_async_client())
            return _masked_chat_openai()(model=name, **kwargs)
        return init_chat_model(f"{provider}:{name}", **kwargs)
    except ImportError as exc:
        package = re.search(r"pip install (?:-U )?([\w.\-]+)", str(exc))
        raise ConfigError(
            f"model {spec!r} needs a package that is not installed ({str(exc).splitlines()[0]})",
            f"pip install {package.group(1) if package else _PACKAGES.get(provider, exc.name)}",
        ) from exc
    except ValueError as exc:
        raise ConfigError(
            f"cannot load model {spec!r}: {str(exc).splitlines()[0]}",
            f"known embedded providers: {', '.join(PROVIDERS.names())}; or an init_chat_model "
            "provider such as openai, anthropic, google_genai, ollama",
        ) from exc
