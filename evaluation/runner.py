"""``factdebate eval``: one framework on one dataset, concurrent, checkpointed, resumable.

Per run folder ``OUT``: ``run.json`` (resolved config, sampled item ids, dataset version and file
hash, the index searched - ``evaluation/index_identity.py`` chooses and records it - prompt
version, model specs, git SHA), ``checkpoints.sqlite`` (one LangGraph thread per item,
``<run id>:<item id>``), ``results.jsonl`` (one row per finished item, see ``evaluation/results.py``),
then ``summary.json``, ``report.md`` and plots (``evaluation/reports.py``).

Items run under an ``asyncio.Semaphore(concurrency)``. An item's failure becomes an error row and
the run goes on; errors whose class or message says rate limit / 429 are retried with exponential
back-off first (the retry resumes the item's thread from its checkpoint). An item whose tool calls
failed finishes its debate and becomes an error row too (``ToolFault``, ``evaluation/results.py``)
unless ``--tool-faults score`` keeps it scored: a debate that went on without evidence because a
retriever was down (a Milvus server restarting) measures the outage, not the framework.
``--resume`` re-reads ``run.json`` (same items, same run id), skips items that already have a row
and resumes the others' threads, so completed graph steps are not re-run. Error rows are outcomes
of the run and stay on a plain ``--resume`` (a deterministic failure would otherwise be paid for
again on every resume); ``--resume --retry-errors`` reruns them: a failed item's thread continues
from its checkpoint, a ``ToolFault`` item's finished thread is deleted first (read back, it would
give the same faulted debate) and the item starts over. Rows that are not the run's (an item
outside its sample, an earlier row of a repeated item) are set aside with a warning first
(``results.set_aside_strays``): the progress line counts what ``summary.json`` counts. Every
framework is driven alike through the one output shape (``label`` or ``answers``).

The folder is this run's alone while it runs (``OUT/.lock``); a resume must match the recorded run
(a larger ``--limit`` extends it); damaged files are named and ``--repair`` recovers them; a full
disk or a damaged checkpoint database stops the run instead of becoming error rows
(``evaluation/run_folder.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from factdebate.core.context import Context, masked_context
from factdebate.core.errors import ConfigError, InputError
from factdebate.core.retrievers import reads_local_index
from factdebate.evaluation.checkpointers import checkpointer_kind, open_checkpointer
from factdebate.evaluation.datasets import dataset_spec, file_sha256, load_items, stratified_sample
from factdebate.evaluation.evidence_metrics import SCORER_RULES
from factdebate.evaluation.executors import LocalExecutor, ServerExecutor
from factdebate.evaluation.formats import Item
from factdebate.evaluation.index_identity import resolve_run_index, run_index
from factdebate.evaluation.items import (  # noqa: F401 - RunSpec, is_rate_limit re-exported
    ItemRunner,
    RunSpec,
    check_models,
    is_rate_limit,
    item_context,
)
from factdebate.evaluation.judging import EXTRA_METRICS
from factdebate.evaluation.langsmith_experiment import LangSmithExperiment
from factdebate.evaluation.memory_store import memory_record, open_memory_store, sequential
from factdebate.evaluation.metrics import correct
from factdebate.evaluation.progress import EvalProgress
from factdebate.evaluation.results import (
    RESULTS,
    TOOL_FAULT,
    TOOL_FAULT_MODES,
    ResultsWriter,
    base_row,
    drop_error_rows,
    error_row,
    read_results,
    repair_results,
    set_aside_strays,
)
from factdebate.evaluation.run_folder import (
    RUN_FILE,
    RunLock,
    check_resume,
    make_out_folder,
    read_run_record,
    remove_stale_temps,
    write_json_atomic,
)

if TYPE_CHECKING:
    from factdebate.evaluation.workers import WorkerPool


def build_run_context(spec: RunSpec) -> Context:
    """The framework's Context from ``--model`` and ``--set`` (the CLI's rules)."""
    from factdebate.graphs.registry import context_class
    from factdebate.run.setup import build_context

    return build_context({"debater_model": spec.model}, spec.sets, context_class(spec.framework))


def _run_record(spec: RunSpec, ctx: Context, items: list[Item], run_id: str,
                served: dict[str, Any] | None = None) -> dict[str, Any]:
    from factdebate.graphs.registry import FRAMEWORKS
    from factdebate.prompts import load_prompts
    from factdebate.run.claims import git_sha

    ds, path = dataset_spec(spec.dataset, Path(spec.data_dir) if spec.data_dir else None)
    sha = file_sha256(path)
    return {
        "run_id": run_id, "framework": spec.framework, "dataset": ds.name,
        "dataset_version": ds.version, "task": ds.task, "data_file": str(path),
        "data_sha256": sha, "data_files": [_data_file(path, sha, spec.data_dir)],
        "limit": spec.limit, "seed": spec.seed,
        "concurrency": spec.concurrency, "item_ids": [it.id for it in items],
        "context": masked_context(ctx), "prompt_version": load_prompts(ctx.prompt_set).version,
        "paper": FRAMEWORKS.entry(spec.framework).meta.get("paper", ""),
        "models": ctx.model_specs(),
        "metrics": spec.metrics, "metric_model":
            spec.metric_model or ctx.model_specs().get("judge", ctx.debater_model),
        "memory": memory_record(ctx, checkpointer=spec.checkpointer, server=spec.server,
                                run_id=run_id),
        "server": spec.server, "langsmith": spec.langsmith, "git_sha": git_sha(),
        "index": _named(run_index(spec.framework, ctx, spec.server, served), spec.index),
        "scoring": {"feverous_rule": spec.feverous_rule}, "tool_faults": spec.tool_faults,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _data_file(path: Path, sha: str, data_dir: str | Path | None) -> dict[str, Any]:
    """``run.json``'s record of the dataset file read: path, SHA-256 and, when the data folder's
    ``fetched.json`` vouches for the same bytes, the URL ``factdebate data fetch`` took it from
    (``evaluation/data_catalog.data_file_record``); an ad-hoc file outside a data folder has none."""
    from factdebate.evaluation.data_catalog import data_file_record
    from factdebate.evaluation.datasets import resolve_data_dir

    try:
        folder: Path | None = resolve_data_dir(data_dir)
    except ConfigError:  # a file path given as --dataset, with no data folder at all
        folder = None
    return data_file_record(path, sha, folder)


def _named(identity: dict[str, Any] | None, name: str | None) -> dict[str, Any] | None:
    """``run.json``'s ``index`` with the name the run found it by (``eval --index``, the data
    folder's ``indexes.json`` or the dataset's entry), when it has one."""
    if identity is None or not name:
        return identity
    return {**identity, "name": name}


def _prepare(spec: RunSpec, ctx: Context,
             served: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[Item]]:
    """``run.json`` (new, the one a resumed run started with, or it extended) and the run's items;
    ``served``: the index of a ``--server`` run, as the server named it.

    Called while holding the folder's lock; see ``evaluation/run_folder.py`` for what a resume
    must match and how ``--repair`` rebuilds a damaged ``run.json``.
    """
    run_file = spec.out / RUN_FILE
    all_items = load_items(spec.dataset, spec.data_dir)
    sample = stratified_sample(all_items, spec.limit, spec.seed)
    has_rows = (spec.out / RESULTS).exists()
    if (run_file.exists() or has_rows) and not spec.resume:
        raise InputError(f"{spec.out} already holds a run",
                         "pass --resume to continue it, or choose another --out")
    if run_file.exists() or has_rows:
        fresh = _run_record(spec, ctx, sample, run_id="", served=served)
        if not run_file.exists() and not spec.repair:
            raise InputError(f"{spec.out} has results but no run.json",
                             "rerun with --resume --repair and the run's original flags to "
                             "rebuild it, or choose another --out")
        try:
            record = read_run_record(spec.out) if run_file.exists() else _rebuilt_record(spec, fresh)
        except InputError:
            if not spec.repair:
                raise
            record = _rebuilt_record(spec, fresh)
        continued = check_resume(record, fresh, spec.out)
        if continued is not record and sequential(record):
            # memory order: the recorded stream first, a larger --limit's new items after it
            old = record["item_ids"]
            continued["item_ids"] = old + [i for i in continued["item_ids"] if i not in set(old)]
        if continued is not record or not run_file.exists() or record.get("rebuilt"):
            write_json_atomic(run_file, continued)
        by_id = {it.id: it for it in all_items}
        return continued, [by_id[i] for i in continued["item_ids"]]
    run_id = f"{spec.framework}-{spec.dataset}-{uuid.uuid4().hex[:8]}".replace("/", "_")
    run_id = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_id)
    record = _run_record(spec, ctx, sample, run_id, served)
    write_json_atomic(run_file, record)
    return record, sample


def _rebuilt_record(spec: RunSpec, fresh: dict[str, Any]) -> dict[str, Any]:
    """``--repair`` of a damaged/missing run.json: the current flags' record, the rows' run id.

    Refused unless every finished row belongs to one run and to the items these flags sample.
    """
    rows = read_results(spec.out / RESULTS) if spec.repair else []
    run_ids = {r.get("run_id") for r in rows}
    strangers = [r["item_id"] for r in rows if r["item_id"] not in set(fresh["item_ids"])]
    if len(run_ids) > 1 or strangers:
        raise InputError(f"cannot rebuild {spec.out / RUN_FILE}: the rows in {RESULTS} are not "
                         "from one run with these flags", "choose another --out")
    run_id = run_ids.pop() if run_ids else (
        f"{spec.framework}-{uuid.uuid4().hex[:8]}".replace("/", "_"))
    rebuilt = dict(fresh, run_id=run_id, rebuilt=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    if (fresh.get("memory") or {}).get("scope") == "":  # the memory stream is the run's
        rebuilt["memory"] = dict(fresh["memory"], scope=run_id)
    return rebuilt


async def run_eval(spec: RunSpec, console: Console | None = None,
                   on_row: Callable[[dict[str, Any]], None] | None = None,
                   pool: WorkerPool | None = None) -> Path:
    """Run (or resume) ``spec``; returns the run folder. Reports are written by the caller.

    With ``spec.workers > 1`` items run in worker processes: ``pool`` if given (kept running for
    the caller, e.g. a benchmark's several runs), else a pool started and stopped for this run.
    """
    unknown = [m for m in spec.metrics if m not in EXTRA_METRICS]
    if unknown:
        raise ConfigError(f"unknown --metrics {unknown}", f"use {', '.join(EXTRA_METRICS)}")
    if spec.concurrency < 1:
        raise InputError(f"--concurrency {spec.concurrency} must be positive", "use 1 or more")
    if spec.workers < 1:
        raise InputError(f"--workers {spec.workers} must be positive", "use 1 or more")
    if spec.workers > 1 and spec.server:
        raise InputError("--workers runs items in local processes; with --server the server runs "
                         "them", "drop --workers (the server's own workers scale it)")
    ctx = build_run_context(spec)
    checkpointer_kind(spec.checkpointer)  # a bad value fails before anything is written
    if spec.feverous_rule not in SCORER_RULES:
        raise InputError(f"--feverous-rule {spec.feverous_rule!r} is not a rule",
                         f"use {' or '.join(SCORER_RULES)}")
    if spec.tool_faults not in TOOL_FAULT_MODES:
        raise InputError(f"--tool-faults {spec.tool_faults!r} is not a choice",
                         f"use {' or '.join(TOOL_FAULT_MODES)}")
    if spec.index and spec.server:
        raise InputError(f"--index {spec.index} names an index, but with --server the server "
                         "searches its own", "drop --index (the server's operator sets its index)")
    if not spec.server:
        check_models(ctx)  # an unknown model or a missing key fails once, before run.json
        spec, ctx = _named_index(spec, ctx, console)  # an index by name: recorded in run.json
        ctx = _check_index(spec, ctx, console)  # the index it searches: before run.json
    make_out_folder(spec.out)
    with RunLock(spec.out) as lock:
        if lock.taken_over and console is not None:
            console.print(f"{spec.out}: took over the lock of process {lock.taken_over}, which "
                          "is no longer running", highlight=False, soft_wrap=True)
        remove_stale_temps(spec.out)
        return await _run_locked(spec, ctx, console, on_row, pool)


async def _run_locked(spec: RunSpec, ctx: Context, console: Console | None,
                      on_row: Callable[[dict[str, Any]], None] | None,
                      pool: WorkerPool | None) -> Path:
    """``run_eval`` once the folder is this process's alone."""
    if spec.repair and not spec.resume:
        raise InputError("--repair works with --resume", "add --resume")
    results = spec.out / RESULTS
    if spec.repair:
        moved = repair_results(results)
        if moved and console is not None:
            console.print(f"{results}: set aside {moved} unreadable line(s); their items run "
                          "again", highlight=False, soft_wrap=True)
    executor, served = None, None
    if spec.server:  # the server is asked first: its index goes into run.json
        executor, served = await _server(spec, ctx, spec.server)
    record, items = _prepare(spec, ctx, served)
    items, ceiling = _with_gold_in_index(spec, ctx, items, record.get("index"))
    if ceiling and record["index"].get("ceiling") != ceiling:  # why a server run has (no) ceiling
        record = {**record, "index": {**record["index"], "ceiling": ceiling}}
        write_json_atomic(spec.out / RUN_FILE, record)
    if spec.retry_errors and results.exists():
        ours = set(record["item_ids"])
        faulted = [r["item_id"] for r in read_results(results) if r.get("status") == "error"
                   and (r.get("error") or {}).get("type") == TOOL_FAULT and r["item_id"] in ours]
        if faulted:  # threads first: a run killed in between still has their rows to retry
            await _start_over(spec, record, faulted)
        drop_error_rows(results)
    read_results(results)  # damaged lines are named before anything moves
    stray = set_aside_strays(results, record["item_ids"])
    if stray and console is not None:
        console.print(stray, style="yellow", highlight=False, soft_wrap=True, markup=False)
    done = {r["item_id"]: r for r in read_results(results)}
    pending = [it for it in items if it.id not in done]
    experiment = None
    if spec.langsmith:
        experiment = LangSmithExperiment(record["run_id"], record["dataset"],
                                         record["dataset_version"], items, record)
    try:
        if executor is not None:
            await _run_items(spec, ctx, record, executor, experiment, pending, done, console, on_row)
        elif spec.workers > 1 or pool is not None:
            await _run_in_workers(spec, ctx, record, experiment, pending, done, console, on_row,
                                  pool)
        else:
            async with open_checkpointer(spec.checkpointer, spec.out,
                                         repair=spec.repair) as saver, \
                    open_memory_store(record, spec.checkpointer, spec.out) as store:
                executor = LocalExecutor(spec.framework, saver, store)
                await _run_items(spec, ctx, record, executor, experiment, pending, done, console,
                                 on_row)
    finally:
        if experiment:
            experiment.close()
    return spec.out


async def _start_over(spec: RunSpec, record: dict[str, Any], item_ids: list[str]) -> None:
    """Delete the threads of ``item_ids`` (finished debates whose tools failed), so
    ``--retry-errors`` runs them again from the start instead of reading their checkpoints back."""
    threads = [f"{record['run_id']}:{item_id}" for item_id in item_ids]
    if spec.server:
        server = ServerExecutor(spec.server, spec.framework, record["prompt_version"],
                                spec.server_api_key)
        await server.check()
        for thread_id in threads:
            await server.discard(thread_id)
        return
    async with open_checkpointer(spec.checkpointer, spec.out, repair=spec.repair) as saver:
        local = LocalExecutor(spec.framework, saver)
        for thread_id in threads:
            await local.discard(thread_id)


async def _run_in_workers(spec: RunSpec, ctx: Context, record: dict[str, Any],
                          experiment: LangSmithExperiment | None, pending: list[Item],
                          done: dict[str, dict[str, Any]], console: Console | None,
                          on_row: Callable[[dict[str, Any]], None] | None,
                          pool: WorkerPool | None) -> None:
    """``_run_items`` with the items run by worker processes (``evaluation/workers.py``)."""
    from factdebate.evaluation.workers import WorkerPool

    # a Milvus Lite folder opens in one process: this one, which serves it to the workers
    milvus_uri = await asyncio.to_thread(served_milvus_uri, spec.framework, ctx)
    payload: dict[str, Any] = {"spec": spec, "ctx": ctx, "record": record, "milvus_uri": milvus_uri}
    if experiment is not None and experiment.active:  # inactive: LangSmith could not be set up
        payload |= {"langsmith_project": experiment.project,
                    "example_ids": {k: str(v) for k, v in experiment.example_ids.items()}}
    # the checkpoint schema (and SQLite's WAL mode) is set up here once: workers setting up a new
    # database at the same moment fail with "database is locked"
    async with open_checkpointer(spec.checkpointer, spec.out, repair=spec.repair), \
            open_memory_store(record, spec.checkpointer, spec.out):
        pass
    owned = pool is None
    pool = pool or WorkerPool(spec.workers)
    try:
        await pool.start()
        await pool.open_run(payload)
        try:
            await _run_items(spec, ctx, record, None, experiment, pending, done, console, on_row,
                             pool=pool)
        finally:
            await pool.close_run()
    finally:
        if owned:
            await pool.shutdown()


def served_milvus_uri(framework: str, ctx: Context) -> str:
    """The loopback gRPC URI on which this process's Milvus Lite serves the run's index.

    Served whenever the framework reads the index and the index has a Lite folder (debaters,
    MERMAID's MCP tools and any later reader then reach it from the workers); "" without one, or
    when the Context names a Milvus server the workers can reach themselves.
    """
    from factdebate.graphs.registry import FRAMEWORKS
    from factdebate.tools.milvus_rag import is_local_uri

    uri = ctx.resolved_milvus_uri
    if not FRAMEWORKS.entry(framework).meta.get("needs_index", True) or \
            not reads_local_index(ctx) or not is_local_uri(uri):
        return ""
    folder = Path(uri).expanduser().absolute()
    if not folder.exists():
        return ""
    from milvus_lite.server_manager import server_manager_instance

    from factdebate import patches

    patches.enabled("milvus_lite")
    return server_manager_instance.start_and_get_uri(str(folder)) or ""


async def _pooled_row(pool: WorkerPool, item: Item, runner: ItemRunner) -> dict[str, Any]:
    """``item``'s row from a worker; a crashed worker's item becomes an error row here."""
    from factdebate.evaluation.workers import WorkerCrashed

    start = time.monotonic()
    try:
        row = await pool.run_item(item)
    except WorkerCrashed as exc:
        base = base_row(item, framework=runner.spec.framework, run_id=runner.record["run_id"],
                        thread_id=f"{runner.record['run_id']}:{item.id}")
        return error_row(base, exc, wall_time_s=time.monotonic() - start, attempts=1,
                         trace_id="")
    if runner.experiment and row.get("status") == "ok":
        runner.experiment.record(row["trace_id"], correct(row), row)
    return row


def _check_index(spec: RunSpec, ctx: Context, console: Console | None) -> Context:
    """The Context with the index the run searches, checked (``evaluation/index_identity.py``
    chooses it when :func:`_named_index` did not: a named folder, ``--demo-index``, the data
    folder's corpus indexed once, the default folder's own index)."""
    from factdebate.graphs.registry import FRAMEWORKS
    from factdebate.run.setup import check_index

    if not FRAMEWORKS.entry(spec.framework).meta.get("needs_index", True) or \
            not reads_local_index(ctx):  # live sources only: no index is opened or built
        return ctx
    ctx = resolve_run_index(spec.framework, ctx, data_dir=spec.data_dir, demo=spec.demo_index,
                            console=console)
    check_index(ctx, explicit_index=bool(ctx.index_dir))
    return ctx


def _named_index(spec: RunSpec, ctx: Context,
                 console: Console | None) -> tuple[RunSpec, Context]:
    """The spec (``index``: the name it resolved) and the Context searching ``--index NAME|DIR``,
    else the index the data folder's ``indexes.json`` or the dataset's registry entry names
    (``datasets.dataset_index``), else the demo corpus the user built in the default folder
    (:func:`_built_demo`); both as they are when none applies or an index is set already.

    Raises:
        InputError: ``--index`` with another index named, or a name holding no complete index;
            ``--index``/``--demo-index`` for a run whose backends read no local index.
    """
    from factdebate.core.context import mask_url
    from factdebate.evaluation.datasets import dataset_index, index_folder
    from factdebate.evaluation.index_identity import describe, identity_of
    from factdebate.graphs.registry import FRAMEWORKS

    explicit = spec.index
    if not FRAMEWORKS.entry(spec.framework).meta.get("needs_index", True):
        return spec, ctx
    if not reads_local_index(ctx):
        flag = f"--index {explicit}" if explicit else "--demo-index" if spec.demo_index else ""
        if flag:
            raise InputError(f"{flag} names an index, but this run reads none (rag_backend="
                             f"{ctx.rag_backend}, search_backend={ctx.search_backend}: live "
                             "sources only)", f"drop {flag.split()[0]}, or set a backend that "
                             "searches the index, e.g. --set rag_backend=milvus")
        return spec, ctx
    if explicit and (ctx.index_dir or ctx.milvus_uri or spec.demo_index):
        other = ("--demo-index" if spec.demo_index else
                 f"index_dir={ctx.index_dir}" if ctx.index_dir else
                 f"milvus_uri={mask_url(ctx.milvus_uri)}")
        raise InputError(f"--index {explicit} names an index, and so does {other}",
                         "name one index")
    if explicit:
        name, by = explicit, "--index"
    elif ctx.index_dir or ctx.milvus_uri or spec.demo_index:
        return spec, ctx
    else:
        named = dataset_index(spec.dataset, spec.data_dir)
        if named is None:
            return spec, _built_demo(spec, ctx, console)
        name, by = named
    folder = index_folder(name)
    identity = identity_of(folder)
    if identity["status"] != "ok":
        status = "no index" if identity["status"] == "absent" else (
            f"a damaged index ({identity.get('damage')})")
        raise InputError(f"{by} names the index {name!r}, but {folder} holds {status}",
                         f"build it: factdebate index DUMP --format FORMAT --index-dir {folder}")
    if console is not None:
        console.print(f"index {name!r} (named by {by}): {describe(identity)}", highlight=False,
                      soft_wrap=True, markup=False)
    return (dataclasses.replace(spec, index=name),
            dataclasses.replace(ctx, index_dir=str(folder)))


def _built_demo(spec: RunSpec, ctx: Context, console: Console | None) -> Context:
    """The Context searching the default index folder when the user built the demo corpus there
    (``factdebate index`` of it, as ``verify`` searches it) and nothing else gives the run an
    index (no data folder corpus); otherwise the Context as it is (``index_identity`` chooses).
    Every report then says at its top that the demo corpus was searched, and where."""
    from factdebate.core.context import default_index_dir
    from factdebate.evaluation.index_identity import data_corpus, data_folder, identity_of

    if data_corpus(data_folder(spec.data_dir)) is not None:
        return ctx
    identity = identity_of(default_index_dir())
    if identity["status"] != "ok" or not identity["demo"]:
        return ctx
    if console is not None:
        console.print(f"index: the bundled demo corpus, indexed in the default folder "
                      f"{identity['index_dir']} ({identity['passages']} passages): its evidence "
                      "figures describe that corpus, not the benchmark's", highlight=False,
                      soft_wrap=True, markup=False)
    return dataclasses.replace(ctx, index_dir=str(default_index_dir()))


async def _server(spec: RunSpec, ctx: Context,
                  url: str) -> tuple[ServerExecutor, dict[str, Any] | None]:
    """The executor of a ``--server URL`` run, its server checked, and the index the server
    names (``index_identity.server_index``; None when the framework searches no index)."""
    from factdebate.evaluation.index_identity import server_index
    from factdebate.graphs.registry import FRAMEWORKS
    from factdebate.prompts import load_prompts

    executor = ServerExecutor(url, spec.framework, load_prompts(ctx.prompt_set).version,
                              spec.server_api_key)
    await executor.check()
    if not FRAMEWORKS.entry(spec.framework).meta.get("needs_index", True):
        return executor, None
    return executor, server_index(url, await executor.index())


def _with_gold_in_index(spec: RunSpec, ctx: Context, items: list[Item],
                        identity: dict[str, Any] | None) -> tuple[list[Item], str]:
    """The items with ``gold_in_index`` (``evaluation/ceiling.py``: is the gold evidence in the
    index the run searches at all?), their FEVEROUS scoring rule and, over an index of AVeriTeC's
    knowledge store (passages in per-claim pools), their claim's ``pool`` in ``meta``; for a
    ``--server`` run with gold evidence also one line saying where its ceiling comes from, or why
    it has none (``identity``: ``run.json`` ``index``)."""
    from factdebate.evaluation.ceiling import CorpusLookup, IndexLookup, gold_in_index, server_corpus

    golds = [it.meta.get("gold_evidence") for it in items]
    scored = any(isinstance(g, dict) for g in golds)
    claims = any(it.meta.get("claim_id") for it in items)
    if not scored and not claims:
        return items, ""
    lookup: IndexLookup | CorpusLookup | None = None
    ceiling = ""
    if spec.server and identity is not None:  # the server's index: a local copy of its corpus
        if scored:
            corpus, ceiling = server_corpus(identity, spec.data_dir)
            if corpus is not None:
                lookup = CorpusLookup(corpus, golds)
    elif identity and identity.get("status") == "ok":
        lookup = IndexLookup(ctx.index_path)
    pooled = claims and isinstance(lookup, IndexLookup) and lookup.has_pools
    out = []
    for item, gold in zip(items, golds, strict=True):
        if pooled and item.meta.get("claim_id"):  # an AVeriTeC claim searches its own pool only
            item = dataclasses.replace(item, meta={**item.meta, "pool": item.meta["claim_id"]})
            item_context(ctx, item)  # a Context that cannot carry the pool stops the run here
        if not isinstance(gold, dict):
            out.append(item)
            continue
        meta = dict(item.meta)
        if gold.get("kind") == "feverous":
            meta["gold_evidence"] = {**gold, "rule": spec.feverous_rule}
        if lookup is not None:
            meta["gold_in_index"] = gold_in_index(gold, lookup)
        out.append(dataclasses.replace(item, meta=meta))
    return out, ceiling


async def _run_items(spec: RunSpec, ctx: Context, record: dict[str, Any], executor: Any,
                     experiment: LangSmithExperiment | None, pending: list[Item],
                     done: dict[str, dict[str, Any]], console: Console | None,
                     on_row: Callable[[dict[str, Any]], None] | None,
                     pool: WorkerPool | None = None) -> None:
    """Run ``pending`` under the concurrency limit, appending each row as it finishes; with a
    ``pool`` the items run in its workers and ``executor`` is unused."""
    runner = ItemRunner(spec, ctx, record, executor, experiment)
    writer = ResultsWriter(spec.out / RESULTS)
    semaphore = asyncio.Semaphore(spec.concurrency)
    title = f"{spec.framework} / {record['dataset']}"
    stream = sequential(record)
    if stream and pending and console is not None and (spec.concurrency > 1 or spec.workers > 1):
        console.print("evidence memory on: items run one at a time in the recorded order "
                      "(run.json item_ids), so results do not depend on timing", highlight=False,
                      soft_wrap=True)
    with EvalProgress(title, total=len(done) + len(pending), rows=list(done.values()),
                      console=console) as progress:

        async def one(item: Item, position: int) -> None:
            async with semaphore:
                if pool is not None:  # the item runs in a worker process
                    row = await _pooled_row(pool, item, runner)
                else:
                    row = await runner.run(item)
            if stream:
                row["memory_stream_position"] = position
            await writer.append(row)
            progress.add(row)
            if on_row:
                on_row(row)

        try:
            if stream:  # evaluation/memory_store.py: why one at a time
                for position, item in enumerate(pending, start=len(done)):
                    await one(item, position)
            else:
                await asyncio.gather(*(one(it, -1) for it in pending))
        finally:
            writer.close()
