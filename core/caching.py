"""One process cache for what is expensive to build and safe to share: models, backends, graphs.

Loaded chat models, opened retrievers, embedding models, compiled graphs, structured-output
runnables and parsed datasets are each built once per process and shared by every claim. They used
to be a dozen hand-written module dicts, each with its own lock, size bound and ``clear`` for tests;
:class:`ProcessCache` is that pattern once:

- ``get(key, build)`` returns the cached value or calls ``build()`` once, under a re-entrant lock
  (a composite retriever opens other retrievers while it is being opened);
- ``maxsize`` bounds it, least recently used first out (``None`` = unbounded: one entry per spec);
- ``peek(key)`` is lock-free and never builds, so the event loop can ask before deciding to hop
  to a worker thread for a build that may block;
- ``pin``: objects the key names by ``id()`` (a checkpointer, a model) are held by the entry and a
  hit whose pinned objects are not the very same objects is a miss, so a reused id never returns
  another object's value;
- ``on_clear`` releases what an entry holds (closes a retriever) when :meth:`ProcessCache.clear`
  drops it (not on LRU eviction: the bounded caches hold nothing to release), and
  :func:`clear_all` empties every cache of the process (tests).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_caches: weakref.WeakSet[ProcessCache[object, object]] = weakref.WeakSet()
_caches_lock = threading.Lock()


class ProcessCache(Generic[K, V]):
    """A keyed, optionally size-bounded (LRU), thread-safe cache of values shared by the process."""

    def __init__(
        self, name: str, *, maxsize: int | None = None,
        on_clear: Callable[[V], object] | None = None,
    ) -> None:
        if maxsize is not None and maxsize < 1:
            raise ValueError(f"ProcessCache {name!r}: maxsize must be at least 1, got {maxsize}")
        self.name = name
        """What the cache holds (shown in ``repr``)."""
        self.maxsize = maxsize
        """Most entries kept (least recently used dropped first); None = unbounded."""
        self._on_clear = on_clear
        self._entries: OrderedDict[K, tuple[tuple[object, ...], V]] = OrderedDict()
        self._lock = threading.RLock()
        with _caches_lock:
            _caches.add(self)  # type: ignore[arg-type]

    def get(self, key: K, build: Callable[[], V], *, pin: tuple[object, ...] = ()) -> V:
        """The value cached for ``key``, else ``build()`` cached and returned.

        ``build`` runs under the cache's lock, so two threads never build the same value twice;
        it may use this cache again (re-entrant). An exception from ``build`` caches nothing.
        """
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and _same(hit[0], pin):
                if self.maxsize is not None:
                    self._entries.move_to_end(key)
                return hit[1]
            value = build()
            self._put(key, value, pin)
            return value

    def peek(self, key: K, *, pin: tuple[object, ...] = ()) -> V | None:
        """The value cached for ``key``, or None; never builds, never waits for a build.

        One dict read, atomic under the GIL: safe on the event loop while a worker thread builds
        (a hit refreshes its LRU place only when the lock is free at once).
        """
        hit = self._entries.get(key)
        if hit is None or not _same(hit[0], pin):
            return None
        if self.maxsize is not None and self._lock.acquire(blocking=False):
            try:
                if key in self._entries:
                    self._entries.move_to_end(key)
            finally:
                self._lock.release()
        return hit[1]

    def put(self, key: K, value: V, *, pin: tuple[object, ...] = ()) -> V:
        """Cache ``value`` for ``key`` (replacing any) and return it."""
        with self._lock:
            self._put(key, value, pin)
        return value

    def values(self) -> list[V]:
        """A snapshot of the cached values, least recently used first."""
        with self._lock:
            return [value for _, value in self._entries.values()]

    def clear(self) -> None:
        """Drop every entry, calling ``on_clear`` on each value first (tests, index rebuilds)."""
        with self._lock:
            if self._on_clear is not None:
                for _, value in self._entries.values():
                    self._on_clear(value)
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        with self._lock:
            return iter(list(self._entries))

    def __repr__(self) -> str:
        bound = "unbounded" if self.maxsize is None else f"max {self.maxsize}"
        return f"ProcessCache({self.name!r}, {len(self)} entries, {bound})"

    def _put(self, key: K, value: V, pin: tuple[object, ...]) -> None:
        self._entries[key] = (pin, value)
        self._entries.move_to_end(key)
        while self.maxsize is not None and len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)


def _same(held: tuple[object, ...], wanted: tuple[object, ...]) -> bool:
    return len(held) == len(wanted) and all(a is b for a, b in zip(held, wanted, strict=True))


def caches() -> list[ProcessCache[object, object]]:
    """Every live ``ProcessCache`` of this process."""
    with _caches_lock:
        return list(_caches)


def clear_all() -> None:
    """Empty every process cache (tests that must not see another test's models or backends)."""
    for cache in caches():
        cache.clear()
