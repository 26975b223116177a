"""``factdebate eval``: one framework on one dataset, concurrent, checkpointed, resumable.

Per run folder ``OUT``: ``run.json`` (resolved config, sampled item ids, dataset version and file
hash, prompt version, model specs, git SHA), ``checkpoints.sqlite`` (one LangGraph thread per item,
``<run id>:<item id>``), ``results.jsonl`` (one row per finished item, see ``evaluation/results.py``),
then ``summary.json``, ``report.md`` and plots (``evaluation/reports.py``).

Items run under an ``asyncio.Semaphore(concurrency)``. An item's failure becomes an error row and the
run goes on; errors whose class or message says rate limit / 429 are retried with exponential
back-off first (the retry resumes the item's thread from its checkpoint). ``--resume`` re-reads
``run.json`` (same items, same run id), skips items that already have a row and resumes the others'
threads, so completed graph steps are not re-run. Every framework is driven alike through the one
output shape (``label`` or ``answers``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factdebate.evaluation.checkpointers import checkpointer_kind, open_checkpointer
from factdebate.evaluation.datasets import dataset_spec, file_sha256, load_items, stratified_sample
from factdebate.evaluation.executors import LangSmithExperiment, LocalExecutor, ServerExecutor
from factdebate.evaluation.formats import Item
from factdebate.evaluation.judging import EXTRA_METRICS, estimate_cost, measure
from factdebate.evaluation.metrics import correct
from factdebate.evaluation.progress import EvalProgress
from factdebate.evaluation.results import (
    RESULTS,
    ResultsWriter,
    base_row,
    drop_error_rows,
    error_row,
    ok_row,
    read_results,
)
from rich.console import Console

from factdebate.core.context import Context
from factdebate.core.errors import ConfigError, FactDebateError, InputError

if TYPE_CHECKING:
    from factdebate.evaluation.workers import WorkerPool


@dataclass(kw_only=True)
class RunSpec:
    """Everything one evaluation run needs (the CLI and ``--config`` fill it)."""

    framework: str
    dataset: str
    out: Path
    limit: int | None = None
    seed: int = 0
    concurrency: int = 4
    resume: bool = False
    retry_errors: bool = False
    model: str | None = None
    sets: list[str] = field(default_factory=list)
    data_dir: str | None = None
    server: str | None = None
    server_api_key: str | None = None
    langsmith: bool = False
    metrics: list[str] = field(default_factory=list)
    """Extra model-based measurements: ``llm_judge``, ``ragas``."""
    metric_model: str | None = None
    """Model of those measurements; default: the run's judge model."""
    checkpointer: str | None = None
    """``sqlite`` (None: ``OUT/checkpoints.sqlite``), ``postgres`` (``$FACTDEBATE_POSTGRES_URI``)
    or a ``postgresql://`` URI - see ``evaluation/checkpointers.py``."""
    rate_limit_retries: int = 5
    backoff_s: float = 2.0
    workers: int = 1
    """Processes running items (``evaluation/workers.py``); 1 = in this process's event loop."""


def is_rate_limit(exc: BaseException) -> bool:
    """A provider's rate-limit error (class name or message says RateLimit / 429), chained too."""
    seen: BaseException | None = exc
    while seen is not None:
        text = f"{type(seen).__name__} {seen}".lower()
        if "ratelimit" in text or "rate limit" in text or "429" in text \
                or getattr(seen, "status_code", None) == 429:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def build_run_context(spec: RunSpec) -> Context:
    """The framework's Context from ``--model`` and ``--set`` (the CLI's rules)."""
    from factdebate.cli.main import build_context
    from factdebate.run.frameworks import context_class

    return build_context({"debater_model": spec.model}, spec.sets, context_class(spec.framework))


def check_models(ctx: Context) -> None:
    """Load every role's model once (cached for the run); ``ConfigError`` if one cannot be."""
    from factdebate.core.models import load_model

    for model in {ctx.debater_model, ctx.query_model_spec, ctx.judge_model_spec}:
        load_model(model, base_url=ctx.model_base_url, temperature=ctx.temperature)


def _run_record(spec: RunSpec, ctx: Context, items: list[Item], run_id: str) -> dict[str, Any]:
    from factdebate.prompts import load_prompts

    from factdebate.run.claims import git_sha
    from factdebate.run.frameworks import FRAMEWORKS

    ds, path = dataset_spec(spec.dataset, Path(spec.data_dir) if spec.data_dir else None)
    return {
        "run_id": run_id, "framework": spec.framework, "dataset": ds.name,
        "dataset_version": ds.version, "task": ds.task, "data_file": str(path),
        "data_sha256": file_sha256(path), "limit": spec.limit, "seed": spec.seed,
        "concurrency": spec.concurrency, "item_ids": [it.id for it in items],
        "context": dataclasses.asdict(ctx), "prompt_version": load_prompts(ctx.prompt_set).version,
        "paper": FRAMEWORKS.entry(spec.framework).meta.get("paper", ""),
        "models": {"debater": ctx.debater_model, "query": ctx.query_model_spec,
                   "judge": ctx.judge_model_spec, "scoring": ctx.scoring_model_spec,
                   "embeddings": ctx.embedding_model},
        "metrics": spec.metrics, "metric_model": spec.metric_model or ctx.judge_model_spec,
        "server": spec.server, "langsmith": spec.langsmith, "git_sha": git_sha(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _prepare(spec: RunSpec, ctx: Context) -> tuple[dict[str, Any], list[Item]]:
    """``run.json`` (new, or the one a resumed run started with) and the run's items."""
    spec.out.mkdir(parents=True, exist_ok=True)
    run_file = spec.out / "run.json"
    all_items = load_items(spec.dataset, spec.data_dir)
    if run_file.exists():
        if not spec.resume:
            raise InputError(f"{spec.out} already holds a run",
                             "pass --resume to continue it, or choose another --out")
        record = json.loads(run_file.read_text(encoding="utf-8"))
        by_id = {it.id: it for it in all_items}
        if record["framework"] != spec.framework or any(i not in by_id for i in record["item_ids"]):
            raise InputError(f"{spec.out} holds a run of {record['framework']} on "
                             f"{record['dataset']}", "resume it with the same --framework/--dataset")
        if record["context"] != dataclasses.asdict(ctx):
            raise InputError(f"{spec.out} was run with other settings",
                             "resume with the same --model/--set values, or use another --out")
        return record, [by_id[i] for i in record["item_ids"]]
    if spec.resume and (spec.out / RESULTS).exists():
        raise InputError(f"{spec.out} has results but no run.json", "choose another --out")
    items = stratified_sample(all_items, spec.limit, spec.seed)
    run_id = f"{spec.framework}-{spec.dataset}-{uuid.uuid4().hex[:8]}".replace("/", "_")
    record = _run_record(spec, ctx, items, run_id)
    run_file.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
    return record, items


class ItemRunner:
    """Runs one item with retries on rate limits and turns the outcome into a results row."""

    def __init__(self, spec: RunSpec, ctx: Context, record: dict[str, Any], executor: Any,
                 experiment: LangSmithExperiment | None) -> None:
        self.spec, self.ctx, self.record = spec, ctx, record
        self.executor, self.experiment = executor, experiment

    def _config_extra(self, item: Item, trace_id: str) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "run_id": uuid.UUID(trace_id), "run_name": f"{self.spec.framework}:{item.id}",
            "metadata": {"framework": self.spec.framework, "dataset": item.dataset,
                         "item_id": item.id, "prompt_version": self.record["prompt_version"],
                         "eval_run_id": self.record["run_id"]},
            "tags": ["factdebate-eval"]}
        if self.experiment:
            extra |= self.experiment.config_for(item.id)
        return extra

    async def run(self, item: Item) -> dict[str, Any]:
        """Row of ``item``: finished, or an error row; never raises on the item's failure."""
        thread_id = f"{self.record['run_id']}:{item.id}"
        base = base_row(item, framework=self.spec.framework, run_id=self.record["run_id"],
                        thread_id=thread_id)
        ctx = self.ctx
        start = time.monotonic()
        for attempt in range(1, self.spec.rate_limit_retries + 2):
            trace_id = str(uuid.uuid4())
            try:
                result = await self.executor(item.input, ctx, thread_id=thread_id,
                                             config_extra=self._config_extra(item, trace_id))
                break
            except Exception as exc:  # noqa: BLE001 - recorded as an error row
                if is_rate_limit(exc) and attempt <= self.spec.rate_limit_retries:
                    await asyncio.sleep(self.spec.backoff_s * 2 ** (attempt - 1))
                    continue
                return error_row(base, exc, wall_time_s=time.monotonic() - start,
                                 attempts=attempt, trace_id=trace_id)
        cost = estimate_cost(result.get("ledger") or {}, ctx.debater_model)
        row = ok_row(base, result, wall_time_s=time.monotonic() - start, attempts=attempt,
                     trace_id=trace_id, cost_usd=cost)
        if self.spec.metrics:
            row["extra"] = await self._measure(row)
        if self.experiment:
            self.experiment.record(trace_id, correct(row))
        return row

    async def _measure(self, row: dict[str, Any]) -> dict[str, Any]:
        try:
            return await measure(row, self.ctx, self.spec.metrics, self.record["metric_model"])
        except FactDebateError:
            raise
        except Exception as exc:  # noqa: BLE001 - a metric fault must not lose the item
            return {"measure_error": f"{type(exc).__name__}: {str(exc)[:300]}"}


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
    if not spec.server:
        check_models(ctx)  # an unknown model or a missing key fails once, before run.json
    record, items = _prepare(spec, ctx)
    results = spec.out / RESULTS
    if spec.retry_errors and results.exists():
        drop_error_rows(results)
    done = {r["item_id"]: r for r in read_results(results)}
    pending = [it for it in items if it.id not in done]
    experiment = None
    if spec.langsmith:
        experiment = LangSmithExperiment(record["run_id"], record["dataset"],
                                         record["dataset_version"], items, record)
    try:
        if spec.server:
            executor = ServerExecutor(spec.server, spec.framework, record["prompt_version"],
                                      spec.server_api_key)
            await executor.check()
            await _run_items(spec, ctx, record, executor, experiment, pending, done, console, on_row)
        elif spec.workers > 1 or pool is not None:
            _ensure_index(spec.framework, ctx)
            await _run_in_workers(spec, ctx, record, experiment, pending, done, console, on_row,
                                  pool)
        else:
            _ensure_index(spec.framework, ctx)
            async with open_checkpointer(spec.checkpointer, spec.out) as saver:
                executor = LocalExecutor(spec.framework, saver)
                await _run_items(spec, ctx, record, executor, experiment, pending, done, console,
                                 on_row)
    finally:
        if experiment:
            experiment.close()
    return spec.out


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
    if experiment is not None:
        payload |= {"langsmith_project": experiment.project,
                    "example_ids": {k: str(v) for k, v in experiment.example_ids.items()}}
    # the checkpoint schema (and SQLite's WAL mode) is set up here once: workers setting up a new
    # database at the same moment fail with "database is locked"
    async with open_checkpointer(spec.checkpointer, spec.out):
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
    from factdebate.tools.milvus_rag import is_local_uri

    from factdebate.run.frameworks import FRAMEWORKS

    uri = ctx.resolved_milvus_uri
    if not FRAMEWORKS.entry(framework).meta.get("needs_index", True) or not is_local_uri(uri):
        return ""
    folder = Path(uri).expanduser().absolute()
    if not folder.exists():
        return ""
    from milvus_lite.server_manager import server_manager_instance

    from factdebate.patches import milvus_lite as milvus_lite_fastpath

    milvus_lite_fastpath.install()
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
        runner.experiment.record(row["trace_id"], correct(row))
    return row


def _ensure_index(framework: str, ctx: Context) -> None:
    from factdebate.cli.main import ensure_index
    from factdebate.run.frameworks import FRAMEWORKS

    if FRAMEWORKS.entry(framework).meta.get("needs_index", True):
        ensure_index(ctx, explicit_index=bool(ctx.index_dir))


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
    with EvalProgress(title, total=len(done) + len(pending), rows=list(done.values()),
                      console=console) as progress:

        async def one(item: Item) -> None:
            async with semaphore:
                if pool is not None:  # the item runs in a worker process
                    row = await _pooled_row(pool, item, runner)
                else:
                    row = await runner.run(item)
            await writer.append(row)
            progress.add(row)
            if on_row:
                on_row(row)

        try:
            await asyncio.gather(*(one(it) for it in pending))
        finally:
            writer.close()
