"""``eval --config run.yaml``: several frameworks x datasets as one experiment.

Format (every key optional except ``frameworks``/``datasets`` or ``runs``)::

    out: runs/toolmad_table3        # output folder; each run goes to OUT/<name>/
    data_dir: ../shared/data        # else $FACTDEBATE_DATA_DIR
    limit: 200                      # items per dataset (stratified sample)
    seed: 0
    concurrency: 8
    workers: 2                      # processes running items (evaluation/workers.py)
    model: openai:gpt-4o-mini       # every role's model (Context.debater_model)
    set: {search_backend: tavily}   # Context fields for every run
    metrics: [llm_judge]            # extra model-based measurements
    frameworks: [tool_mad]          # crossed with datasets
    datasets: [toolmad_fever, feverous, toolmad_faviq, averitec]
    runs:                           # extra runs; keys as above plus name
      - {framework: tool_mad, dataset: fever, name: tool_mad_consistency,
         set: {scoring_mode: consistency}}

Command-line flags given explicitly override the file's top-level values.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml
from factdebate.evaluation.runner import RunSpec

from factdebate.core.errors import InputError

_TOP = {"out", "data_dir", "limit", "seed", "concurrency", "workers", "model", "set", "metrics",
        "metric_model", "frameworks", "datasets", "runs", "server"}
_RUN = {"framework", "dataset", "name", "limit", "seed", "model", "set", "metrics", "concurrency"}


def set_pairs(values: dict[str, Any] | list[str] | None) -> list[str]:
    """``{field: value}`` (or ``["field=value"]``) as ``--set`` strings."""
    if values is None:
        return []
    if isinstance(values, list):
        return [str(v) for v in values]
    pairs = []
    for key, value in values.items():
        if isinstance(value, list):
            value = ",".join(map(str, value))
        elif isinstance(value, bool):
            value = str(value).lower()
        pairs.append(f"{key}={value}")
    return pairs


def load_config(path: Path, overrides: dict[str, Any]) -> tuple[Path, list[tuple[str, RunSpec]]]:
    """The output folder and ``(name, RunSpec)`` per run of a config file."""
    if not path.is_file():
        raise InputError(f"config file {path} does not exist", "give a YAML file path")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    unknown = set(data) - _TOP
    if unknown:
        raise InputError(f"{path}: unknown keys {sorted(unknown)}", f"known: {', '.join(sorted(_TOP))}")
    top = {**data, **{k: v for k, v in overrides.items() if v is not None and v != []}}
    if not top.get("out"):
        raise InputError(f"{path} names no output folder", "add 'out:' or pass --out")
    out = Path(top["out"])
    jobs = [{"framework": f, "dataset": d}
            for f in data.get("frameworks") or [] for d in data.get("datasets") or []]
    jobs += list(data.get("runs") or [])
    if not jobs:
        raise InputError(f"{path} defines no runs", "add frameworks + datasets, or runs")
    specs = []
    for job in jobs:
        bad = set(job) - _RUN
        if bad or not {"framework", "dataset"} <= set(job):
            raise InputError(f"{path}: bad run {job}", f"keys: {', '.join(sorted(_RUN))}")
        name = job.get("name") or f"{job['framework']}__{Path(job['dataset']).stem}"
        spec = RunSpec(
            framework=job["framework"], dataset=job["dataset"], out=out / name,
            limit=job.get("limit", top.get("limit")), seed=job.get("seed", top.get("seed", 0)),
            concurrency=job.get("concurrency", top.get("concurrency", 4)),
            workers=top.get("workers") or 1,
            model=job.get("model", top.get("model")), data_dir=top.get("data_dir"),
            sets=set_pairs(data.get("set")) + set_pairs(job.get("set")) + list(overrides.get("sets") or []),
            metrics=list(job.get("metrics", top.get("metrics")) or []),
            metric_model=top.get("metric_model"), server=top.get("server"),
        )
        specs.append((name, spec))
    return out, specs


def with_flags(spec: RunSpec, **flags: Any) -> RunSpec:
    """``spec`` with the run-wide CLI switches (resume, server, langsmith ...)."""
    return dataclasses.replace(spec, **{k: v for k, v in flags.items() if v is not None})
