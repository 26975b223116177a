"""A fast search path for read-only Milvus Lite collections (milvus-lite 3.2.x).

Why: milvus-lite 3 is a pure-Python engine. Its dense search
(``milvus_lite.search.executor_indexed.execute_search_with_index``) rebuilds, for every query,
a per-row visibility mask in Python — a dict of the newest ``_seq`` per primary key over every
row of every segment, then a per-row tombstone check. That is O(N) interpreted work per query
(~85 ms at 100k passages on the 2-core benchmark machine) while the FAISS HNSW search it guards
takes ~0.6 ms. The index type does not matter: the loop runs before any index is asked.

What: when nothing can hide a row — no tombstones (``DeltaIndex`` empty), an empty memtable
(no unflushed inserts or deletes), no filter expression, no partition restriction, no null
vectors, and primary keys unique across all segments — every row is
visible, the original mask is all-true, and the search reduces to "ask each segment's index,
merge by distance, materialise the winners". :func:`fast_search` does exactly that, with the
original's tie-break and record projection, so its results are identical (the integration test
compares both paths on the same collection). In any other case it calls the original function.
An index written by ``factdebate index`` is such a collection: built once, flushed, never
updated. The pk-uniqueness check is O(N) once per set of segment files (cached by file name
and row count: a segment file is immutable; compaction writes a new one).

The patch is installed through ``factdebate.patches.enabled("milvus_lite")`` (asked when a Milvus
Lite database is opened or served), only for the milvus-lite versions it was written against
(the gate in ``factdebate.patches.PATCHES``) and only if the original still has the expected
signature; otherwise milvus-lite is left untouched (correct, just slower).
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

_EXPECTED_PARAMS = (
    "query_vectors", "segments", "memtable", "delta_index", "top_k", "metric_type", "pk_field",
    "vector_field", "partition_names", "compiled_filter", "output_fields",
    "indexed_filter_plan", "project_record_fn", "search_params",
)
_UNIQUE_CACHE_SIZE = 16

_original: Any = None
_unique_cache: dict[tuple[tuple[str, int], ...], bool] = {}
_lock = threading.Lock()


def install() -> bool:
    """Route Milvus Lite dense searches through :func:`fast_search` (idempotent).

    Call it through ``factdebate.patches.enabled("milvus_lite")``, which checks the version gate.

    Returns:
        True if the fast path is active, False if the original is not the one it mirrors.
    """
    global _original
    with _lock:
        if _original is not None:
            return True
        try:
            from milvus_lite.engine import collection
        except ImportError:
            return False
        current = getattr(collection, "execute_search_with_index", None)
        if current is None:
            return False
        if tuple(inspect.signature(current).parameters) != _EXPECTED_PARAMS:
            return False
        _original = current
        collection.execute_search_with_index = fast_search
        return True


def installed() -> bool:
    """True once :func:`install` has replaced the search function."""
    return _original is not None


def fast_search(query_vectors: Any, segments: Any, memtable: Any, delta_index: Any, top_k: int,
                metric_type: str, pk_field: str, vector_field: str,
                partition_names: list[str] | None = None, compiled_filter: Any = None,
                output_fields: list[str] | None = None, indexed_filter_plan: Any = None,
                project_record_fn: Any = None,
                search_params: dict[str, Any] | None = None) -> list[list[dict]]:
    """Drop-in for milvus-lite's ``execute_search_with_index`` (same arguments and result)."""
    args = dict(
        query_vectors=query_vectors, segments=segments, memtable=memtable,
        delta_index=delta_index, top_k=top_k, metric_type=metric_type, pk_field=pk_field,
        vector_field=vector_field, partition_names=partition_names,
        compiled_filter=compiled_filter, output_fields=output_fields,
        indexed_filter_plan=indexed_filter_plan, project_record_fn=project_record_fn,
        search_params=search_params,
    )
    segs = [s for s in segments if s.num_rows > 0]
    args["segments"] = segs
    if not _all_rows_visible(segs, memtable, delta_index, vector_field, partition_names,
                             compiled_filter, project_record_fn):
        return _original(**args)
    import numpy as np

    queries = np.asarray(query_vectors, dtype=np.float32)
    if queries.ndim == 1:
        queries = queries.reshape(1, -1)
    if queries.shape[0] == 0 or top_k <= 0 or not segs:
        return [[] for _ in range(queries.shape[0])]
    hits: list[list[tuple[float, int, int]]] = [[] for _ in range(queries.shape[0])]
    from milvus_lite.index.brute_force import BruteForceIndex

    for source, seg in enumerate(segs):
        index = seg.indexes.get(vector_field)
        if index is None:  # a just-flushed segment whose index is not built yet: as upstream
            index = BruteForceIndex.build(seg.vector_data(vector_field)[0], metric_type)
        ids, dists = index.search(queries, top_k, valid_mask=None, params=search_params)
        for q in range(queries.shape[0]):
            for j in range(min(top_k, ids.shape[1])):
                if int(ids[q, j]) < 0:
                    break  # padding (fewer rows than top_k)
                hits[q].append((float(dists[q, j]), source, int(ids[q, j])))
    return [_materialise(sorted(row)[:top_k], segs, pk_field, project_record_fn) for row in hits]


def _materialise(best: list[tuple[float, int, int]], segs: list[Any], pk_field: str,
                 project: Any) -> list[dict]:
    out = []
    for dist, source, row in best:
        record = segs[source].row_to_dict(row)
        pk = record[pk_field] if pk_field in record else segs[source].pks[row]
        out.append({"id": pk, "distance": dist, "entity": project(record)})
    return out


def _all_rows_visible(segs: list[Any], memtable: Any, delta_index: Any, vector_field: str,
                      partition_names: Any, compiled_filter: Any, project: Any) -> bool:
    """True when the original visibility mask would be all-true for every segment."""
    if compiled_filter is not None or partition_names or project is None:
        return False
    if len(delta_index) or memtable.size():
        return False
    for seg in segs:
        if seg.vector_data(vector_field)[1] is not None:  # null vectors: upstream masks them
            return False
    return _unique_pks(segs)


def _unique_pks(segs: list[Any]) -> bool:
    key = tuple((str(s.file_path), int(s.num_rows)) for s in segs)
    with _lock:
        known = _unique_cache.get(key)
    if known is not None:
        return known
    seen: set[Any] = set()
    total = 0
    for seg in segs:
        seen.update(seg.pks)
        total += seg.num_rows
    unique = len(seen) == total
    with _lock:
        if len(_unique_cache) >= _UNIQUE_CACHE_SIZE:
            _unique_cache.pop(next(iter(_unique_cache)))
        _unique_cache[key] = unique
    return unique
