"""OpenAI embeddings for bulk index builds: bounded requests, one retry policy, clear failures.

``get_embeddings("openai:text-embedding-3-small")`` returns a :class:`ProviderEmbeddings`, a
LangChain ``Embeddings`` that posts to ``{base}/embeddings`` through the ``openai`` client's
public API. The client's own retries are off (``max_retries=0``): every retry goes through
:func:`factdebate.core.retry.call_with_retries_blocking`, so a build's behaviour under a rate
limit is the project's policy, not a library default.

Where requests go: ``$FACTDEBATE_BASE_URL`` (the OpenAI-compatible server the chat models use,
``Context.model_base_url``) when set, else ``$OPENAI_BASE_URL``, else OpenAI's API. The key is
``$OPENAI_API_KEY``; a server named by a base URL needs none. Both are read at each call, so a
model cached for the process follows the environment it runs in.

Requests are bounded by the provider's limits (OpenAI's, as documented for the embeddings
endpoint):

- at most :data:`MAX_INPUTS` inputs and :data:`MAX_REQUEST_TOKENS` tokens per request: a batch
  of any size is split into as few requests as these allow, sent one after another, and the
  vectors are returned in the order of the texts (each reply is ordered by its ``index`` field,
  and its count is checked);
- each input at most :data:`MAX_INPUT_TOKENS` tokens: a longer text is truncated to that many
  and counted (``usage()["truncated"]``), never an error that stops a build of millions of
  pages; an empty text is sent as one space (the API rejects empty input).

Tokens are counted with ``tiktoken`` (a dependency of ``langchain-openai``) when the model's
encoding loads (``cl100k_base`` for names tiktoken does not know); its files are downloaded once
into tiktoken's cache, so offline, without that cache, the count is an estimate: one token per
three UTF-8 bytes, rounded up. English averages about four characters per token, so the estimate
overstates it and requests stay under the limits; text of digits or punctuation can take more
tokens than that, which is why tiktoken is preferred. ``usage()["token_count"]`` says which.

What is retried (``call_with_retries_blocking``): connection errors, timeouts, HTTP 408, 429 and
5xx overload, up to :data:`RETRIES` times (``$FACTDEBATE_EMBEDDING_RETRIES``) with a delay
doubling from :data:`BACKOFF_S` (``$FACTDEBATE_EMBEDDING_BACKOFF_S``) up to
:data:`MAX_BACKOFF_S`; a 429's ``Retry-After`` is waited out up to :data:`MAX_RETRY_AFTER_S`.
Not retried: 400/401/403/404 and a 429 that says the account's quota is used up
(``insufficient_quota``) - the same request would fail the same way. Failures are one-line
errors naming the model, the server and the provider's message: :class:`EmbeddingRequestRejected`
(a ``ConfigError``: key, model name, request) or :class:`EmbeddingProviderUnavailable` (a
``BackendUnavailableError``: retries exhausted, quota). An index build that stops on one keeps
its committed passages and resumes when run again (``tools/sources/build.py``).

``usage()`` reports what the object has sent since it was made: requests (attempts included),
retries, seconds waited between attempts, inputs, tokens sent (as counted here) and the tokens
the provider reported; an index build records the difference over the build in its manifest.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from langchain_core.embeddings import Embeddings

from factdebate.core.errors import BackendUnavailableError, ConfigError
from factdebate.core.readable import excerpt
from factdebate.core.retry import call_with_retries_blocking, is_retryable, status_of

MAX_INPUTS = 2048
"""Inputs per request (OpenAI's limit for the embeddings endpoint)."""
MAX_REQUEST_TOKENS = 300_000
"""Tokens summed over the inputs of one request (OpenAI's limit)."""
MAX_INPUT_TOKENS = 8191
"""Tokens of one input (the context of OpenAI's embedding models); longer texts are truncated."""
RETRIES = 8
"""Retries of a failed request (so 9 attempts) unless ``$FACTDEBATE_EMBEDDING_RETRIES`` says;
with :data:`BACKOFF_S` doubling up to :data:`MAX_BACKOFF_S` the attempts span about three
minutes, longer when the server asks."""
BACKOFF_S = 1.0
"""The first retry's delay (doubling for each next one) unless
``$FACTDEBATE_EMBEDDING_BACKOFF_S`` says."""


def _env_number(name: str, default: float, kind: type[int] | type[float]) -> Any:
    """``$name`` as a non-negative ``kind``, ``default`` when unset; a ``ConfigError`` naming the
    variable for anything else."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return kind(default)
    try:
        value = kind(raw)
    except ValueError:
        value = -1
    if value < 0 or (kind is float and not math.isfinite(value)):
        raise ConfigError(f"{name}={raw!r} is not a non-negative {kind.__name__}",
                          f"unset {name} or give a number such as {kind(default)}")
    return value
MAX_BACKOFF_S = 60.0
"""The longest doubling delay."""
MAX_RETRY_AFTER_S = 300.0
"""A 429's ``Retry-After`` is honoured up to this (a rate-limit window of a bulk build; debate
calls cap it at 30 s)."""
TIMEOUT_S = 120.0
"""Timeout of one request (2,048 inputs take a while on a busy provider)."""
ESTIMATE_BYTES_PER_TOKEN = 3
"""The token estimate without tiktoken: one token per this many UTF-8 bytes, rounded up."""
DEFAULT_BASE = "https://api.openai.com/v1"


class EmbeddingRequestRejected(ConfigError):
    """The provider refused the request itself (key, model name, input): retrying cannot help."""


class EmbeddingProviderUnavailable(BackendUnavailableError):
    """The provider failed after the retries, or the account's quota is used up."""


class TokenCounter:
    """Counts and truncates texts in the model's tokens: tiktoken's encoding, or the estimate."""

    def __init__(self, encoding: Any | None) -> None:
        self.encoding = encoding
        self.method = f"tiktoken:{encoding.name}" if encoding is not None else \
            f"estimate:utf8_bytes/{ESTIMATE_BYTES_PER_TOKEN}"

    @classmethod
    def for_model(cls, model: str) -> TokenCounter:
        """tiktoken's encoding of ``model`` (``cl100k_base`` for other names), else the estimate."""
        try:
            import tiktoken

            try:
                encoding = tiktoken.encoding_for_model(model)
            except KeyError:
                encoding = tiktoken.get_encoding("cl100k_base")
        except Exception:  # not installed, or its files are not cached and cannot be fetched
            encoding = None
        return cls(encoding)

    def fit(self, text: str, limit: int) -> tuple[str, int, bool]:
        """``(text, tokens, truncated)``: ``text`` cut to at most ``limit`` tokens."""
        if self.encoding is not None:
            tokens = self.encoding.encode(text, disallowed_special=())
            if len(tokens) <= limit:
                return text, len(tokens), False
            return self.encoding.decode(tokens[:limit]), limit, True
        data = text.encode("utf-8")
        count = math.ceil(len(data) / ESTIMATE_BYTES_PER_TOKEN)
        if count <= limit:
            return text, count, False
        cut = data[:limit * ESTIMATE_BYTES_PER_TOKEN].decode("utf-8", errors="ignore")
        return cut, math.ceil(len(cut.encode("utf-8")) / ESTIMATE_BYTES_PER_TOKEN), True


@dataclass
class _Endpoint:
    """One server's client and the vector size it answered with (learned from its first reply)."""

    url: str
    client: Any
    dimension: int | None = None


def base_url() -> str:
    """Where requests go: ``$FACTDEBATE_BASE_URL``, else ``$OPENAI_BASE_URL``, else OpenAI's API."""
    return (os.environ.get("FACTDEBATE_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
            or DEFAULT_BASE).rstrip("/")


def _where(url: str) -> str:
    """The server of ``url`` without credentials or path, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or url
    return f"{host}:{parts.port}" if parts.port else host


def provider_message(exc: BaseException) -> str:
    """The provider's own error message (``{"error": {"message": ...}}``), else the error's text
    (a reply over its size limit: that limit, which the SDK reports as a connection error)."""
    from factdebate.core.bounded_http import ReplyTooLarge
    from factdebate.core.errors import exception_chain

    too_large = next((e for e in exception_chain(exc) if isinstance(e, ReplyTooLarge)), None)
    if too_large is not None:
        return excerpt(str(too_large), 300)
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return excerpt(str(message), 300)
    return excerpt(str(exc), 300) or type(exc).__name__


def quota_exhausted(exc: BaseException) -> bool:
    """A 429 that says the account's quota or credit is used up (waiting does not refill it)."""
    if status_of(exc) != 429:
        return False
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    code = str(inner.get("code") or inner.get("type") or "") if isinstance(inner, dict) else ""
    return code == "insufficient_quota" or "quota" in provider_message(exc).lower()


def retryable(exc: BaseException) -> bool:
    """What an embedding request retries: :func:`is_retryable`, except an exhausted quota."""
    return is_retryable(exc) and not quota_exhausted(exc)


class ProviderEmbeddings(Embeddings):
    """An OpenAI (or OpenAI-compatible) embedding model; see the module docstring.

    Args:
        model: The provider's model name (``text-embedding-3-small``).
        dimensions: Vector size asked of the model (``text-embedding-3-*`` shorten their vectors);
            None takes the model's own.
        retries: Retries of a failed request; None reads :data:`RETRIES` at each request.
        backoff_s: The first retry's delay; None reads :data:`BACKOFF_S` at each request.
    """

    def __init__(self, model: str, *, dimensions: int | None = None, retries: int | None = None,
                 backoff_s: float | None = None) -> None:
        self.model = model
        self.dimensions = dimensions
        self.retries, self.backoff_s = retries, backoff_s
        self.max_inputs, self.max_request_tokens = MAX_INPUTS, MAX_REQUEST_TOKENS
        self.max_input_tokens = MAX_INPUT_TOKENS
        self._tokens: TokenCounter | None = None
        self._endpoints: dict[tuple[str, str], _Endpoint] = {}
        self._lock = threading.Lock()
        self._usage = {"requests": 0, "retries": 0, "waited_s": 0.0, "inputs": 0,
                       "tokens_sent": 0, "tokens_reported": 0, "truncated": 0}

    @property
    def spec(self) -> str:
        """The spec this model answers to (``openai:<model>``), for messages."""
        return f"openai:{self.model}"

    @property
    def dimension(self) -> int | None:
        """The vector size: ``dimensions`` when asked for, else the current server's answer once
        one came (None before: ``embedding_dimension`` then asks)."""
        if self.dimensions:
            return self.dimensions
        endpoint = self._endpoints.get(self._endpoint_key())
        return endpoint.dimension if endpoint is not None else None

    def usage(self) -> dict[str, Any]:
        """Counts since this object was made (see the module docstring); ``token_count`` says
        how tokens were counted."""
        with self._lock:
            counts: dict[str, Any] = dict(self._usage)
        counts["waited_s"] = round(counts["waited_s"], 3)
        counts["token_count"] = self._tokens.method if self._tokens is not None else None
        return counts

    def embed_query(self, text: str) -> list[float]:
        """The vector of one text (one request)."""
        return self.embed_documents([text])[0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts`` in their order, in as few requests as the limits allow."""
        vectors: list[list[float]] = []
        for batch, tokens in self._requests(texts):
            vectors.extend(self._send(batch, tokens))
        return vectors

    # --- requests ------------------------------------------------------------------------------

    def _requests(self, texts: list[str]) -> list[tuple[list[str], int]]:
        """``texts`` prepared (empty -> one space, truncated to the per-input limit) and split into
        requests of at most ``max_inputs`` inputs and ``max_request_tokens`` tokens."""
        if self._tokens is None:
            self._tokens = TokenCounter.for_model(self.model)
        requests: list[tuple[list[str], int]] = []
        batch: list[str] = []
        total = truncated = 0
        for text in texts:
            fitted, count, cut = self._tokens.fit(text or " ", self.max_input_tokens)
            truncated += cut
            if batch and (len(batch) >= self.max_inputs or total + count > self.max_request_tokens):
                requests.append((batch, total))
                batch, total = [], 0
            batch.append(fitted)
            total += count
        if batch:
            requests.append((batch, total))
        if truncated:
            with self._lock:
                self._usage["truncated"] += truncated
        return requests

    def _endpoint_key(self) -> tuple[str, str]:
        return base_url(), os.environ.get("OPENAI_API_KEY", "")

    def _endpoint(self) -> _Endpoint:
        key = self._endpoint_key()
        with self._lock:
            endpoint = self._endpoints.get(key)
            if endpoint is None:
                from openai import OpenAI

                from factdebate.core.bounded_http import bounded_client

                url, api_key = key
                client = OpenAI(api_key=api_key or "not-needed", base_url=url, max_retries=0,
                                timeout=TIMEOUT_S, http_client=bounded_client())
                endpoint = self._endpoints[key] = _Endpoint(url, client)
        return endpoint

    def _send(self, batch: list[str], tokens: int) -> list[list[float]]:
        endpoint = self._endpoint()
        options: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}

        def attempt() -> Any:
            with self._lock:
                self._usage["requests"] += 1
            return endpoint.client.embeddings.create(
                model=self.model, input=batch, encoding_format="float", **options)

        def waited(_: BaseException, seconds: float) -> None:
            with self._lock:
                self._usage["retries"] += 1
                self._usage["waited_s"] += seconds

        retries = (_env_number("FACTDEBATE_EMBEDDING_RETRIES", RETRIES, int)
                   if self.retries is None else self.retries)
        what = f"embedding request ({len(batch)} inputs) to {self.spec} at {_where(endpoint.url)}"
        try:
            reply = call_with_retries_blocking(
                attempt, retries=retries, what=what,
                base_delay=(_env_number("FACTDEBATE_EMBEDDING_BACKOFF_S", BACKOFF_S, float)
                            if self.backoff_s is None else self.backoff_s),
                max_delay=MAX_BACKOFF_S, max_retry_after=MAX_RETRY_AFTER_S, retry_if=retryable,
                on_retry=waited)
        except Exception as exc:
            raise self._failure(exc, endpoint, retries + 1) from exc
        vectors = self._vectors(reply, len(batch), endpoint)
        reported = getattr(getattr(reply, "usage", None), "total_tokens", None)
        with self._lock:
            self._usage["inputs"] += len(batch)
            self._usage["tokens_sent"] += tokens
            self._usage["tokens_reported"] += int(reported or 0)
        return vectors

    def _vectors(self, reply: Any, expected: int, endpoint: _Endpoint) -> list[list[float]]:
        """The reply's vectors ordered by ``index``; a wrong count or size is an error."""
        data = sorted(reply.data or [], key=lambda item: item.index)
        where = f"embedding model {self.spec!r} at {_where(endpoint.url)}"
        if [item.index for item in data] != list(range(expected)):
            raise EmbeddingProviderUnavailable(
                f"{where} returned {len(data)} vectors for {expected} inputs",
                "check that the server is an OpenAI-compatible embeddings endpoint")
        vectors = [list(item.embedding) for item in data]
        sizes = {len(v) for v in vectors}
        known = self.dimensions or endpoint.dimension
        if len(sizes) != 1 or (known and sizes != {known}):
            raise EmbeddingProviderUnavailable(
                f"{where} returned vectors of sizes {sorted(sizes)} (expected {known or 'one size'})",
                "check the model name and the dimensions option")
        endpoint.dimension = sizes.pop()
        return vectors

    def _failure(self, exc: Exception, endpoint: _Endpoint, attempts: int) -> Exception:
        """The one-line error for a request that failed for good."""
        if isinstance(exc, EmbeddingProviderUnavailable | EmbeddingRequestRejected):
            return exc
        where = f"embedding model {self.spec!r} at {_where(endpoint.url)}"
        status = status_of(exc)
        said = f"HTTP {status}: {provider_message(exc)}" if status else provider_message(exc)
        if quota_exhausted(exc):
            return EmbeddingProviderUnavailable(
                f"{where}: quota used up ({said})",
                "add credit or raise the account's limit")
        if status in (401, 403):
            return EmbeddingRequestRejected(
                f"{where} refused the key ({said})",
                "check OPENAI_API_KEY (and FACTDEBATE_BASE_URL / OPENAI_BASE_URL)")
        if not retryable(exc):
            return EmbeddingRequestRejected(
                f"{where} rejected the request ({said})",
                "check the model name, the dimensions option and the server's URL")
        return EmbeddingProviderUnavailable(
            f"{where} failed {attempts} time{'s' if attempts != 1 else ''} ({said})",
            "wait for the provider, or raise FACTDEBATE_EMBEDDING_RETRIES")
