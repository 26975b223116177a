"""The dataset registry (name -> file, task, version) and stratified, seeded sampling.

Datasets are read from a data directory the user names (``--data-dir`` or ``FACTDEBATE_DATA_DIR``),
laid out like ``../shared/data`` (see its README); nothing is copied into the repository.
``--dataset`` also accepts the path of any JSONL/JSON file in the shared schema or an official
release format (``evaluation/formats.py``). Each entry carries a ``version`` recorded in
``run.json`` next to the data file's SHA-256, so a results table names exactly what it scored.

Sampling (the papers score 100-200 items per dataset) is stratified and prefix-stable: items are
grouped by stratum (gold label, plus the HoVer hop subset) and shuffled inside each stratum with
``random.Random(seed)``; the strata are then interleaved into one order in which, after every
``n`` items, each stratum has had ``n`` x its share rounded up or down (at each step the stratum
furthest below its share comes next, ties by stratum name). ``--limit N`` takes the first ``N`` of
that order, so the sample of a smaller limit is always part of the sample of a larger one with the
same seed: a pilot run extends with ``--resume --limit M``. The same seed on the same file always
yields the same items, returned in file order.

Gold evidence (FEVER/HoVer evidence sets, FEVEROUS sentences, SciFact rationales) is read by
``evidence_metrics.gold_evidence`` into ``Item.meta["gold_evidence"]``: results rows carry it under
``gold.evidence`` to score the cited passages; the framework's input never holds it.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from factdebate.core.caching import ProcessCache
from factdebate.core.errors import ConfigError, InputError
from factdebate.core.registry import Registry
from factdebate.evaluation.evidence_metrics import gold_evidence
from factdebate.evaluation.formats import ANSWERS_TASK, Item, read_records, to_item

DATA_DIR_ENV = "FACTDEBATE_DATA_DIR"


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset lives in the data directory and how it is scored."""

    name: str
    path: str
    """File relative to the data directory."""
    task: str
    """Label set name (``fever``, ``binary``, ``averitec``, ``medqa``, ``pubmedqa``) or ``answers``."""
    version: str
    """Release and split this entry reads (recorded in ``run.json``)."""
    description: str
    num_hops: int | None = None
    """HoVer subset filter."""


DATASETS: Registry[DatasetSpec] = Registry("dataset")


def _add(name: str, path: str, task: str, version: str, description: str,
         aliases: tuple[str, ...] = (), num_hops: int | None = None) -> None:
    spec = DatasetSpec(name, path, task, version, description, num_hops)
    DATASETS.register(name, spec, aliases=aliases, version=version, task=task)


_add("fever", "fever/paper_dev.jsonl", "fever", "fever-1.0-paper_dev",
     "FEVER 1.0 paper_dev, 3-way (SUPPORTS/REFUTES/NEI)")
_add("feverous", "feverous/dev.jsonl", "binary", "feverous-s-dev-programfc",
     "FEVEROUS-S dev as released by ProgramFC, binary")
_add("hover", "hover/dev.jsonl", "binary", "hover-1.1-dev", "HoVer v1.1 dev, binary, 2-4 hops")
for _hops in (2, 3, 4):
    _add(f"hover_{_hops}hop", "hover/dev.jsonl", "binary", "hover-1.1-dev",
         f"HoVer v1.1 dev, {_hops}-hop claims only", num_hops=_hops)
_add("averitec", "averitec/dev.jsonl", "averitec", "averitec-dev",
     "AVeriTeC dev, 4-way (adds CONFLICTING)")
_add("scifact", "scifact/claims_dev.jsonl", "fever", "scifact-dev",
     "SciFact dev claims, 3-way (CONTRADICT -> REFUTES)")
_add("pubmedqa", "pubmedqa/pqa_labeled.jsonl", "pubmedqa", "pubmedqa-pqa_l",
     "PubMedQA PQA-L, yes/no/maybe with abstract contexts")
_add("medqa", "medqa/test.jsonl", "medqa", "medqa-us-4opt-test", "MedQA USMLE 4-option test")
_add("ramdocs", "ramdocs/test.jsonl", ANSWERS_TASK, "ramdocs-test",
     "RAMDocs (MADAM-RAG): all gold answers, no misinformation answers")
for _name, _file in (("bingcheck", "bingcheck"), ("factcheckbench", "factcheckbench"),
                     ("factool_qa", "factool_qa"), ("felm_wk", "felm_wk")):
    _add(_name, f"fire/{_file}.jsonl", "binary", f"fire-{_name}", f"FIRE set {_name}, binary")
_add("toolmad_fever", "toolmad_samples/fever.jsonl", "fever", "toolmad-sample-fever-200",
     "Tool-MAD paper's 200-item FEVER sample (train ids)")
_add("toolmad_faviq", "toolmad_samples/faviq.jsonl", "binary", "toolmad-sample-faviq-200",
     "Tool-MAD paper's 200-item FaVIQ sample, binary", aliases=("faviq",))


def resolve_data_dir(explicit: str | Path | None = None) -> Path:
    """``--data-dir`` or ``$FACTDEBATE_DATA_DIR``; a missing folder is a ``ConfigError``."""
    raw = explicit or os.environ.get(DATA_DIR_ENV)
    if not raw:
        raise ConfigError("no data directory given",
                          f"pass --data-dir DIR or set {DATA_DIR_ENV} (e.g. ../shared/data)")
    path = Path(raw).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"data directory {path} does not exist",
                          f"pass --data-dir DIR or set {DATA_DIR_ENV}")
    return path


def dataset_spec(name: str, data_dir: Path | None = None) -> tuple[DatasetSpec, Path]:
    """Spec and file of a registered name or of a file path (``.jsonl``/``.json``)."""
    if name.endswith((".jsonl", ".json")):
        path = Path(name).expanduser().resolve()
        return DatasetSpec(path.stem, str(path), "", f"file:{path.name}", f"ad-hoc file {path}"), path
    spec = DATASETS.get(name)
    return spec, resolve_data_dir(data_dir) / spec.path


def _infer_task(record: dict, default: str) -> str:
    """Task of an ad-hoc file's record: its registered dataset's task, else from its ``task``."""
    if record.get("dataset") in DATASETS:
        return DATASETS.get(record["dataset"]).task
    return {"qa_mc": "medqa", "qa_yesno": "pubmedqa",
            "qa_conflict": ANSWERS_TASK}.get(record.get("task", ""), default)


_loaded: ProcessCache[tuple[Any, ...], list[Item]] = ProcessCache("parsed datasets", maxsize=8)


def load_items(name: str, data_dir: Path | str | None = None) -> list[Item]:
    """Every item of dataset ``name`` (registered name or file path), in file order.

    Parsed files are kept per process, keyed by path, size and modification time (a changed file
    is read again): a benchmark or a ``--config`` experiment runs one dataset several times, and
    parsing FEVER's 4.4 MB took ~0.3 s of the coordinator's event loop per run.
    """
    spec, path = dataset_spec(name, Path(data_dir) if data_dir else None)
    try:
        stat = path.stat()
        key: tuple[Any, ...] | None = (spec.name, spec.task, spec.num_hops, str(path.resolve()),
                                           stat.st_size, stat.st_mtime_ns)
    except OSError:
        key = None  # read_records names the problem
    if key is None:
        return _parse_items(spec, path, name)
    return list(_loaded.get(key, lambda: _parse_items(spec, path, name)))


def _parse_items(spec: Any, path: Path, name: str) -> list[Item]:
    items, seen = [], set()
    for where, record in read_records(path):
        if spec.num_hops is not None and int(record.get("num_hops") or 0) != spec.num_hops:
            continue
        task = spec.task or _infer_task(record, "fever")
        item = to_item(record, dataset=spec.name, task=task, where=where)
        gold = gold_evidence(record, spec.name)
        if gold is not None:  # kept for scoring the cited evidence, never shown to the model
            item = replace(item, meta={**item.meta, "gold_evidence": gold})
        if item.id in seen:
            raise InputError(f"{where}: duplicate id {item.id!r}", "ids must be unique")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise InputError(f"dataset {name!r} ({path}) has no items", "check the file")
    return items


def sample_order(items: list[Item], seed: int, count: int | None = None) -> list[int]:
    """The first ``count`` (default all) indices of ``items`` in the seeded, stratum-balanced
    order whose prefixes are the samples (module docstring)."""
    strata: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        strata[item.stratum].append(i)
    rng = random.Random(seed)
    queues = [rng.sample(strata[key], len(strata[key])) for key in sorted(strata)]
    shares = [len(q) / len(items) for q in queues]
    taken = [0] * len(queues)
    order: list[int] = []
    for n in range(1, min(count or len(items), len(items)) + 1):
        # the stratum furthest below its share of n; the earlier name on a tie
        best = max((s for s in range(len(queues)) if taken[s] < len(queues[s])),
                   key=lambda s: (n * shares[s] - taken[s], -s))
        order.append(queues[best][taken[best]])
        taken[best] += 1
    return order


def stratified_sample(items: list[Item], limit: int | None, seed: int) -> list[Item]:
    """``limit`` items with every stratum kept at its share, prefix-stable in ``limit``.

    The first ``limit`` of :func:`sample_order`, returned in file order (module docstring).
    """
    if limit is None or limit >= len(items):
        return list(items)
    if limit < 1:
        raise InputError(f"--limit {limit} must be positive", "use 1 or more")
    return [items[i] for i in sorted(sample_order(items, seed, limit))]


def file_sha256(path: Path) -> str:
    """SHA-256 of a data file (recorded in ``run.json``)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
