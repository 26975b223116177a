"""Loaded llama.cpp contexts for the ``local:`` provider: a small pool per GGUF file.

llama.cpp is not re-entrant, so one context serves one call at a time. A process keeps one
``EnginePool`` per GGUF path; a call borrows an idle ``Engine`` (a ``llama_cpp.Llama``: weights
memory-mapped from the file, so the pages are shared, plus its own KV cache) and returns it
afterwards. With two single-threaded engines on two cores the debaters' parallel branches really run
in parallel instead of queueing behind one lock; the second engine is loaded only when two calls
overlap. Every engine is built with the same settings and every call evaluates its prompt afresh,
so a reply does not depend on which engine produced it.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from factdebate.core.caching import ProcessCache
from factdebate.core.errors import BackendUnavailableError

MAX_CTX = 8192
"""Context cap: SmolLM2's trained context; bigger GGUFs would otherwise allocate huge KV caches."""
MAX_ENGINES = 2
"""Engines per file at most: Tool-MAD's two debaters call concurrently; each engine's KV cache
costs ~190 MB at 8k context for SmolLM2."""


@dataclass
class Engine:
    """One loaded ``llama_cpp.Llama`` context; used by one call at a time (see ``EnginePool``)."""

    llama: Any
    """The ``llama_cpp.Llama`` instance."""
    path: str
    """The GGUF file."""
    n_ctx: int
    """Context window in tokens."""
    n_threads: int
    """llama.cpp threads (prompt evaluation and generation)."""
    load_seconds: float
    """Wall time the load took."""
    cache: dict[str, Any] = field(default_factory=dict)
    """Per-engine memo (the chat formatter)."""


def default_threads() -> int:
    """One thread per core but one, at least one.

    llama.cpp's worker threads spin at barriers: when any of them is descheduled (embeddings, the
    event loop, other processes) every other one waits. Measured on 2 busy cores: 1 thread
    ~20 tokens/s, 2 threads 1-3 tokens/s; prompt evaluation of 760 tokens 80 tokens/s with one
    thread, 40 with two.
    """
    return max(1, (os.cpu_count() or 2) - 1)


def default_engines(n_threads: int) -> int:
    """Engines per file: as many as the cores hold at ``n_threads`` each, 1..``MAX_ENGINES``."""
    return max(1, min(MAX_ENGINES, (os.cpu_count() or 1) // max(1, n_threads)))


def load_engine(path: str, n_threads: int) -> Engine:
    """Load ``path`` with a context of ``MAX_CTX`` or the model's trained context if smaller."""
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
        from factdebate.patches.llama_decode import n_ctx_train

        trained = n_ctx_train(llama)
        if 0 < trained < MAX_CTX:  # beyond its trained context a model degrades; reload smaller
            llama.close()
            llama = load(trained)
    except (ValueError, RuntimeError, OSError) as exc:
        raise BackendUnavailableError(
            f"llama.cpp cannot load {path}: {exc}",
            "check that the file is a complete GGUF model this llama-cpp-python version supports",
        ) from exc
    return Engine(llama, path, llama.n_ctx(), n_threads, time.perf_counter() - start)


class EnginePool:
    """Up to ``size`` engines over one GGUF file, lent to one call at a time."""

    def __init__(self, path: str, *, n_threads: int, size: int) -> None:
        self.path = path
        self.n_threads = n_threads
        self.size = max(1, size)
        self.engines: list[Engine] = [load_engine(path, n_threads)]  # load errors surface now
        self.n_ctx = self.engines[0].n_ctx
        """Context window of every engine (they are built alike)."""
        self._idle: queue.LifoQueue[Engine] = queue.LifoQueue()
        self._idle.put(self.engines[0])
        self._grow = threading.Lock()

    @contextmanager
    def acquire(self) -> Iterator[Engine]:
        """An idle engine, loading another (up to ``size``) when all are busy, else waiting."""
        try:
            engine = self._idle.get_nowait()
        except queue.Empty:
            engine = self._new_or_none() or self._idle.get()
        try:
            yield engine
        finally:
            self._idle.put(engine)

    def _new_or_none(self) -> Engine | None:
        with self._grow:
            if len(self.engines) >= self.size:
                return None
            engine = load_engine(self.path, self.n_threads)
            self.engines.append(engine)
            return engine


def _close_pool(pool: EnginePool) -> None:
    for engine in pool.engines:
        engine.llama.close()


_pools: ProcessCache[str, EnginePool] = ProcessCache("llama.cpp engine pools", on_clear=_close_pool)


@atexit.register
def close_all() -> None:
    """Free every loaded model while llama-cpp-python can still do it (not at interpreter
    teardown, where its ``__del__`` fails on already-cleared module globals)."""
    _pools.clear()


def get_engine(path: str, *, n_threads: int = 0, n_engines: int = 0) -> EnginePool:
    """The process-wide engine pool for ``path``, loading the model the first time.

    The first caller for a file decides its threads and pool size (0 = the defaults).
    """
    def new_pool() -> EnginePool:
        threads = n_threads or default_threads()
        return EnginePool(path, n_threads=threads, size=n_engines or default_engines(threads))

    return _pools.get(path, new_pool)
