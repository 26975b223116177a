"""The thread history bound of ``langgraph dev``: pruning the in-memory checkpointer's storage.

Why: the in-memory runtime that ``langgraph dev`` serves with (langgraph-runtime-inmem) keeps every
checkpoint of every thread - its checkpointer ignores ``langgraph.json``'s ``checkpointer.ttl``
and its threads prune API answers ``keep_latest`` with 422 - so one client's state updates grow
the server without bound (measured: 12 ``update_state`` calls left 17 checkpoints on one thread,
each holding the client's values). The server (``factdebate.server.usage``) removes a thread's
oldest checkpoints before each write instead, with this module, because no public API of these
versions removes a checkpoint: :func:`runtime_saver` is the runtime's ``InMemorySaver`` (its
``Checkpointer()`` factory), :func:`prune` deletes entries of the saver's ``storage``,
``writes`` and ``blobs`` dictionaries - the layout of langgraph-checkpoint's ``InMemorySaver``
(``storage[thread][ns][checkpoint_id] = (checkpoint, metadata, parent)``, ``writes`` keyed by
``(thread, ns, checkpoint_id)``, ``blobs`` by ``(thread, ns, channel, version)``), the same
dictionaries the runtime's own thread deletion clears.

**One bound per thread, all namespaces together.** A graph with a visible subgraph (Tool-MAD's
debater turn) checkpoints each subgraph run under a namespace of its own (``turn:<task id>``),
and the subgraph's checkpoints name, in their metadata (``parents[""]``), the top-level
checkpoint that scheduled them. :func:`prune` keeps the newest top-level checkpoints together
with the namespaces they scheduled, newest first, while the thread's checkpoints across all
namespaces stay within the bound; everything older goes: a top-level checkpoint leaves with
the namespaces it scheduled, and a namespace whose top-level checkpoint is gone leaves too. The
newest top-level checkpoint (and a subgraph it interrupted) is always kept. A bound of N thus
holds whatever the number of runs; per-namespace pruning never removed a namespace (8 Tool-MAD
runs left 48 of them).

**Cost of one thread.** Nothing here walks the server's whole storage: the channel values a
removed checkpoint may leave unreferenced are named by that checkpoint's own
``channel_versions`` (``InMemorySaver.put`` writes a value only with the checkpoint that
references it), so pruning and :func:`stored_bytes` read the one thread's checkpoints and look
up its values by key. The runtime's other threads are neither read nor touched.

The gate in ``factdebate.patches.PATCHES`` names the langgraph-checkpoint and
langgraph-runtime-inmem versions this layout was read from; with any other version the server
does not prune (``usage.bound_history`` asks ``enabled("inmem_history")``) and says so once
in its log. Deployments on the LangGraph Platform runtime bound history with
``checkpointer.ttl`` instead. Graphs with LangGraph's ``DeltaChannel`` (whose values build on
earlier versions) are not pruned correctly by this module; no graph of this project uses one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ROOT_NS = ""


def install() -> bool:
    """Nothing to install: the functions below are called only while the gate is open."""
    return True


def runtime_saver() -> Any:
    """The in-memory runtime's checkpointer, or None on any other runtime."""
    try:
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph_runtime.checkpoint import Checkpointer  # the runtime langgraph-api runs on
    except Exception:  # noqa: BLE001  # another runtime, or not inside a server
        return None
    try:
        saver = Checkpointer()
    except Exception:  # noqa: BLE001
        return None
    return saver if isinstance(saver, InMemorySaver) else None


def _thread(saver: Any, thread_id: str) -> dict[str, dict[str, Any]] | None:
    """The thread's namespaces (``storage`` is a defaultdict: never create an entry by reading)."""
    return saver.storage[thread_id] if thread_id in saver.storage else None


def _versions(saver: Any, stored: tuple[Any, ...]) -> dict[str, Any]:
    return dict(saver.serde.loads_typed(stored[0]).get("channel_versions") or {})


def _scheduled_by(saver: Any, checkpoints: dict[str, Any], top: list[str]) -> str | None:
    """The top-level checkpoint that scheduled a subgraph namespace: its metadata's
    ``parents[""]``, else the newest top-level checkpoint older than its first checkpoint
    (checkpoint ids grow with time, uuid6)."""
    first = min(checkpoints)
    parents = saver.serde.loads_typed(checkpoints[first][1]).get("parents") or {}
    parent = parents.get(ROOT_NS)
    if parent is not None:
        return str(parent)
    older = [cid for cid in top if cid < first]
    return max(older) if older else None


def plan(saver: Any, thread_id: str, keep: int) -> tuple[list[str], list[str], list[str]]:
    """What :func:`prune` would do: (top-level checkpoint ids to keep, top-level ids to remove,
    subgraph namespaces to remove)."""
    namespaces = _thread(saver, thread_id)
    if namespaces is None or keep <= 0:
        return [], [], []
    top = sorted(namespaces.get(ROOT_NS, {}), reverse=True)  # newest first
    scheduled: dict[str | None, list[str]] = {}
    for ns, checkpoints in list(namespaces.items()):
        if ns != ROOT_NS:
            parent = _scheduled_by(saver, checkpoints, top) if checkpoints else None
            scheduled.setdefault(parent, []).append(ns)
    kept: list[str] = []
    total = 0
    for checkpoint_id in top:
        size = 1 + sum(len(namespaces[ns]) for ns in scheduled.get(checkpoint_id, ()))
        if kept and total + size > keep:
            break
        kept.append(checkpoint_id)
        total += size
    kept_set = set(kept)
    dropped_ns = [ns for parent, group in scheduled.items() if parent not in kept_set
                  for ns in group]
    return kept, top[len(kept):], dropped_ns


def prune(saver: Any, thread_id: str, keep: int) -> int:
    """Keep at most ``keep`` checkpoints of a thread in ``saver`` (an ``InMemorySaver``) across
    all its namespaces (see the module docstring), with their pending writes and the channel
    values no kept checkpoint references. Returns the number of checkpoints removed."""
    namespaces = _thread(saver, thread_id)
    if namespaces is None or keep <= 0:
        return 0
    kept, dropped_top, dropped_ns = plan(saver, thread_id, keep)
    removed = 0
    candidates: set[tuple[str, str, Any]] = set()  # (ns, channel, version) maybe unreferenced

    def drop(ns: str, checkpoint_ids: Iterable[str]) -> None:
        nonlocal removed
        checkpoints = namespaces.get(ns, {})
        for checkpoint_id in list(checkpoint_ids):
            stored = checkpoints.pop(checkpoint_id, None)
            saver.writes.pop((thread_id, ns, checkpoint_id), None)
            if stored is not None:
                removed += 1
                candidates.update((ns, ch, v) for ch, v in _versions(saver, stored).items())

    drop(ROOT_NS, dropped_top)
    for ns in dropped_ns:
        drop(ns, list(namespaces.get(ns, {})))
        namespaces.pop(ns, None)
    if not candidates:
        return removed
    referenced: set[tuple[str, str, Any]] = set()
    for ns in {ns for ns, _, _ in candidates}:
        for stored in list(namespaces.get(ns, {}).values()):
            referenced.update((ns, ch, v) for ch, v in _versions(saver, stored).items())
    for ns, channel, version in candidates - referenced:
        saver.blobs.pop((thread_id, ns, channel, version), None)
    return removed


def value_keys(saver: Any, thread_id: str) -> list[tuple[str, str, str, Any]]:
    """The ``blobs`` keys of the channel values a thread's checkpoints reference (all of the
    thread's values: each was written with a checkpoint that references it, and pruning removes
    the values of the checkpoints it removes)."""
    namespaces = _thread(saver, thread_id)
    if namespaces is None:
        return []
    keys: set[tuple[str, str, str, Any]] = set()
    for ns, checkpoints in list(namespaces.items()):
        for stored in list(checkpoints.values()):
            keys.update((thread_id, ns, ch, v) for ch, v in _versions(saver, stored).items())
    return list(keys)


def forget_values(saver: Any, keys: Iterable[tuple[str, str, str, Any]]) -> int:
    """Remove these channel values from ``saver``; returns how many were there.

    The runtime's thread delete removes a thread's checkpoints and pending writes but not its
    channel values, so every deleted thread's values stayed in memory for the life of the server
    (measured: +39 MB over 1,600 deleted threads in 10 minutes); the thread-list patch
    (:mod:`factdebate.patches.inmem_threads`) calls this after a delete succeeded, with the keys
    read just before it."""
    return sum(saver.blobs.pop(key, None) is not None for key in keys)


def count(saver: Any, thread_id: str) -> tuple[int, int]:
    """(checkpoints, namespaces) a thread holds in ``saver``, all namespaces together."""
    namespaces = _thread(saver, thread_id)
    if namespaces is None:
        return 0, 0
    return sum(len(c) for c in list(namespaces.values())), len(namespaces)


def has_checkpoint(saver: Any, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> bool:
    """Whether the thread's namespace holds that checkpoint."""
    namespaces = _thread(saver, thread_id)
    return namespaces is not None and str(checkpoint_id) in namespaces.get(checkpoint_ns, {})


def has_checkpoints(saver: Any, thread_id: str) -> bool:
    """Whether the thread holds any checkpoint, in any namespace."""
    namespaces = _thread(saver, thread_id)
    return namespaces is not None and any(namespaces.values())


def has_namespace(saver: Any, thread_id: str, checkpoint_ns: str) -> bool:
    """Whether the thread holds a checkpoint in that namespace."""
    namespaces = _thread(saver, thread_id)
    return namespaces is not None and bool(namespaces.get(checkpoint_ns))


def _nbytes(value: Any) -> int:
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, tuple | list):
        return sum(_nbytes(item) for item in value)
    if isinstance(value, dict):
        return sum(_nbytes(item) for item in value.values())
    return 0


def stored_bytes(saver: Any, thread_id: str) -> int:
    """Bytes a thread's checkpoints hold in ``saver``: the checkpoints and their metadata, the
    channel values they reference (each once) and their pending writes."""
    namespaces = _thread(saver, thread_id)
    if namespaces is None:
        return 0
    total = 0
    values: set[tuple[str, str, Any]] = set()
    for ns, checkpoints in list(namespaces.items()):
        for checkpoint_id, stored in list(checkpoints.items()):
            total += _nbytes(stored[:2])
            values.update((ns, ch, v) for ch, v in _versions(saver, stored).items())
            total += _nbytes(saver.writes.get((thread_id, ns, checkpoint_id), {}))
    for ns, channel, version in values:
        total += _nbytes(saver.blobs.get((thread_id, ns, channel, version)))
    return total
