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

The gate in ``factdebate.patches.PATCHES`` names the langgraph-checkpoint and
langgraph-runtime-inmem versions this layout was read from; with any other version the server
does not prune (``usage.prune_before_write`` asks ``enabled("inmem_history")``) and says so once
in its log. Deployments on the LangGraph Platform runtime bound history with
``checkpointer.ttl`` instead.
"""

from __future__ import annotations

from typing import Any


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


def prune(saver: Any, thread_id: str, keep: int) -> int:
    """Remove all but the newest ``keep`` checkpoints of each namespace of a thread in ``saver``
    (an ``InMemorySaver``), with their pending writes and the channel values no kept checkpoint
    references. Returns the number of checkpoints removed."""
    if keep <= 0 or thread_id not in saver.storage:
        return 0
    removed = 0
    referenced: set[tuple[str, str, Any]] = set()
    namespaces = saver.storage[thread_id]
    for ns, checkpoints in list(namespaces.items()):
        ordered = sorted(list(checkpoints), reverse=True)  # ids grow with time (uuid6)
        for checkpoint_id in ordered[keep:]:
            checkpoints.pop(checkpoint_id, None)
            saver.writes.pop((thread_id, ns, checkpoint_id), None)
            removed += 1
        for checkpoint_id in ordered[:keep]:
            stored = checkpoints.get(checkpoint_id)
            if stored is None:
                continue
            checkpoint = saver.serde.loads_typed(stored[0])
            referenced.update((ns, ch, v) for ch, v in checkpoint["channel_versions"].items())
    if removed:
        for blob_key in list(saver.blobs):
            if blob_key[0] == thread_id and tuple(blob_key[1:]) not in referenced:
                saver.blobs.pop(blob_key, None)
    return removed
