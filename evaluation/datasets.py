"""The dataset registry (name -> file, task, version) and stratified, seeded sampling.

Datasets are read from a data directory: ``--data-dir``, ``FACTDEBATE_DATA_DIR``, else
``$FACTDEBATE_HOME/data``, which ``factdebate data fetch NAME`` fills (``evaluation/data_catalog.py``)
in the layout the registry reads; nothing is copied into the repository.
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
``gold.evidence`` to score the cited passages; the framework's input never holds it. It is checked
first (:func:`check_gold_evidence`): a malformed field (``evidence_sets: 5``, a set that is a
string, a page that is a number or a list ...) would otherwise be scored as "no gold" or as a page
titled ``"5"`` and change the FEVER score without a word, so it stops the load with one line naming
the file, the line, the item and the field.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from factdebate.core import json_input
from factdebate.core.caching import ProcessCache
from factdebate.core.context import INDEX_NAME as context_index_name
from factdebate.core.errors import ConfigError, InputError
from factdebate.core.labels import get_label_set
from factdebate.core.registry import Registry
from factdebate.evaluation.evidence_metrics import gold_evidence, split_feverous_id
from factdebate.evaluation.formats import ANSWERS_TASK, Item, describe, read_records, to_item
from factdebate.tools.index_state import MANIFEST

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
    index: str = ""
    """Name of the index holding the dataset's evidence (``$FACTDEBATE_HOME/indexes/<name>``;
    :func:`dataset_index`); "" when it names none."""


DATASETS: Registry[DatasetSpec] = Registry("dataset")


def _add(name: str, path: str, task: str, version: str, description: str,
         aliases: tuple[str, ...] = (), num_hops: int | None = None, index: str = "") -> None:
    spec = DatasetSpec(name, path, task, version, description, num_hops, index)
    DATASETS.register(name, spec, aliases=aliases, version=version, task=task)


_add("fever", "fever/paper_dev.jsonl", "fever", "fever-1.0-paper_dev",
     "FEVER 1.0 paper_dev, 3-way (SUPPORTS/REFUTES/NEI)", index="fever-wiki")
_add("feverous", "feverous/dev.jsonl", "binary", "feverous-s-dev-programfc",
     "FEVEROUS-S dev as released by ProgramFC, binary", index="feverous-db")
_add("hover", "hover/dev.jsonl", "binary", "hover-1.1-dev", "HoVer v1.1 dev, binary, 2-4 hops",
     index="hover-wiki")
for _hops in (2, 3, 4):
    _add(f"hover_{_hops}hop", "hover/dev.jsonl", "binary", "hover-1.1-dev",
         f"HoVer v1.1 dev, {_hops}-hop claims only", num_hops=_hops, index="hover-wiki")
_add("averitec", "averitec/dev.jsonl", "averitec", "averitec-dev",
     "AVeriTeC dev, 4-way (adds CONFLICTING)", index="averitec-store")
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
     "Tool-MAD paper's 200-item FEVER sample (train ids)", index="fever-wiki")
_add("toolmad_faviq", "toolmad_samples/faviq.jsonl", "binary", "toolmad-sample-faviq-200",
     "Tool-MAD paper's 200-item FaVIQ sample, binary", aliases=("faviq",))


def default_data_dir() -> Path:
    """``$FACTDEBATE_HOME/data``: where ``factdebate data fetch`` puts what ``eval`` reads."""
    from factdebate.core.context import factdebate_home

    return factdebate_home() / "data"


def resolve_data_dir(explicit: str | Path | None = None) -> Path:
    """``--data-dir``, else ``$FACTDEBATE_DATA_DIR``, else :func:`default_data_dir`; a missing
    folder is a ``ConfigError`` naming how to fill it."""
    raw = explicit or os.environ.get(DATA_DIR_ENV)
    if not raw:
        path = default_data_dir().expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(f"the data folder {path} does not exist",
                              "fetch a dataset into it with factdebate data fetch NAME (factdebate "
                              f"data list names them), or pass --data-dir DIR or set {DATA_DIR_ENV}")
        return path
    path = Path(raw).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"data directory {path} does not exist",
                          f"pass --data-dir DIR or set {DATA_DIR_ENV} to an existing folder, or "
                          "leave both out to use the folder factdebate data fetch fills")
    return path


def existing_data_dir(explicit: str | Path | None = None) -> Path | None:
    """The data folder :func:`resolve_data_dir` would use, when it exists (None otherwise): for
    lookups that are optional (``indexes.json``, ``corpus/``), so a folder filled by
    ``factdebate data fetch`` is seen without ``--data-dir`` too."""
    raw = explicit or os.environ.get(DATA_DIR_ENV)
    path = Path(raw).expanduser() if raw else default_data_dir().expanduser()
    return path.resolve() if path.is_dir() else None


def dataset_spec(name: str, data_dir: Path | None = None) -> tuple[DatasetSpec, Path]:
    """Spec and file of a registered name or of a file path (``.jsonl``/``.json``)."""
    if name.endswith((".jsonl", ".json")):
        path = Path(name).expanduser().resolve()
        return DatasetSpec(path.stem, str(path), "", f"file:{path.name}", f"ad-hoc file {path}"), path
    spec = DATASETS.get(name)
    return spec, resolve_data_dir(data_dir) / spec.path


INDEXES = "indexes"
"""Folder under ``$FACTDEBATE_HOME`` holding indexes by name (``<name>/`` each an index folder)."""
DATA_INDEXES = "indexes.json"
"""File of a data folder naming the index each dataset searches: ``{"fever": "fever-wiki",
"hover": "/data/indexes/hover"}`` (a name, or a folder)."""
INDEX_NAME = context_index_name
"""A plain index name (``factdebate index --name``, ``eval --index``): ``core.context``'s rule."""


def index_folder(name_or_folder: str) -> Path:
    """The folder of an index named by ``eval --index``, ``indexes.json`` or a run's config: a
    plain name (letters, digits, ``.``, ``_``, ``-``) is ``$FACTDEBATE_HOME/indexes/<name>``
    unless a folder of that name here holds an index; anything with a path separator (or ``~``)
    is that folder. Unlike ``core.context.resolve_index`` the index need not exist yet (this
    also names the folder ``factdebate index --name`` builds).

    Raises:
        InputError: ``name_or_folder`` is empty.
    """
    from factdebate.core.context import indexes_home

    text = name_or_folder.strip()
    if not text:
        raise InputError("the index name is empty", "give an index name or folder")
    here = Path(text)
    if INDEX_NAME.match(text) and not (here / "manifest.json").is_file():
        return indexes_home() / text  # as core.context.resolve_index: a dump folder of that
        # name in the current directory does not hide the index
    return here.expanduser().absolute()


def dataset_index(name: str, data_dir: Path | str | None = None) -> tuple[str, str] | None:
    """``(index name or folder, who named it)`` of dataset ``name``: the data folder's
    :data:`DATA_INDEXES` entry, else the registry's ``index`` when that index exists; None when
    neither names one (or the dataset is a file path the data folder does not name).

    Raises:
        InputError: ``indexes.json`` is not a JSON object of strings (named with its path).
    """
    folder = existing_data_dir(data_dir)
    if folder is not None and (folder / DATA_INDEXES).is_file():
        path = folder / DATA_INDEXES
        try:
            names = json_input.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: not valid JSON ({exc})", 'write {"fever": "fever-wiki"}') \
                from exc
        if not isinstance(names, dict):
            raise InputError(f"{path}: expected a JSON object of dataset -> index name",
                             'write {"fever": "fever-wiki"}')
        key = name if name in names else Path(name).stem if name.endswith((".jsonl", ".json")) \
            else DATASETS.resolve(name) if name in DATASETS else name
        value = names.get(key)
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"{path}: {key} is {describe(value)}, not an index name or "
                                 "folder", 'write {"fever": "fever-wiki"}')
            return value, f"{path}"
    if name in DATASETS:
        index = DATASETS.get(name).index
        if index and (index_folder(index) / MANIFEST).is_file():
            return index, f"the dataset {DATASETS.resolve(name)!r}"
    return None


def _infer_task(record: dict, default: str) -> str:
    """Task of an ad-hoc file's record: its registered dataset's task, else from its ``task``
    (fields that are not strings are left to ``formats.check_fields`` to name)."""
    dataset, task = record.get("dataset"), record.get("task")
    if isinstance(dataset, str) and dataset in DATASETS:
        return DATASETS.get(dataset).task
    return {"qa_mc": "medqa", "qa_yesno": "pubmedqa",
            "qa_conflict": ANSWERS_TASK}.get(task if isinstance(task, str) else "", default)


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
        task = spec.task or _infer_task(record, "fever")
        item = to_item(record, dataset=spec.name, task=task, where=where)  # every field checked
        if spec.num_hops is not None and item.subset != f"{spec.num_hops}hop":
            continue
        check_gold_evidence(record, spec.name, f"{where}, item {item.id!r}")
        gold = gold_evidence(record, spec.name)
        if gold is not None:  # kept for scoring the cited evidence, never shown to the model
            item = replace(item, meta={**item.meta, "gold_evidence": gold})
        claim = averitec_claim_id(record, item.id, spec.name)
        if claim is not None:  # its knowledge-store pool, where the index has pools
            item = replace(item, meta={**item.meta, "claim_id": claim})
        if item.id in seen:
            raise InputError(f"{where}: duplicate id {item.id!r}", "ids must be unique")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise InputError(f"dataset {name!r} ({path}) has no items", "check the file")
    return items


def averitec_claim_id(record: dict[str, Any], item_id: str, dataset: str) -> str | None:
    """The AVeriTeC claim id of a record (its knowledge store's pool, ``<claim_id>.json``): the
    record's ``claim_id``, else the number its id ends with (``averitec-dev-12`` -> ``12``; a
    release file's list position); None for other datasets."""
    family = str(record.get("dataset") or dataset or "").lower()
    if not family.startswith("averitec"):
        return None
    if record.get("claim_id") is not None:
        return str(record["claim_id"])
    match = re.search(r"(\d+)$", item_id)
    return match.group(1) if match else None


_SETS_SHAPE = 'a list of sets, each a list of {"page": title, "sent_id": number}'
_SHAPE_REMEDY = ("fix the record (gold evidence shapes: docs/evaluation.md, \"Dataset record "
                 "schema\")")


_MISSING = object()


def _what(value: Any) -> str:
    """A value as an error names it (``formats.describe``)."""
    return "missing" if value is _MISSING else describe(value)


def _bad(where: str, field: str, value: Any, expected: str) -> InputError:
    return InputError(f"{where}: gold evidence {field} is {_what(value)}, not {expected}",
                      _SHAPE_REMEDY)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _title(where: str, field: str, value: Any, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise _bad(where, field, value, "a page title (a non-empty string)")


def _sentence(where: str, field: str, value: Any) -> None:
    if value is not None and not _is_int(value):
        raise _bad(where, field, value, "a sentence number (an integer or null)")


def check_gold_evidence(record: dict[str, Any], dataset: str, where: str) -> None:
    """Raise ``InputError`` naming ``where`` and the field when a record's gold evidence is malformed.

    Checks every shape ``evidence_metrics.gold_evidence`` reads, in the same order (the first that
    applies decides): shared-schema ``evidence_sets`` (null or a list of sets, each a list of
    ``{page: title, sent_id: int | null}``), a HoVer release's ``supporting_facts`` (``[title,
    int]`` pairs), a FEVER release's ``evidence`` (groups of ``[annotation, evidence, page,
    sentence]`` with page and sentence both null for NOT ENOUGH INFO), ProgramFC FEVEROUS text,
    a SciFact release's ``{doc_id: [{sentences: [int]}]}``, and a shared-schema ``evidence`` list
    of FEVEROUS ``{title, text}`` or SciFact ``{doc_id, sentences}`` objects. Other ``evidence``
    lists (AVeriTeC's question-answer pairs) are not gold evidence and are left alone.
    """
    if "evidence_sets" in record:
        sets = record["evidence_sets"]
        if not sets and _verifiable(record):  # would be scored as a claim without evidence
            label = record.get("label")
            raise InputError(f"{where}: gold evidence evidence_sets is {_what(sets)} on a {label} "
                             "claim, not a list of at least one evidence set (only NOT ENOUGH "
                             "INFO claims have none)", _SHAPE_REMEDY)
        if sets is None:
            return
        if not isinstance(sets, list):
            raise _bad(where, "evidence_sets", sets, _SETS_SHAPE)
        for i, group in enumerate(sets):
            if not isinstance(group, list):
                raise _bad(where, f"evidence_sets[{i}]", group,
                           'a list of {"page": title, "sent_id": number}')
            for j, element in enumerate(group):
                field = f"evidence_sets[{i}][{j}]"
                if not isinstance(element, dict):
                    raise _bad(where, field, element, 'an object {"page": title, "sent_id": number}')
                _title(where, f"{field}.page", element.get("page", _MISSING))
                _sentence(where, f"{field}.sent_id", element.get("sent_id"))
        return
    facts = record.get("supporting_facts")
    if isinstance(facts, list):
        for i, fact in enumerate(facts):
            if not isinstance(fact, list) or not 1 <= len(fact) <= 2:
                raise _bad(where, f"supporting_facts[{i}]", fact, "a [title, sentence number] pair")
            _title(where, f"supporting_facts[{i}][0]", fact[0])
            if len(fact) > 1:
                _sentence(where, f"supporting_facts[{i}][1]", fact[1])
        return
    evidence = record.get("evidence")
    if "verifiable" in record and isinstance(evidence, list):  # FEVER release
        for i, group in enumerate(evidence):
            if not isinstance(group, list):
                raise _bad(where, f"evidence[{i}]", group, "a list of FEVER evidence entries")
            for j, entry in enumerate(group):
                field = f"evidence[{i}][{j}]"
                if not isinstance(entry, list) or len(entry) != 4:
                    raise _bad(where, field, entry, "[annotation id, evidence id, page, sentence]")
                _title(where, f"{field}[2]", entry[2], optional=True)
                _sentence(where, f"{field}[3]", entry[3])
        if _verifiable(record) and not any(isinstance(e, list) and e[2] is not None
                                           for group in evidence for e in group):
            raise InputError(f"{where}: gold evidence evidence is {_what(evidence)} with no page "
                             f"on a {record.get('label')} claim (only NOT ENOUGH INFO claims "
                             "have none)", _SHAPE_REMEDY)
        return
    if isinstance(evidence, str) or evidence is None:  # ProgramFC FEVEROUS text, or none
        return
    if not isinstance(evidence, list | dict):  # no release writes evidence as a number
        raise _bad(where, "evidence", evidence, "a list of evidence objects (or a SciFact "
                   "{doc_id: rationales} object)")
    if isinstance(evidence, dict):  # SciFact release: {doc_id: [{sentences, label}]}
        for doc, rationales in evidence.items():
            if not isinstance(rationales, list):
                raise _bad(where, f"evidence[{doc!r}]", rationales, "a list of rationales")
            for i, rationale in enumerate(rationales):
                _rationale(where, f"evidence[{doc!r}][{i}]", rationale)
        return
    family = dataset.lower()
    if isinstance(record.get("dataset"), str):
        family = record["dataset"].lower()
    if not isinstance(evidence, list):
        if family in ("feverous", "scifact"):
            raise _bad(where, "evidence", evidence, "a list of evidence objects")
        return
    if evidence and all(isinstance(e, dict) and "content" in e for e in evidence):
        _feverous_release(where, evidence)
        return
    feverous = family == "feverous" or any(
        isinstance(e, dict) and "title" in e and "text" in e for e in evidence)
    scifact = family == "scifact" or any(isinstance(e, dict) and "doc_id" in e for e in evidence)
    for i, element in enumerate(evidence):
        field = f"evidence[{i}]"
        if feverous:
            if not isinstance(element, dict):
                raise _bad(where, field, element, 'an object {"title": page, "text": sentence}')
            _title(where, f"{field}.title", element.get("title", _MISSING))
            if not isinstance(element.get("text"), str):
                raise _bad(where, f"{field}.text", element.get("text", _MISSING),
                           "a sentence (a string)")
        elif scifact:
            if not isinstance(element, dict):
                raise _bad(where, field, element, 'an object {"doc_id": id, "sentences": [...]}')
            doc = element.get("doc_id", _MISSING)
            if not (_is_int(doc) or isinstance(doc, str) and doc.strip()):
                raise _bad(where, f"{field}.doc_id", doc, "a document id (a string or integer)")
            _rationale(where, field, element)


def _verifiable(record: dict[str, Any]) -> bool:
    """The record's gold label says SUPPORTS or REFUTES (so it must have gold evidence sets)."""
    label = record.get("label")
    if not isinstance(label, str):
        return False
    return get_label_set("fever").normalise(label) in ("SUPPORTS", "REFUTES")


def _feverous_release(where: str, evidence: list[Any]) -> None:
    """FEVEROUS release evidence: ``[{content: ["Title_sentence_3", ...], context: {...}}]``."""
    for i, group in enumerate(evidence):
        content = group.get("content")
        if not isinstance(content, list):
            raise _bad(where, f"evidence[{i}].content", content,
                       'a list of element ids ("Title_sentence_3", "Title_cell_0_1_2")')
        for j, element in enumerate(content):
            if not isinstance(element, str) or split_feverous_id(element)[1] is None:
                raise _bad(where, f"evidence[{i}].content[{j}]", element,
                           'an element id such as "Title_sentence_3" or "Title_cell_0_1_2"')


def _rationale(where: str, field: str, rationale: Any) -> None:
    if not isinstance(rationale, dict):
        raise _bad(where, field, rationale, 'an object {"sentences": [numbers]}')
    sentences = rationale.get("sentences")
    if sentences is None:
        return
    if not isinstance(sentences, list):
        raise _bad(where, f"{field}.sentences", sentences, "a list of sentence numbers")
    for k, sentence in enumerate(sentences):
        if not _is_int(sentence):
            raise _bad(where, f"{field}.sentences[{k}]", sentence, "a sentence number (an integer)")


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
