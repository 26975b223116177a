"""The garbage-collector policy of a process that runs claims: the CLI (``run_async``,
``run_graph``), eval workers, and - the freeze only - the LangGraph server
(``graphs/exported.DebateGraph.astream``).

Why (measured with ``gc.callbacks`` and ``gc.get_stats`` in ``factdebate bench
scaling``-style runs: 128 Tool-MAD claims in flight, the scripted double at 1 s per call, one
process): a warm process holds ~750k tracked objects that live as long as it does (LangChain,
LangGraph, RAGAS, torch and sentence-transformers, pymilvus, the loaded models and indexes), and
CPython 3.11's collector walks all of them in every full collection (~0.3 s each: 6 during the run,
besides 108 second- and 1,187 first-generation collections), while a claim leaves almost no cyclic
garbage (~30 objects per claim reach the collector; the rest is freed by reference counting).
Collections stall the event loop that all 128 claims share.

What:

* :func:`claim_process_gc` (``run_async``, i.e. every CLI command and eval worker): the first
  generation is collected after :data:`GEN0_THRESHOLD` net allocations instead of 700 (later
  generations keep their default ratios), so young collections run ~30x less often; each one
  still finds the same few cycles. Not on the server: an idle server would then keep the cyclic
  garbage of its last run - a failed run's exception frames holding a large hostile reply - until
  enough allocations came (``tests/integration/test_server_hostile_memory.py`` measures its RSS
  after such runs: 1.105 x before with this threshold, 1.003 without).
* :func:`settle_after_first_claim` (``run_graph``, and ``DebateGraph.astream`` for the server's
  and Studio's runs): once the first claim of the process has finished - models, RAGAS,
  embeddings, indexes and compiled graphs are loaded by then - one full
  collection, then ``gc.freeze()`` moves everything alive into the permanent generation, which no
  later collection walks. Objects frozen are still freed by reference counting; only cycles among
  them (what was in flight at that moment) stay, once.

Measured at c=128, 1 s per call, one process, the same tree otherwise, one run after the other on
the shared 2-core machine: CPython's defaults 20.3 s wall / 12.1 s CPU and 18.3 s / 11.6 s; with
both 14.4 s / 8.1 s and 15.0 s / 8.8 s. ``FACTDEBATE_GC=default`` leaves the collector as it is.
"""

from __future__ import annotations

import gc
import os
import threading

GEN0_THRESHOLD = 20_000
"""Net allocations of tracked objects between first-generation collections (CPython: 700)."""

_settled = False
_lock = threading.Lock()


def _enabled() -> bool:
    return os.environ.get("FACTDEBATE_GC", "").strip().lower() != "default"


def claim_process_gc() -> None:
    """Collect the first generation less often (later generations keep their ratios)."""
    if not _enabled():
        return
    _, gen1, gen2 = gc.get_threshold()
    if gc.get_threshold()[0] < GEN0_THRESHOLD:
        gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)


def settle_after_first_claim() -> None:
    """After the process's first finished claim: freeze what is alive (once per process)."""
    global _settled
    if _settled or not _enabled():
        return
    with _lock:
        if _settled:
            return
        _settled = True
    gc.collect()  # once: what is garbage now is not frozen
    gc.freeze()
