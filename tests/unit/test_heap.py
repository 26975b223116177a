"""The collector policy of a process that runs claims (core/heap.py)."""

from __future__ import annotations

import gc

import pytest

from factdebate.core import heap


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """CPython's thresholds and frozen objects as they were, and a process that ran no claim."""
    before = gc.get_threshold()
    monkeypatch.setattr(heap, "_settled", False)
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


def test_young_collections_run_less_often_in_a_claim_process(collector, monkeypatch) -> None:  # noqa: ANN001
    gc.set_threshold(700, 10, 10)
    monkeypatch.delenv("FACTDEBATE_GC", raising=False)
    heap.claim_process_gc()
    assert gc.get_threshold() == (heap.GEN0_THRESHOLD, 10, 10)


def test_the_heap_is_frozen_once_after_the_first_claim(collector, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("FACTDEBATE_GC", raising=False)
    gc.unfreeze()
    before = [object()]
    heap.settle_after_first_claim()
    assert gc.get_freeze_count() > 0
    assert not any(o is before for o in gc.get_objects())  # frozen: no generation holds it
    later = [object()]
    heap.settle_after_first_claim()  # once per process: what came later is not frozen
    # (the frozen count itself may fall: a frozen object is still freed by reference counting)
    assert any(o is later for o in gc.get_objects())


def test_the_default_collector_on_request(collector, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("FACTDEBATE_GC", "default")
    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    heap.claim_process_gc()
    heap.settle_after_first_claim()
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
