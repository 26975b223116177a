"""factdebate.core.caching: the one process cache behind models, backends and compiled graphs."""

from __future__ import annotations

import threading
import time

import pytest

from factdebate.core.caching import ProcessCache, caches, clear_all


def test_builds_once_per_key_and_peek_never_builds() -> None:
    cache: ProcessCache[str, list[str]] = ProcessCache("test values")
    built: list[str] = []

    def build(key: str) -> list[str]:
        built.append(key)
        return [key]

    assert cache.peek("a") is None
    first = cache.get("a", lambda: build("a"))
    assert cache.get("a", lambda: build("a")) is first
    assert cache.peek("a") is first
    assert built == ["a"]
    assert "a" in cache and len(cache) == 1


def test_lru_bound_drops_least_recently_used() -> None:
    cache: ProcessCache[int, int] = ProcessCache("test lru", maxsize=2)
    cache.get(1, lambda: 10)
    cache.get(2, lambda: 20)
    cache.get(1, lambda: -1)  # touch 1: 2 is now the oldest
    cache.get(3, lambda: 30)
    assert list(cache) == [1, 3]
    assert cache.get(2, lambda: 21) == 21


def test_pinned_objects_must_be_the_same_objects() -> None:
    cache: ProcessCache[int, str] = ProcessCache("test pins", maxsize=4)
    owner = object()
    cache.get(1, lambda: "first", pin=(owner,))
    assert cache.get(1, lambda: "other", pin=(owner,)) == "first"
    assert cache.peek(1, pin=(object(),)) is None  # same key, another object: a miss
    assert cache.get(1, lambda: "rebuilt", pin=(object(),)) == "rebuilt"


def test_build_error_caches_nothing() -> None:
    cache: ProcessCache[str, int] = ProcessCache("test errors")

    def fail() -> int:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        cache.get("k", fail)
    assert "k" not in cache
    assert cache.get("k", lambda: 1) == 1


def test_concurrent_gets_build_once_and_reentrant_build_works() -> None:
    cache: ProcessCache[str, str] = ProcessCache("test threads")
    calls: list[int] = []

    def slow() -> str:
        calls.append(1)
        time.sleep(0.05)
        return cache.get("inner", lambda: "inner") + "+outer"  # a composite opens others

    threads = [threading.Thread(target=cache.get, args=("outer", slow)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1]
    assert cache.peek("outer") == "inner+outer"


def test_clear_releases_values_and_clear_all_reaches_every_cache() -> None:
    closed: list[str] = []
    cache: ProcessCache[str, str] = ProcessCache("test clear", on_clear=closed.append)
    other: ProcessCache[str, str] = ProcessCache("test clear 2")
    cache.get("a", lambda: "A")
    other.get("b", lambda: "B")
    assert cache in caches() and other in caches()
    cache.clear()
    assert closed == ["A"] and len(cache) == 0
    cache.get("a", lambda: "A2")
    clear_all()
    assert len(cache) == 0 and len(other) == 0 and closed == ["A", "A2"]


def test_maxsize_must_be_positive() -> None:
    with pytest.raises(ValueError, match="maxsize"):
        ProcessCache("bad", maxsize=0)
