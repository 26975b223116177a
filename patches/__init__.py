"""Library-internal patches: each gated on the exact versions it copies, installed in one place.

A patch here copies or bypasses another library's internals (private functions or attributes,
SQL, a method's body) because measuring showed it pays; everything else in the project uses
public APIs (``tests/unit/test_layers.py`` checks that no module outside this package imports a
library's private names). Each patch is listed in ``PATCHES`` with the distributions whose
internals it copies and the exact versions it was written against. :func:`enabled` is the only
way the rest of the project asks for one: on first use it checks the gate (installed versions,
``importlib.metadata``) and installs the patch (:func:`install_all` runs every check once); with
any other version the library is left untouched and callers take the plain public path (correct,
just slower) - except ``llama_decode``, which has no public fallback: the embedded model's
grammar-constrained decoding needs it, so with another llama-cpp-python the embedded model refuses
to load, naming the version it needs (``factdebate.core.models.local``; pyproject.toml pins
llama-cpp-python exactly). ``tests/unit/test_patches.py`` fails when a pin in ``constraints.txt``
or a range in ``pyproject.toml`` moves away from a gate.

This package is the bottom layer: it imports no other ``factdebate`` package.

====================  ==========================================  =====================================
patch                 copies internals of                         what it saves (see its module)
====================  ==========================================  =====================================
``milvus_lite``       milvus-lite (``execute_search_with_index``) O(N) Python mask per dense query
``sqlite_saver``      aiosqlite (``Connection._execute``),        3-4 database-thread trips per
                      langgraph-checkpoint-sqlite (SQL, ``aput``) checkpoint write -> 1
``ragas_relevancy``   ragas (``AnswerRelevancy.ascore`` body)     3 sequential question calls -> 1
``ragas_prompts``     ragas (``BasePrompt.to_string`` template)   a 2nd copy of the schema per call
``llama_decode``      llama-cpp-python (``Llama._model/_ctx``)    grammar over 49k tokens per pick
``inmem_history``     langgraph-checkpoint (``InMemorySaver``     no bound on a thread's checkpoints
                      storage), langgraph-runtime-inmem           in ``langgraph dev`` -> a bound
``inmem_threads``     langgraph-runtime-inmem (``Threads.delete`` a delete that removes another
                      and ``Threads.patch`` by stale index)       thread -> one delete at a time
``inmem_run_events``  langgraph-runtime-inmem (``Runs.next``'s    a new run waits up to 0.5 s for
                      0.5 s poll, ``Runs.put``, ``Runs.enter``)   the queue's poll -> starts at once;
                                                                  admission asks the API until the
                                                                  run shows -> told by ``put``
====================  ==========================================  =====================================
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from importlib import metadata


@dataclass(frozen=True)
class Patch:
    """One gated patch."""

    module: str
    """Module under ``factdebate.patches`` with an ``install() -> bool``."""
    pins: dict[str, tuple[str, ...]]
    """Distribution -> the exact versions whose internals the patch copies."""


PATCHES: dict[str, Patch] = {
    "milvus_lite": Patch("factdebate.patches.milvus_lite", {"milvus-lite": ("3.2.2",)}),
    "sqlite_saver": Patch("factdebate.patches.sqlite_saver", {
        "aiosqlite": ("0.22.1",), "langgraph-checkpoint-sqlite": ("3.1.2",)}),
    "ragas_relevancy": Patch("factdebate.patches.ragas_relevancy", {"ragas": ("0.4.3",)}),
    "ragas_prompts": Patch("factdebate.patches.ragas_prompts", {"ragas": ("0.4.3",)}),
    "llama_decode": Patch("factdebate.patches.llama_decode", {"llama-cpp-python": ("0.3.36",)}),
    "inmem_history": Patch("factdebate.patches.inmem_history", {
        "langgraph-checkpoint": ("4.3.2",), "langgraph-runtime-inmem": ("0.36.7",)}),
    "inmem_threads": Patch("factdebate.patches.inmem_threads", {
        "langgraph-runtime-inmem": ("0.36.7",)}),
    "inmem_run_events": Patch("factdebate.patches.inmem_run_events", {
        "langgraph-runtime-inmem": ("0.36.7",)}),
}

_state: dict[str, bool] = {}
_lock = threading.Lock()


def gate(name: str) -> str | None:
    """Why patch ``name`` must stay off with the installed libraries, or None if it may run."""
    for dist, versions in PATCHES[name].pins.items():
        try:
            found = metadata.version(dist)
        except metadata.PackageNotFoundError:
            return f"{dist} is not installed"
        if found not in versions:
            return f"{dist} {found} is not one of {', '.join(versions)}"
    return None


def enabled(name: str) -> bool:
    """Whether patch ``name`` is active, installing it on first use if its gate allows."""
    with _lock:
        if name not in _state:
            _state[name] = gate(name) is None and bool(
                importlib.import_module(PATCHES[name].module).install())
        return _state[name]


def install_all() -> dict[str, bool]:
    """Check every gate and install what it allows (idempotent); name -> active."""
    return {name: enabled(name) for name in PATCHES}
