"""``eval --config run.yaml``: several frameworks x datasets as one experiment.

Format (every key optional except ``frameworks``/``datasets`` or ``runs``)::

    out: runs/toolmad_table3        # output folder; each run goes to OUT/<name>/
    data_dir: /data/factdebate      # else $FACTDEBATE_DATA_DIR, else $FACTDEBATE_HOME/data
    limit: 200                      # items per dataset (stratified sample)
    seed: 0
    concurrency: 8
    workers: 2                      # processes running items (evaluation/workers.py)
    model: openai:gpt-4o-mini       # every role's model (Context.debater_model)
    set: {search_backend: tavily}   # Context fields for every run
    metrics: [llm_judge]            # extra model-based measurements
    demo_index: false               # true: search the bundled demo corpus (eval --demo-index)
    index: fever-wiki               # an index by name or folder for every run (eval --index)
    feverous_rule: feverous         # or fever: NEI rule of the FEVEROUS score
    frameworks: [tool_mad]          # crossed with datasets
    datasets: [toolmad_fever, feverous, toolmad_faviq, averitec]
    runs:                           # extra runs; keys as above plus name
      - {framework: tool_mad, dataset: fever, name: tool_mad_consistency,
         set: {scoring_mode: consistency}}

Command-line flags given explicitly override the file's top-level values.

Checked before anything runs: the file is UTF-8 YAML holding a mapping; ``frameworks``,
``datasets``, ``runs`` and ``metrics`` are lists (a scalar is an error naming the key, never split
into characters); a run's ``name`` is one plain folder name (no ``/``, ``..`` or leading dot), so
every run writes inside ``out``; two runs may not share a name. Runs without a ``name`` are called
``<framework>__<dataset file stem>``; when two datasets share a stem (``a/dev.jsonl`` and
``b/dev.jsonl``) each gets a short hash of its dataset path appended.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

from factdebate.core.errors import InputError
from factdebate.evaluation.runner import RunSpec

_TOP = {"out", "data_dir", "limit", "seed", "concurrency", "workers", "model", "set", "metrics",
        "metric_model", "frameworks", "datasets", "runs", "server", "demo_index", "feverous_rule", "index"}
_RUN = {"framework", "dataset", "name", "limit", "seed", "model", "set", "metrics", "concurrency",
        "index"}


def set_pairs(values: dict[str, Any] | list[str] | None) -> list[str]:
    """``{field: value}`` (or ``["field=value"]``) as ``--set`` strings."""
    if values is None:
        return []
    if isinstance(values, list):
        return [str(v) for v in values]
    if not isinstance(values, dict):
        raise InputError(f"'set' must be a mapping of Context fields, got {values!r}"[:300],
                         "write it as set: {field: value}")
    pairs = []
    for key, value in values.items():
        if isinstance(value, list):
            value = ",".join(map(str, value))
        elif isinstance(value, bool):
            value = str(value).lower()
        pairs.append(f"{key}={value}")
    return pairs


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError(f"config file {path} does not exist", "give a YAML file path")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise InputError(f"config file {path} is not UTF-8 (byte offset {exc.start})",
                         "save it as UTF-8") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"config file {path} is not valid YAML ({' '.join(str(exc).split())})",
                         "fix the YAML syntax") from exc
    if not isinstance(data, dict):
        raise InputError(f"config file {path} must hold a mapping of keys, got "
                         f"{type(data).__name__}", f"known keys: {', '.join(sorted(_TOP))}")
    return data


def _list(path: Path, where: dict[str, Any], key: str, context: str = "") -> list[Any]:
    """``where[key]`` as a list (missing: empty); a scalar or mapping is an error naming the key."""
    value = where.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{path}: {context}{key!r} must be a list, got {type(value).__name__} "
                         f"{value!r}"[:300], f"write it as a list, e.g. {key}: [{value}]")
    return value


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _run_name(path: Path, job: dict[str, Any]) -> str | None:
    """The run's explicit folder name (validated), or None."""
    name = job.get("name")
    if name is None:
        return None
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise InputError(f"{path}: run name {name!r} is not a plain folder name",
                         "use letters, digits, '.', '_' and '-' only (it becomes OUT/<name>)")
    return name


def _auto_names(jobs: list[dict[str, Any]]) -> list[str]:
    """``<framework>__<stem>``, with a dataset hash where two different datasets share one."""
    base = [f"{j['framework']}__{Path(str(j['dataset'])).stem}" for j in jobs]
    datasets: dict[str, set[str]] = {}
    for name, job in zip(base, jobs, strict=True):
        datasets.setdefault(name, set()).add(str(job["dataset"]))
    return [f"{name}-{hashlib.sha256(str(job['dataset']).encode()).hexdigest()[:6]}"
            if len(datasets[name]) > 1 else name for name, job in zip(base, jobs, strict=True)]


def _jobs(path: Path, data: dict[str, Any]) -> list[dict[str, Any]]:
    frameworks, datasets = _list(path, data, "frameworks"), _list(path, data, "datasets")
    jobs: list[dict[str, Any]] = [{"framework": f, "dataset": d} for f in frameworks for d in datasets]
    for job in _list(path, data, "runs"):
        if not isinstance(job, dict):
            raise InputError(f"{path}: each entry of 'runs' must be a mapping, got {job!r}"[:300],
                             f"keys: {', '.join(sorted(_RUN))}")
        jobs.append(job)
    if not jobs:
        raise InputError(f"{path} defines no runs", "add frameworks + datasets, or runs")
    for job in jobs:
        bad = set(job) - _RUN
        if bad or not {"framework", "dataset"} <= set(job):
            raise InputError(f"{path}: bad run {job}", f"keys: {', '.join(sorted(_RUN))}")
        for key in ("framework", "dataset"):
            if not isinstance(job[key], str) or not job[key]:
                raise InputError(f"{path}: run {key} must be a name, got {job[key]!r}",
                                 f"give one {key} per run (use a list under '{key}s')")
        _list(path, job, "metrics", "a run's ")
    return jobs


def load_config(path: Path, overrides: dict[str, Any]) -> tuple[Path, list[tuple[str, RunSpec]]]:
    """The output folder and ``(name, RunSpec)`` per run of a config file."""
    data = _read(path)
    unknown = set(data) - _TOP
    if unknown:
        raise InputError(f"{path}: unknown keys {sorted(unknown)}", f"known: {', '.join(sorted(_TOP))}")
    top = {**data, **{k: v for k, v in overrides.items() if v is not None and v != []}}
    if not top.get("out"):
        raise InputError(f"{path} names no output folder", "add 'out:' or pass --out")
    _list(path, top, "metrics")
    out = Path(top["out"])
    jobs = _jobs(path, data)
    names = [_run_name(path, job) or auto for job, auto in zip(jobs, _auto_names(jobs), strict=True)]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{path}: several runs would write to {', '.join(twice)}",
                         "give each run its own 'name:'")
    specs = []
    for name, job in zip(names, jobs, strict=True):
        spec = RunSpec(
            framework=job["framework"], dataset=job["dataset"], out=out / name,
            limit=job.get("limit", top.get("limit")), seed=job.get("seed", top.get("seed", 0)),
            concurrency=job.get("concurrency", top.get("concurrency", 4)),
            workers=1 if top.get("workers") is None else top["workers"],  # 0: refused, not 1
            model=job.get("model", top.get("model")), data_dir=top.get("data_dir"),
            sets=set_pairs(data.get("set")) + set_pairs(job.get("set")) + list(overrides.get("sets") or []),
            metrics=list(job.get("metrics", top.get("metrics")) or []),
            metric_model=top.get("metric_model"), server=top.get("server"),
            demo_index=_flag(path, top, "demo_index"),
            feverous_rule=str(top.get("feverous_rule") or "feverous"),
            index=_index(path, job.get("index", top.get("index"))),
        )
        specs.append((name, spec))
    return out, specs


def _index(path: Path, value: Any) -> str | None:
    """A run's ``index`` (a name or a folder; missing: None); anything else is an error."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{path}: 'index' must be an index name or folder, got {value!r}"[:300],
                         "write index: fever-wiki (or a folder path)")
    return value


def _flag(path: Path, top: dict[str, Any], key: str) -> bool:
    """``top[key]`` as a YAML boolean (missing: False); anything else is an error naming it."""
    value = top.get(key, False)
    if not isinstance(value, bool):
        raise InputError(f"{path}: {key!r} must be true or false, got {value!r}"[:300],
                         f"write {key}: true")
    return value


def with_flags(spec: RunSpec, **flags: Any) -> RunSpec:
    """``spec`` with the run-wide CLI switches (resume, server, langsmith ...)."""
    return dataclasses.replace(spec, **{k: v for k, v in flags.items() if v is not None})
