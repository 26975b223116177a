"""``factdebate bench index``: index build and search at scale, Milvus Lite against a Milvus server.

For each size (``--sizes``, default 10k and 100k synthetic passages) and each target - Milvus Lite
in a folder, and Milvus standalone started for the run (:mod:`.milvus_standalone`, PyPI's
``milvus`` package, on loopback) - the collection ``factdebate index`` builds
(:func:`factdebate.tools.milvus_rag.create_collection`: the same schema, HNSW M=16
efConstruction=200, COSINE) receives the passages in batches of 256 as ``factdebate index`` sends
them, with precomputed vectors (embedding excluded), timed by stage:

* ``create_s`` - create the collection with its index; ``insert_s`` - the inserts;
* ``flush_s`` - ``flush`` (seals the segments); ``index_s`` - until the server reports every row
  indexed (Lite builds its HNSW graph when the collection is loaded); ``load_s`` - load for search;
* ``passages_per_s`` = passages / (insert + flush + index + load);
* search: 200 queries (unit vectors of the passages' distribution), k=5, ``ef`` as the retriever
  sets it, p50/p99 ms; memory: this process's peak RSS (holds Lite) and the server's (``VmHWM``).

Embedding included: the smallest size's passages embedded with the bundled MiniLM once (its time
measured), so ``passages_per_s_with_embedding`` = passages / (embed + build) per target. The demo
build - ``factdebate index``'s own :func:`build_indexes` of the 264-passage demo corpus into Lite
and into the server - gives the ratio docs/deployment.md states (budget: the server within 2x of Lite).
Synthetic passages: ``s<n>`` ids, titles and ~300-character texts of words drawn with a fixed
seed; vectors: normalised Gaussian draws around 64 cluster centres (a clustered distribution as
real embeddings are; uniform random vectors make HNSW look worse than it is).
"""

from __future__ import annotations

import os
import random
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from factdebate.tools import DEMO_CORPUS_DIR

BATCH = 256
DIM = 384
QUERIES = 200
K = 5
WORDS = ("river city tower mountain capital science prize war empire island language music art "
         "novel painter king queen bridge museum desert forest ocean planet engine ship").split()


def _peak_rss_mb(pid: int | None = None) -> float:
    """Peak RSS (MiB) of ``pid`` (``VmHWM``) or of this process (``ru_maxrss``)."""
    if pid is None:
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def synthetic_passages(n: int, seed: int = 13) -> Iterator[dict[str, str]]:
    """``n`` passages (``id``, ``title``, ``text``, ``url``) drawn with a fixed seed."""
    rng = random.Random(seed)
    for i in range(n):
        words = rng.choices(WORDS, k=48)
        yield {"id": f"s{i}", "title": f"{words[0].title()} {i}", "text": " ".join(words) + ".",
               "url": ""}


def synthetic_vectors(n: int, seed: int = 13) -> Any:
    """``n`` unit vectors around 64 cluster centres (float32, ``n x DIM``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((64, DIM)).astype("float32")
    vectors = centres[rng.integers(0, 64, n)] + 0.6 * rng.standard_normal((n, DIM)).astype("float32")
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _wait_indexed(client: Any, name: str, rows: int, timeout: float = 1800.0) -> None:
    """Until the server reports every row of ``name`` indexed (Lite: returns at once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = client.describe_index(name, "vector")
        if "indexed_rows" not in info or int(info.get("indexed_rows", 0)) >= rows:
            return
        time.sleep(0.2)


def build_and_search(uri: str, name: str, vectors: Any, progress: Callable[[int], None],
                     seed: int = 13) -> dict[str, Any]:
    """Insert ``vectors`` (with synthetic passages) into a new collection at ``uri``, timed by stage,
    then time the searches."""
    import numpy as np

    from factdebate.tools import milvus_rag

    client = milvus_rag.connect(uri, create=True)
    n = len(vectors)
    try:
        t0 = time.perf_counter()
        milvus_rag.create_collection(client, name, DIM)
        client.release_collection(name)  # loaded at creation; load after the build, as retrievers do
        t1 = time.perf_counter()
        batch: list[dict[str, Any]] = []
        for i, passage in enumerate(synthetic_passages(n, seed)):
            batch.append({**passage, "vector": vectors[i].tolist()})
            if len(batch) == BATCH or i == n - 1:
                client.insert(name, batch)
                progress(len(batch))
                batch = []
        t2 = time.perf_counter()
        client.flush(name)
        t3 = time.perf_counter()
        _wait_indexed(client, name, n)
        t4 = time.perf_counter()
        client.load_collection(name)
        t5 = time.perf_counter()
        queries = synthetic_vectors(QUERIES, seed + 1)
        params = {"metric_type": milvus_rag.METRIC, "params": milvus_rag.search_params("HNSW", K)}
        client.search(name, data=[queries[0].tolist()], limit=K, search_params=params)  # warm
        latencies = []
        for q in queries:
            start = time.perf_counter()
            hits = client.search(name, data=[q.tolist()], limit=K, output_fields=["title"],
                                 search_params=params)
            latencies.append((time.perf_counter() - start) * 1000)
            assert len(hits[0]) == K
        client.drop_collection(name)
    finally:
        milvus_rag.disconnect(client, uri)
    build = t3 - t1 + (t4 - t3) + (t5 - t4)
    return {"passages": n, "create_s": round(t1 - t0, 2), "insert_s": round(t2 - t1, 2),
            "flush_s": round(t3 - t2, 2), "index_s": round(t4 - t3, 2),
            "load_s": round(t5 - t4, 2), "build_s": round(build, 2),
            "passages_per_s": round(n / build),
            "search_p50_ms": round(statistics.median(latencies), 2),
            "search_p99_ms": round(float(np.percentile(latencies, 99)), 2)}


def _slower_because(lite: dict[str, Any], server: dict[str, Any]) -> str:
    """The stages where the server spent more time than Lite, largest first."""
    stages = ("create_s", "insert_s", "flush_s", "index_s", "load_s")
    extra = sorted(((server[s] - lite[s], s) for s in stages), reverse=True)
    named = [f"{s.removesuffix('_s')} +{d:.1f}s" for d, s in extra if d > 0.05]
    return ", ".join(named) if server["build_s"] > lite["build_s"] else "not slower"


def run_index_bench(work_dir: Path, *, sizes: tuple[int, ...] = (10_000, 100_000),
                    seed: int = 13, progress: Any = None) -> dict[str, Any]:
    """Build and search every size into Milvus Lite and a Milvus server; see the module docstring."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from factdebate.evaluation.milvus_standalone import MilvusStandalone, milvus_unavailable
    from factdebate.tools.embeddings import get_embeddings
    from factdebate.tools.indexing import build_indexes

    reason = milvus_unavailable()
    if reason:
        raise RuntimeError(f"bench index needs a Milvus server: {reason}")
    server = MilvusStandalone(work_dir / "milvus-server", cache_dir=work_dir / "milvus-cache")
    server.start()
    bar = progress or Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TimeElapsedColumn(), console=Console(stderr=True), transient=True)
    results: dict[str, Any] = {"sizes": {}, "server": "Milvus standalone 2.3.5 (PyPI milvus), "
                               "loopback", "lite": "Milvus Lite 3.2.2 (in process)"}
    try:
        with bar:
            for size in sizes:
                vectors = synthetic_vectors(size, seed)
                per: dict[str, Any] = {}
                for target, uri in (("lite", str(work_dir / f"lite-{size}" / "milvus.db")),
                                    ("server", server.uri)):
                    task = bar.add_task(f"{target} {size:,} passages", total=size)
                    per[target] = build_and_search(
                        uri, f"bench_{size}", vectors, lambda n, t=task: bar.advance(t, n), seed)
                    per[target]["peak_rss_mb"] = (_peak_rss_mb() if target == "lite"
                                                  else _peak_rss_mb(server.pid))
                    bar.remove_task(task)
                per["server_slower_because"] = _slower_because(per["lite"], per["server"])
                results["sizes"][str(size)] = per
                del vectors
            smallest = min(sizes)
            texts = [f"{p['title']}\n{p['text']}" for p in synthetic_passages(smallest, seed)]
            task = bar.add_task(f"embedding {smallest:,} passages (MiniLM)", total=smallest)
            embeddings = get_embeddings("minilm")
            start = time.perf_counter()
            for i in range(0, smallest, BATCH):
                embeddings.embed_documents(texts[i:i + BATCH])
                bar.advance(task, len(texts[i:i + BATCH]))
            embed_s = time.perf_counter() - start
            bar.remove_task(task)
            per = results["sizes"][str(smallest)]
            results["embedding"] = {"passages": smallest, "embed_s": round(embed_s, 1),
                                    "passages_per_s": round(smallest / embed_s)}
            for target in ("lite", "server"):
                per[target]["passages_per_s_with_embedding"] = round(
                    smallest / (embed_s + per[target]["build_s"]))
            task = bar.add_task("demo build (factdebate index), Lite and server", total=2)
            demo = DEMO_CORPUS_DIR / "passages.jsonl"
            timings = {}
            for target, uri in (("lite", None), ("server", server.uri)):
                manifest = build_indexes(demo, work_dir / f"demo-{target}", milvus_uri=uri)
                timings[target] = manifest["build_seconds"]
                bar.advance(task, 1)
            results["demo_build_s"] = timings
            results["demo_build_ratio"] = round(timings["server"] / timings["lite"], 2)
            results["server_peak_rss_mb"] = _peak_rss_mb(server.pid)
    finally:
        server.remove()
    results["cpus"] = os.cpu_count()
    return results
