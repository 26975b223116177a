"""One evaluation item's execution: the run's settings (``RunSpec``) and ``ItemRunner``.

Below both ``evaluation/runner.py`` (the coordinator) and ``evaluation/workers.py`` (worker
processes), which each run items through ``ItemRunner``; keeping it here leaves the two without an
import cycle.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factdebate.core.context import Context
from factdebate.core.errors import ConfigError, FactDebateError
from factdebate.core.retry import is_rate_limit, rate_limit_retrying
from factdebate.evaluation.executors import ServerAdmissionError
from factdebate.evaluation.formats import Item
from factdebate.evaluation.judging import estimate_cost, measure
from factdebate.evaluation.langsmith_experiment import LangSmithExperiment
from factdebate.evaluation.memory_store import memory_configurable
from factdebate.evaluation.metrics import correct
from factdebate.evaluation.results import base_row, error_row, ok_row, tool_fault_row
from factdebate.evaluation.run_folder import run_store_fault


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
    repair: bool = False
    """With ``resume``: set aside unreadable result rows / a damaged run.json or checkpoint
    database and run the affected items again (``evaluation/run_folder.py``)."""
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
    demo_index: bool = False
    """Search the default index folder (the bundled demo corpus when it is empty) although no
    index is named (``eval --demo-index``; ``evaluation/index_identity.py``)."""
    index: str | None = None
    """The index to search, by name (``$FACTDEBATE_HOME/indexes/<name>``, built by ``factdebate
    index ... --index-dir`` there) or by folder (``eval --index``); None: the one the data folder
    or the dataset names, else ``evaluation/index_identity.py`` chooses
    (``datasets.dataset_index``)."""
    feverous_rule: str = "feverous"
    """NOT ENOUGH INFO rule of the FEVEROUS score: ``feverous`` (its scorer's) or ``fever``
    (``evaluation/evidence_metrics.py`` ``SCORER_RULES``)."""
    tool_faults: str = "error"
    """A finished item whose tool calls failed (retriever or search service down after its
    retries: the debate went on without that evidence): ``error`` records it as an error row
    (type ``ToolFault``, excluded from the metrics, rerun by ``--resume --retry-errors``),
    ``score`` as an ordinary row with the fault in its flags (``results.TOOL_FAULT_MODES``)."""


POOL_FIELD = "pool"
"""Context field naming the knowledge-store pool an item's retrievers search
(``RetrieverSettings.pool``: an AVeriTeC claim id)."""


def item_context(ctx: Context, item: Item) -> Context:
    """The Context one item runs with: the run's, limited to the item's knowledge-store pool when
    the runner gave it one (``meta["pool"]``: an AVeriTeC claim over an index of its knowledge
    store, whose passages each belong to one claim's pool).

    Raises:
        ConfigError: The item has a pool but the Context has no field to carry it (its
            retrievers would search every claim's pool).
    """
    pool = item.meta.get("pool")
    if not pool:
        return ctx
    if not any(f.name == POOL_FIELD for f in dataclasses.fields(ctx)):
        raise ConfigError(f"{item.id}: the index holds per-claim knowledge-store pools, but "
                          f"{type(ctx).__name__} has no {POOL_FIELD!r} field to search only "
                          "this claim's", "search an index without pools, or a framework whose "
                          "Context has it")
    return dataclasses.replace(ctx, **{POOL_FIELD: str(pool)})


def check_models(ctx: Context) -> None:
    """Load every role's model once (cached for the run); ``ConfigError`` if one cannot be."""
    from factdebate.core.models import load_model

    for model in {spec for role, spec in ctx.model_specs().items() if role != "embeddings"}:
        load_model(model, base_url=ctx.model_base_url, temperature=ctx.temperature)


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
        scope = memory_configurable(self.record)
        if scope:  # the run's own memory stream (evaluation/memory_store.py)
            extra["configurable"] = scope
        if self.experiment:
            extra |= self.experiment.config_for(item.id)
        return extra

    async def run(self, item: Item) -> dict[str, Any]:
        """Row of ``item``: finished, or an error row; never raises on the item's failure."""
        thread_id = f"{self.record['run_id']}:{item.id}"
        base = base_row(item, framework=self.spec.framework, run_id=self.record["run_id"],
                        thread_id=thread_id)
        ctx = item_context(self.ctx, item)
        start = time.monotonic()
        attempt, trace_id = 0, ""
        try:
            # the project's item retry policy (factdebate.core.retry): a provider's rate limit
            # that outlived the call's own retries runs the item again, resuming its thread
            async for attempt_of in rate_limit_retrying(
                    self.spec.rate_limit_retries, self.spec.backoff_s, self._worth_another_run):
                with attempt_of:
                    attempt, trace_id = attempt_of.retry_state.attempt_number, str(uuid.uuid4())
                    result = await self.executor(item.input, ctx, thread_id=thread_id,
                                                 config_extra=self._config_extra(item, trace_id))
        except Exception as exc:  # noqa: BLE001 - recorded as an error row
            fatal = run_store_fault(exc)  # full disk, damaged checkpoints: stop the run
            if fatal is not None:
                raise fatal from exc
            return error_row(base, exc, wall_time_s=time.monotonic() - start,
                             attempts=attempt, trace_id=trace_id)
        cost = estimate_cost(result.get("ledger") or {}, ctx.debater_model)
        row = ok_row(base, result, wall_time_s=time.monotonic() - start, attempts=attempt,
                     trace_id=trace_id, cost_usd=cost)
        faulted = tool_fault_row(row) if self.spec.tool_faults == "error" else None
        if faulted is not None:  # debated without the evidence a tool failed to give: no measurement
            return faulted
        if self.spec.metrics:
            row["extra"] = await self._measure(row)
        if self.experiment:
            self.experiment.record(trace_id, correct(row), row)
        return row

    @staticmethod
    def _worth_another_run(exc: BaseException) -> bool:
        """A rate limit, unless the server admission already waited it out or the run store
        failed (that stops the run)."""
        return is_rate_limit(exc) and not isinstance(exc, ServerAdmissionError) \
            and run_store_fault(exc) is None

    async def _measure(self, row: dict[str, Any]) -> dict[str, Any]:
        try:
            return await measure(row, self.ctx, self.spec.metrics, self.record["metric_model"])
        except FactDebateError:
            raise
        except Exception as exc:  # noqa: BLE001 - a metric fault must not lose the item
            return {"measure_error": f"{type(exc).__name__}: {str(exc)[:300]}"}
