"""``factdebate bench index``: index build and search at scale, Milvus Lite against a Milvus server.

For each size (``--sizes``, default 10k and 100k synthetic passages) and each target - Milvus Lite
in a folder, and Milvus standalone (:mod:`.milvus_standalone`, PyPI's ``milvus`` package, on
loopback, a fresh server per size) - the collection ``factdebate index`` builds
(:func:`factdebate.tools.milvus_rag.create_collection`: the same schema, HNSW M=16
efConstruction=200, COSINE) receives the passages in batches of 256 as ``factdebate index`` sends
them, with precomputed vectors (embedding excluded), timed by stage:

* ``create_s`` - create the collection with its index; ``insert_s`` - the inserts;
* ``flush_s`` - ``flush`` (seals the segments); ``index_s`` - until the server reports every row
  indexed (Lite builds its HNSW graphs when the collection is loaded); ``load_s`` - load for search;
* ``passages_per_s`` = passages / (insert + flush + index + load);
* search: 200 queries (unit vectors of the passages' distribution), k=5, ``ef`` as the retriever
  sets it, p50/p99 ms;
* ``peak_rss_mb``: peak RSS of the process holding the data - Lite's (the run's own process:
  interpreter, client and Lite; ``client_base_rss_mb`` is its RSS before Lite opens) or the
  server's (``VmHWM``).

Each target runs in a process of its own (``multiprocessing`` spawn), generating its passages and
vectors batch by batch (nothing holds a size's 1.5 GB of vectors at 1M), while this process draws
the progress bar and watches it: a target whose data-holding process passes ``memory_limit_mb``
(default: 18 GiB, at most 75% of the machine), whose machine runs out of available memory, that
exceeds ``timeout_s`` or that dies is stopped and recorded as ``{"failed": "<what, at which
stage>"}``; the other targets and sizes still run. The machine is shared, so the load average is
recorded at the start and end of the bench and of each target (``load_1m``).

Embedding included: at the smallest size each target also runs the real pipeline - every batch
embedded with the bundled MiniLM, then inserted, as ``factdebate index`` does - so
``passages_per_s_with_embedding`` there is measured (passages / (embedding + build)). MiniLM's
cost per passage on this machine (mean of the two runs) gives the figure at the other sizes,
stored as ``passages_per_s_with_embedding_derived`` = n / (n x cost + build): embedding 1M
passages here takes about 14 hours, so it is derived, and labelled so. The demo build -
``factdebate index``'s own :func:`build_indexes` of the 264-passage demo corpus into Lite and into
a server - gives the ratio docs/deployment.md states (budget: the server within 2x of Lite).

Synthetic passages: ``s<n>`` ids, titles and ~300-character texts of words drawn with a fixed
seed; vectors: normalised Gaussian draws around 64 cluster centres (a clustered distribution as
real embeddings are; uniform random vectors make HNSW look worse than it is).

:func:`index_markdown` renders a result (a table of size x target, the budgets, the embedding
cost, the machine's load) for BENCHMARKS.md and the documentation's benchmarks page.
"""

from __future__ import annotations

import contextlib
import os
import queue as queue_module
import random
import resource
import shutil
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from factdebate.core.errors import BackendUnavailableError
from factdebate.evaluation.bench_budgets import budget, overall
from factdebate.tools import DEMO_CORPUS_DIR

BATCH = 256
DIM = 384
QUERIES = 200
K = 5
WORDS = ("river city tower mountain capital science prize war empire island language music art "
         "novel painter king queen bridge museum desert forest ocean planet engine ship").split()
MEMORY_LIMIT_MB = 18 * 1024
"""A target whose data-holding process passes this RSS is stopped (and at most 75% of RAM)."""
MIN_AVAILABLE_MB = 1024
"""A target is stopped when the machine's ``MemAvailable`` falls below this (others share it)."""
TIMEOUT_S = 3 * 3600
"""A target running longer than this is stopped."""
TARGET_PROCESS = "bench-index-target"
"""Name of a target's process (``multiprocessing``)."""
STAGES = ("create_s", "insert_s", "flush_s", "index_s", "load_s")
BUILD_STAGES = STAGES[1:]
"""The stages ``build_s`` sums (creating the empty collection is timed apart)."""
DEMO_RATIO_BUDGET = 2.0
"""Demo build (264 passages) into a server: at most this many times Lite's."""
SERVER_FASTER_FROM = 100_000
"""From this size on, the server builds at least as many passages/s as Lite."""
SEARCH_P50_BUDGET_MS = 50.0
"""Search p50 (one client, k=5, ef=128) of both targets at every size (measured: <= 28 ms at 1M
on the shared 2-core machine)."""
SEARCH_P99_BUDGET_MS = 127.0
"""Search p99 of both targets at every size: Milvus' published p99 at 1M (:data:`PUBLISHED`)."""
PUBLISHED = {
    "source": "https://milvus.io/docs/v2.2.x/benchmark.md",
    "setup": "Milvus 2.2.0 standalone, 12 cores, 16 GiB; 1M SIFT vectors (128-d), HNSW M=8 "
             "efConstruction=200; nq=1, top-1, ef=64, 500 concurrent searches",
    "search_p50_ms": 79, "search_p99_ms": 127, "qps": 7522,
}
"""Milvus' own published search figures at 1M vectors (the budget's reference point)."""


# --- data -----------------------------------------------------------------------------------------

def synthetic_passages(n: int, seed: int = 13) -> Iterator[dict[str, str]]:
    """``n`` passages (``id``, ``title``, ``text``, ``url``) drawn with a fixed seed."""
    rng = random.Random(seed)
    for i in range(n):
        words = rng.choices(WORDS, k=48)
        yield {"id": f"s{i}", "title": f"{words[0].title()} {i}", "text": " ".join(words) + ".",
               "url": ""}


def vector_batches(n: int, seed: int = 13, batch: int = BATCH) -> Iterator[Any]:
    """``n`` unit vectors around 64 cluster centres (float32), ``batch`` rows at a time."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((64, DIM)).astype("float32")
    for start in range(0, n, batch):
        rows = min(batch, n - start)
        vectors = (centres[rng.integers(0, 64, rows)]
                   + 0.6 * rng.standard_normal((rows, DIM)).astype("float32"))
        yield vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def passage_batches(n: int, seed: int = 13, batch: int = BATCH) -> Iterator[list[dict[str, str]]]:
    """:func:`synthetic_passages` in lists of ``batch``."""
    rows: list[dict[str, str]] = []
    for passage in synthetic_passages(n, seed):
        rows.append(passage)
        if len(rows) == batch:
            yield rows
            rows = []
    if rows:
        yield rows


# --- memory and load ------------------------------------------------------------------------------

def _status_mb(pid: int, field: str) -> float:
    """``VmRSS``/``VmHWM`` of ``pid`` in MiB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def _own_peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _alive(pid: int | None) -> bool:
    """``pid`` runs (not gone, not a zombie)."""
    if not pid:
        return False
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return "Z" not in line.split()[1]
    except OSError:
        return False
    return True


def _available_mb() -> float:
    """The machine's ``MemAvailable`` (MiB)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("inf")


def default_memory_limit_mb() -> int:
    """:data:`MEMORY_LIMIT_MB`, at most 75% of this machine's memory."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    except (ValueError, OSError, AttributeError):
        return MEMORY_LIMIT_MB
    return int(min(MEMORY_LIMIT_MB, 0.75 * total))


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- one target (runs in a process of its own) ----------------------------------------------------

Progress = Callable[[str, int, int], None]


def _wait_indexed(client: Any, name: str, rows: int, progress: Progress) -> None:
    """Until the server reports every row of ``name`` indexed (Lite: returns at once)."""
    while True:
        info = client.describe_index(name, "vector")
        if "indexed_rows" not in info:
            return
        indexed = int(info.get("indexed_rows", 0))
        progress("index", indexed, rows)
        if indexed >= rows:
            return
        time.sleep(0.5)


def _background(client: Any, uri: str, name: str) -> dict[str, int]:
    """A server's work still under way: rows waiting for an index (the segments its compaction
    merges are indexed again) and the segments loaded; ``{}`` for Lite (no such work)."""
    from factdebate.tools.milvus_rag import is_local_uri

    if is_local_uri(uri):
        return {}
    info = client.describe_index(name, "vector")
    state = {"pending_index_rows": int(info.get("pending_index_rows", 0))}
    with contextlib.suppress(Exception):  # a server without the call
        state["segments_loaded"] = len(client.list_loaded_segments(name))
    return state


def build_and_search(uri: str, name: str, n: int, progress: Progress, *, seed: int = 13,
                     embedding: str | None = None) -> dict[str, Any]:
    """Insert ``n`` synthetic passages into a new collection at ``uri``, timed by stage, then time
    the searches. With ``embedding`` (a model spec), each batch is embedded by that model before
    it is inserted (``embed_s`` is the embedding's share; no searches)."""
    import numpy as np

    from factdebate.tools import milvus_rag
    from factdebate.tools.embeddings import get_embeddings

    embedder = get_embeddings(embedding) if embedding else None
    base_rss = _status_mb(os.getpid(), "VmRSS")
    client = milvus_rag.connect(uri, create=True)
    embed_s, done, latencies = 0.0, 0, []
    try:
        t0 = time.perf_counter()
        milvus_rag.create_collection(client, name, DIM)
        client.release_collection(name)  # loaded at creation; load after the build, as retrievers do
        t1 = time.perf_counter()
        stage = "embed + insert" if embedder else "insert"
        progress(stage, 0, n)
        vectors = vector_batches(n, seed) if embedder is None else None
        for batch in passage_batches(n, seed):
            if embedder is not None:
                start = time.perf_counter()
                rows = embedder.embed_documents([f"{p['title']}\n{p['text']}" for p in batch])
                embed_s += time.perf_counter() - start
            else:
                rows = next(vectors).tolist()
            client.insert(name, [milvus_rag.milvus_row(p, v)
                                 for p, v in zip(batch, rows, strict=True)])
            done += len(batch)
            progress(stage, done, n)
        t2 = time.perf_counter()
        progress("flush", 0, n)
        client.flush(name)
        t3 = time.perf_counter()
        _wait_indexed(client, name, n, progress)
        t4 = time.perf_counter()
        progress("load", 0, n)
        client.load_collection(name)
        t5 = time.perf_counter()
        if embedder is None:
            figures_at_search = {"at_search_start": _background(client, uri, name)}
            progress("search", 0, QUERIES)
            queries = np.concatenate(list(vector_batches(QUERIES, seed + 1)))
            params = {"metric_type": milvus_rag.METRIC,
                      "params": milvus_rag.search_params("HNSW", K)}
            client.search(name, data=[queries[0].tolist()], limit=K, search_params=params)  # warm
            for i, q in enumerate(queries):
                start = time.perf_counter()
                hits = client.search(name, data=[q.tolist()], limit=K, output_fields=["title"],
                                     search_params=params)
                latencies.append((time.perf_counter() - start) * 1000)
                if len(hits[0]) != K:
                    raise RuntimeError(f"a search returned {len(hits[0])} hits, not {K}")
                progress("search", i + 1, QUERIES)
            figures_at_search["at_search_end"] = _background(client, uri, name)
        client.drop_collection(name)
    finally:
        milvus_rag.disconnect(client, uri)
    insert_s = t2 - t1 - embed_s
    build = insert_s + (t3 - t2) + (t4 - t3) + (t5 - t4)
    figures: dict[str, Any] = {
        "passages": n, "create_s": round(t1 - t0, 2), "insert_s": round(insert_s, 2),
        "flush_s": round(t3 - t2, 2), "index_s": round(t4 - t3, 2), "load_s": round(t5 - t4, 2),
        "build_s": round(build, 2), "passages_per_s": round(n / build),
        "client_base_rss_mb": base_rss}
    if embedder is not None:
        figures["embed_s"] = round(embed_s, 2)
        figures["passages_per_s_with_embedding"] = round(n / (embed_s + build), 1)
    else:
        figures["search_p50_ms"] = round(statistics.median(latencies), 2)
        figures["search_p99_ms"] = round(float(np.percentile(latencies, 99)), 2)
        figures.update({k: v for k, v in figures_at_search.items() if v})
    return figures


def _target_main(out: Any, uri: str, name: str, n: int, seed: int, embedding: str | None) -> None:
    """The body of a target's process: its figures (or its error) onto ``out``."""
    try:
        figures = build_and_search(uri, name, n, lambda *a: out.put(("progress", *a)),
                                   seed=seed, embedding=embedding)
        figures["process_peak_rss_mb"] = _own_peak_rss_mb()
        out.put(("result", figures))
    except BaseException as exc:  # reported to the bench as this target's failure
        out.put(("error", f"{type(exc).__name__}: {_first_line(exc)}"))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [""])[0][:300]


class Limits:
    """When the bench stops a target: memory of its data-holding process, the machine's available
    memory, wall time."""

    def __init__(self, memory_mb: int | None = None, timeout_s: float = TIMEOUT_S,
                 min_available_mb: float = MIN_AVAILABLE_MB) -> None:
        self.memory_mb = memory_mb or default_memory_limit_mb()
        self.timeout_s = timeout_s
        self.min_available_mb = min_available_mb

    def as_dict(self) -> dict[str, Any]:
        """The limits as the result records them."""
        return {"memory_limit_mb": self.memory_mb, "timeout_s": self.timeout_s,
                "min_available_mb": self.min_available_mb}


def run_target(uri: str, name: str, n: int, *, seed: int = 13, embedding: str | None = None,
               server: Any = None, limits: Limits | None = None,
               on_progress: Progress | None = None) -> dict[str, Any]:
    """Build and search ``n`` passages at ``uri`` in a process of its own, watched: the figures of
    :func:`build_and_search` plus ``peak_rss_mb`` (of the data-holding process: that process for
    Lite, ``server`` for a server) and ``load_1m`` (load average at start and end), or
    ``{"passages": n, "failed": "<why, at which stage>", ...}``."""
    import multiprocessing

    limits = limits or Limits()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_target_main, args=(out, uri, name, n, seed, embedding),
                       name=TARGET_PROCESS, daemon=True)
    load_start = os.getloadavg()[0]
    proc.start()
    deadline = time.monotonic() + limits.timeout_s
    stage, done, rss_seen = "start", 0, 0.0
    result: dict[str, Any] | None = None
    failure = ""
    holder = "the Milvus server" if server is not None else "the Lite process"
    while result is None and not failure:
        messages = []
        with contextlib.suppress(queue_module.Empty):
            messages.append(out.get(timeout=0.5))
            while len(messages) < 10_000:
                messages.append(out.get_nowait())
        for message in messages:
            if message[0] == "progress":
                stage, done = message[1], message[2]
                if on_progress:
                    on_progress(*message[1:])
            elif message[0] == "result":
                result = message[1]
            else:
                failure = f"{message[1]} (during {stage})"
        if result is not None or failure:
            break
        pid = server.pid if server is not None else proc.pid
        rss = _status_mb(pid, "VmRSS") if pid else 0.0
        rss_seen = max(rss_seen, rss)
        if server is not None and not _alive(server.pid):
            failure = f"the Milvus server exited during {stage} ({done:,} of {n:,})"
        elif not proc.is_alive():
            code = proc.exitcode or 0
            cause = (f"killed by {signal.Signals(-code).name}" if code < 0
                     else f"exited with code {code}")
            failure = (f"the target's process {cause} during {stage} ({done:,} of {n:,}; "
                       f"{holder} at {rss_seen:,.0f} MB; the kernel's OOM killer sends SIGKILL)")
        elif rss > limits.memory_mb:
            failure = (f"stopped: {holder} passed the {limits.memory_mb:,} MB memory limit "
                       f"({rss:,.0f} MB) during {stage} ({done:,} of {n:,})")
        elif _available_mb() < limits.min_available_mb:
            failure = (f"stopped: the machine's available memory fell below "
                       f"{limits.min_available_mb:,} MB during {stage} ({done:,} of {n:,}; "
                       f"{holder} at {rss:,.0f} MB)")
        elif time.monotonic() > deadline:
            failure = (f"stopped: timeout ({limits.timeout_s:,.0f} s) during {stage} "
                       f"({done:,} of {n:,})")
    if server is not None:
        peak = _status_mb(server.pid, "VmHWM") if server.pid else rss_seen
    else:
        peak = (result or {}).get("process_peak_rss_mb", 0.0) or max(
            rss_seen, _status_mb(proc.pid, "VmHWM") if proc.pid else 0.0)
    proc.join(timeout=30 if result is not None else 0.1)
    if proc.is_alive():
        proc.kill()
        proc.join(timeout=30)
    out.close()
    figures = result if result is not None else {"passages": n, "failed": failure}
    figures["peak_rss_mb"] = peak
    if server is not None and result is not None:
        figures["client_peak_rss_mb"] = figures.get("process_peak_rss_mb")
    figures.pop("process_peak_rss_mb", None)
    figures["load_1m"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
    return figures


# --- the bench ------------------------------------------------------------------------------------

def _slower_because(lite: dict[str, Any], server: dict[str, Any]) -> str:
    """Where the server spent more time than Lite: the build stages, largest first, and the
    searches with the server's background work at that moment."""
    if "failed" in server:
        return "server failed"
    if "failed" in lite:
        return "not slower (Lite failed)"
    parts = []
    if server["build_s"] > lite["build_s"]:
        extra = sorted(((server[s] - lite[s], s) for s in BUILD_STAGES), reverse=True)
        parts.append("build: " + ", ".join(
            f"{s.removesuffix('_s')} +{d:.1f}s" for d, s in extra if d > 0.05))
    d50 = server["search_p50_ms"] - lite["search_p50_ms"]
    d99 = server["search_p99_ms"] - lite["search_p99_ms"]
    if d50 > 0 or d99 > 0:
        search = f"search: p50 {d50:+.1f} ms, p99 {d99:+.1f} ms"
        pending = max(server.get(k, {}).get("pending_index_rows", 0)
                      for k in ("at_search_start", "at_search_end"))
        if pending:
            segments = server.get("at_search_start", {}).get("segments_loaded", "?")
            search += (f" - searched while the server compacted and re-indexed ({pending:,} rows "
                       f"pending an index, {segments} segments loaded)")
        parts.append(search)
    return "; ".join(parts) or "not slower"


@contextlib.contextmanager
def _server(work_dir: Path, label: str) -> Iterator[tuple[Any, str]]:
    """A fresh Milvus standalone for ``label`` (its data removed after), or ``(None, why not)``."""
    from factdebate.evaluation.milvus_standalone import MilvusStandalone

    server = MilvusStandalone(work_dir / f"milvus-server-{label}", cache_dir=work_dir / "milvus-cache")
    try:
        server.start()
    except Exception as exc:  # recorded as the server target's failure
        server.remove()
        yield None, f"the Milvus server did not start: {_first_line(exc)}"
        return
    try:
        yield server, ""
    finally:
        server.remove()


def index_budgets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each budget (``evaluation/bench_budgets.py``): what it asks, what was measured, whether it
    was met (None: not measured, so not judged)."""
    budgets = []
    ratio = result.get("demo_build_ratio")
    demo = budget("demo_build_ratio", f"demo build (264 passages, factdebate index) into the "
                  f"server <= {DEMO_RATIO_BUDGET:g}x Lite", ratio, "<=", DEMO_RATIO_BUDGET,
                  unit="x")
    budgets.append({**demo, "measured": f"{ratio}x" if ratio is not None else "not measured",
                    "value": ratio})
    big = {int(s): per for s, per in result.get("sizes", {}).items()
           if int(s) >= SERVER_FASTER_FROM}
    shown, met = [], []
    for size, per in sorted(big.items()):
        lite, server = per["lite"], per["server"]
        if "failed" in server:
            shown.append(f"{size:,}: server failed")
            met.append(False)
        elif "failed" in lite:
            shown.append(f"{size:,}: server {server['passages_per_s']}/s, Lite failed")
            met.append(True)
        else:
            shown.append(f"{size:,}: server {server['passages_per_s']}/s, "
                         f"Lite {lite['passages_per_s']}/s")
            met.append(server["passages_per_s"] >= lite["passages_per_s"])
    budgets.append(budget(
        "server_build_vs_lite", f"server build throughput (embedding excluded) >= Lite's at "
        f"every size >= {SERVER_FASTER_FROM:,}", "; ".join(shown) or "not measured",
        met=all(met) if met else None,
        why_not_judged="" if met else f"no size >= {SERVER_FASTER_FROM:,} was run (--sizes)"))
    for key, limit, why in (("search_p50_ms", SEARCH_P50_BUDGET_MS, ""),
                            ("search_p99_ms", SEARCH_P99_BUDGET_MS,
                             "; Milvus' published p99 at 1M vectors")):
        seen = [(int(s), t, per[t][key]) for s, per in result.get("sizes", {}).items()
                for t in ("lite", "server") if key in per.get(t, {})]
        worst = max(seen, key=lambda x: x[2], default=None)
        entry = budget(key, (f"search {key.split('_')[1]} <= {limit:g} ms (one client, k={K}{why})"
                             " in every target that built, at every size"),
                       worst[2] if worst else None, "<=", limit, unit="ms",
                       why_not_judged="" if worst else "no target built")
        budgets.append({**entry, "value": entry["measured"],
                        "measured": f"worst {worst[2]} ms ({worst[1]}, {worst[0]:,})" if worst
                        else "not measured"})
    return budgets


def run_index_bench(work_dir: Path, *, sizes: tuple[int, ...] = (10_000, 100_000),
                    seed: int = 13, progress: Any = None, limits: Limits | None = None,
                    embedding: str = "minilm") -> dict[str, Any]:
    """Build and search every size into Milvus Lite and a Milvus server; see the module docstring."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from factdebate.evaluation.milvus_standalone import milvus_unavailable
    from factdebate.tools.embeddings import get_embeddings
    from factdebate.tools.indexing import build_indexes

    reason = milvus_unavailable()
    if reason:
        raise BackendUnavailableError(f"bench index needs a Milvus server: {reason}",
                                      "run it on Linux x86-64 after make install")
    limits = limits or Limits()
    bar = progress or Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TimeElapsedColumn(), TimeRemainingColumn(),
                               console=Console(stderr=True), transient=True)
    results: dict[str, Any] = {
        "sizes": {}, "server": "Milvus standalone 2.3.5 (PyPI milvus), loopback, a fresh server "
        "per size", "lite": "Milvus Lite 3.2.2 (pure Python, in the process that opens it)",
        "limits": limits.as_dict(), "load_avg": {"start": _load()},
        "mem_available_mb_start": round(_available_mb()), "published": PUBLISHED}
    smallest = min(sizes)

    def one(target: str, size: int, uri: str, server: Any = None,
            model: str | None = None) -> dict[str, Any]:
        what = f"{target} {size:,}" + (" with embedding" if model else "")
        task = bar.add_task(what, total=size)

        def advance(stage: str, done: int, total: int) -> None:
            bar.update(task, description=f"{what}: {stage}", completed=done, total=total)

        figures = run_target(uri, f"bench_{size}", size, seed=seed, embedding=model,
                             server=server, limits=limits, on_progress=advance)
        bar.remove_task(task)
        rate = figures.get("passages_per_s_with_embedding", figures.get("passages_per_s"))
        shown = figures.get("failed") or (
            f"{rate} passages/s, peak RSS {figures['peak_rss_mb']:,.0f} MB"
            + (f", search p99 {figures['search_p99_ms']} ms" if "search_p99_ms" in figures else ""))
        bar.console.print(f"{what}: {shown}", highlight=False)
        return figures

    def lite_uri(label: str) -> str:
        folder = work_dir / f"lite-{label}"
        shutil.rmtree(folder, ignore_errors=True)
        return str(folder / "milvus.db")

    with bar:
        for size in sizes:
            per: dict[str, Any] = {"lite": one("lite", size, lite_uri(str(size)))}
            if size == smallest:
                per["lite"]["with_embedding"] = one("lite", size, lite_uri(f"{size}-embed"),
                                                    model=embedding)
            shutil.rmtree(work_dir / f"lite-{size}", ignore_errors=True)
            shutil.rmtree(work_dir / f"lite-{size}-embed", ignore_errors=True)
            with _server(work_dir, str(size)) as (server, why_not):
                if server is None:
                    per["server"] = {"passages": size, "failed": why_not}
                else:
                    per["server"] = one("server", size, server.uri, server)
                    if size == smallest:
                        per["server"]["with_embedding"] = one("server", size, server.uri, server,
                                                              model=embedding)
            per["server_slower_because"] = _slower_because(per["lite"], per["server"])
            results["sizes"][str(size)] = per
        results["embedding"] = _embedding_figures(results["sizes"][str(smallest)], embedding)
        _derive_with_embedding(results)
        task = bar.add_task("demo build (factdebate index), Lite and server", total=2)
        demo = DEMO_CORPUS_DIR / "passages.jsonl"
        timings: dict[str, Any] = {}
        get_embeddings(embedding).embed_query("warm-up")  # model load outside both timings
        with _server(work_dir, "demo") as (server, why_not):
            for target, uri in (("lite", None), ("server", server.uri if server else None)):
                if target == "server" and server is None:
                    timings["server"] = why_not
                    continue
                try:
                    manifest = build_indexes(demo, work_dir / f"demo-{target}", milvus_uri=uri)
                    timings[target] = manifest["build_seconds"]
                except Exception as exc:  # recorded; the sizes' figures are kept
                    timings[target] = f"failed: {type(exc).__name__}: {_first_line(exc)}"
                bar.advance(task, 1)
        results["demo_build_s"] = timings
        if all(isinstance(v, int | float) for v in timings.values()):
            results["demo_build_ratio"] = round(timings["server"] / timings["lite"], 2)
    results["load_avg"]["end"] = _load()
    results["cpus"] = os.cpu_count()
    results["budgets"] = index_budgets(results)
    results["budget"] = "; ".join(b["budget"] for b in results["budgets"])
    results["budget_met"] = overall(results["budgets"])
    return results


def _embedding_figures(per: dict[str, Any], model: str) -> dict[str, Any]:
    """MiniLM's measured cost per passage, from the smallest size's embedding runs."""
    runs = {t: per[t]["with_embedding"] for t in ("lite", "server")
            if "embed_s" in per[t].get("with_embedding", {})}
    if not runs:
        return {"model": model, "failed": "no embedding run completed"}
    n = next(iter(runs.values()))["passages"]
    ms = statistics.mean(r["embed_s"] for r in runs.values()) * 1000 / n
    return {"model": model, "passages": n, "embed_s": {t: r["embed_s"] for t, r in runs.items()},
            "ms_per_passage": round(ms, 2), "passages_per_s": round(1000 / ms, 1)}


def _derive_with_embedding(results: dict[str, Any]) -> None:
    """Embedding included at the sizes not embedded: n / (n x measured cost + measured build)."""
    ms = results["embedding"].get("ms_per_passage")
    smallest = results["embedding"].get("passages")
    for size, per in results["sizes"].items():
        for target in ("lite", "server"):
            figures = per[target]
            measured = figures.get("with_embedding", {})
            if "passages_per_s_with_embedding" in measured:
                figures["passages_per_s_with_embedding"] = measured["passages_per_s_with_embedding"]
            elif ms and "build_s" in figures and int(size) != smallest:
                n = figures["passages"]
                figures["passages_per_s_with_embedding_derived"] = round(
                    n / (n * ms / 1000 + figures["build_s"]), 1)


# --- markdown -------------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    return "-" if value is None else str(value).replace("|", "\\|")


def _with_embedding(figures: dict[str, Any]) -> str:
    if "passages_per_s_with_embedding" in figures:
        return f"{figures['passages_per_s_with_embedding']}"
    if "passages_per_s_with_embedding_derived" in figures:
        return f"{figures['passages_per_s_with_embedding_derived']} (derived)"
    failed = figures.get("with_embedding", {}).get("failed")
    return f"failed: {failed}" if failed else "-"


def index_markdown(result: dict[str, Any]) -> list[str]:
    """The figures of a ``bench index`` result as Markdown lines: a table of size x target, the
    budgets, the embedding cost, the machine's load, the demo build."""
    head = ["passages", "target", "passages/s (embedding excluded)", "passages/s with embedding",
            "insert s", "flush s", "index s", "load s", "search p50 ms", "search p99 ms",
            "peak RSS MB", "server slower because"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for size, per in result.get("sizes", {}).items():
        for target in ("lite", "server"):
            f = per.get(target, {})
            why = per.get("server_slower_because") if target == "server" else ""
            if "failed" in f:
                cells = [f"**failed**: {f['failed']}", "-", "-", "-", "-", "-", "-", "-",
                         _cell(f.get("peak_rss_mb") or None)]
            else:
                cells = [f.get("passages_per_s"), _with_embedding(f), f.get("insert_s"),
                         f.get("flush_s"), f.get("index_s"), f.get("load_s"),
                         f.get("search_p50_ms"), f.get("search_p99_ms"), f.get("peak_rss_mb")]
            row = [f"{int(size):,}", target, *(_cell(c) for c in cells), _cell(why)]
            lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    budgets = result.get("budgets") or []
    if budgets:
        lines += ["Budgets:", ""]
        for b in budgets:
            met = {True: "met", False: "**not met**"}.get(
                b.get("met"), f"not judged: {b.get('why_not_judged') or 'not measured'}")
            lines.append(f"- {b['budget']}: {b.get('measured')} - {met}")
        lines.append("")
    emb = result.get("embedding") or {}
    if "ms_per_passage" in emb:
        runs = ", ".join(f"{t} {s} s" for t, s in emb.get("embed_s", {}).items())
        lines += [f"Embedding included: {emb['model']} embeds {emb['passages_per_s']} passages/s "
                  f"here ({emb['ms_per_passage']} ms per passage; {emb['passages']:,} passages "
                  f"embedded inside each target's build: {runs}). At that size the figure is "
                  "measured (passages / (embedding + build)); at the other sizes it is "
                  "*derived*: n / (n x that cost + the build measured at n).", ""]
    elif emb:
        lines += [f"Embedding included: {emb.get('failed', 'not measured')}", ""]
    lines += ["Stages: insert - 256-passage batches as `factdebate index` sends them; flush - seal "
              "the segments; index - until the server reports every row indexed (Lite builds its "
              "HNSW graphs at load); load - load for search. Search: 200 queries one at a time, "
              f"k={K}, ef=128. Peak RSS: the process holding the data (Lite: its own process, "
              "client included; the server: its process). Each target runs in a process of its "
              "own, stopped and recorded as failed past its limits "
              f"({_limits_text(result.get('limits', {}))}).", ""]
    load = result.get("load_avg") or {}
    if load:
        lines += [f"Machine load (1/5/15-min load average; {result.get('cpus', '?')} cores shared "
                  f"with other work): {load.get('start')} at the start, {load.get('end')} at the "
                  "end; each target's 1-minute load at its start and end is `load_1m` in the JSON.",
                  ""]
    pub = result.get("published")
    if pub:
        lines += [f"Milvus' published figures ({pub['source']}): {pub['setup']}: search p50 "
                  f"{pub['search_p50_ms']} ms, p99 {pub['search_p99_ms']} ms at {pub['qps']:,} "
                  "QPS - latency under load from many clients; the figures above are one "
                  "client's searches, 384-d, ef=128.", ""]
    demo = result.get("demo_build_s")
    if demo:
        lines.append("Demo build (264 passages, `factdebate index`): "
                     + ", ".join(f"{t} {v} s" if isinstance(v, int | float) else f"{t} {v}"
                                 for t, v in demo.items())
                     + (f"; server / Lite = {result['demo_build_ratio']}"
                        if "demo_build_ratio" in result else ""))
        lines.append("")
    lines.append(f"Servers: {result.get('server', '-')}; {result.get('lite', '-')}.")
    return lines


def _limits_text(limits: dict[str, Any]) -> str:
    if not limits:
        return "not recorded"
    return (f"RSS {limits.get('memory_limit_mb', 0):,} MB, machine's available memory "
            f"{limits.get('min_available_mb', 0):,} MB, {limits.get('timeout_s', 0):,.0f} s")
