"""Readers for benchmark files: the shared JSONL schema and the official release formats.

Every record becomes one :class:`Item` whose ``input`` is the ``DebateInput`` a framework receives.
Formats are recognised per record by their keys, so a user online can point ``--dataset`` at an
original release file as well as at a file in the shared schema (its fields: the Evaluation page,
docs/evaluation.md, "Dataset record schema"):

* shared schema: ``{id, dataset, task, claim|question, label, answers, options, documents, ...}``
* FEVER ``*.jsonl`` (``id, verifiable, label, claim, evidence``), FEVEROUS/ProgramFC ``dev.json``
* HoVer ``*.json`` list (``uid, claim, supporting_facts, label, num_hops``)
* AVeriTeC ``*.json`` list (``claim, label, questions, ...``; ids are list positions)
* PubMedQA ``ori_pqal.json`` (``{pmid: {QUESTION, CONTEXTS, LABELS, final_decision}}``)
* MedQA ``*.jsonl`` (``question, options, answer_idx, answer``)
* RAMDocs ``*.jsonl`` (``question, documents, gold_answers, wrong_answers``)

A malformed line or record raises ``InputError`` naming the file and the line (or list position).
Every field a reader uses is checked first (:func:`check_fields`): a value of the wrong type
(``options: 5``, ``documents: "text"``, ``answers: "abc"``, which would be read as three answers
``a``, ``b``, ``c``, a ``num_hops`` that is not a number, an id that is a list) stops the load with
one line naming the file, the line, the item and the field, instead of a traceback or an item that
is silently something else. A claim or question over ``MAX_CLAIM_CHARS`` (which a run refuses),
an answer option as long, and an id over :data:`MAX_ID_CHARS` are refused the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factdebate.core import input_limits, json_input
from factdebate.core.context import MAX_CLAIM_CHARS
from factdebate.core.errors import InputError
from factdebate.core.labels import get_label_set
from factdebate.core.state import DebateInput, Evidence

ANSWERS_TASK = "open_qa"
"""Task (label set without labels) of multi-answer items (RAMDocs): scored against their gold
answers; frameworks answer it with ``answers`` (MADAM-RAG)."""


@dataclass(frozen=True)
class Item:
    """One benchmark item: what the framework sees plus what it is scored against."""

    id: str
    """Unique id within the dataset (thread ids and results rows are keyed on it)."""
    dataset: str
    """Registered dataset name (or the file stem of an ad-hoc file)."""
    input: DebateInput
    """The framework's input: claim/question, task, options, documents."""
    gold_label: str | None
    """Gold label on the task's label set (None for multi-answer tasks)."""
    gold_answers: tuple[str, ...] = ()
    """Gold answers (QA tasks; all valid answers for RAMDocs)."""
    wrong_answers: tuple[str, ...] = ()
    """Misinformation answers a correct RAMDocs output must not contain."""
    subset: str = ""
    """Sub-population reported separately (HoVer ``2hop``/``3hop``/``4hop``)."""
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    """Anything else of the record (not shown to the model)."""

    @property
    def stratum(self) -> str:
        """Key of stratified sampling: gold label (or answer count) and subset."""
        key = self.gold_label if self.gold_label is not None else f"{len(self.gold_answers)}ans"
        return f"{key}|{self.subset}"


def read_records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` pairs of a ``.jsonl`` or ``.json`` file; ``where`` names file and line."""
    if not path.is_file():
        raise InputError(f"dataset file {path} does not exist", "check --data-dir or the file path")
    if path.suffix == ".json":
        yield from _json_records(path)
        return
    with path.open("rb") as fh:
        limit = input_limits.limit("corpus_line_bytes")
        for lineno, raw in enumerate(input_limits.bounded_lines(fh, limit), 1):
            where = f"{path}, line {lineno}"
            if isinstance(raw, input_limits.Oversize):
                raise InputError(f"{where}: {raw.describe()}", "fix or remove that line")
            line = _decode(raw, where)
            if not line.strip():
                continue
            try:
                record = json_input.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: not valid JSON ({exc.msg})",
                                 "fix or remove that line") from exc
            if not isinstance(record, dict):
                raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}",
                                 "one object per line")
            yield where, record


def _decode(raw: bytes, where: str) -> str:
    """One line as text; a non-UTF-8 byte is reported with its line and byte offset."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}, byte {exc.start}: not valid UTF-8 ({raw[exc.start]:#04x})",
                         "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)") from exc


def _json_records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    limit = input_limits.limit("dataset_json_bytes")
    if path.stat().st_size > limit:
        raise InputError(f"{path}: a {path.stat().st_size}-byte .json dataset, over the limit of "
                         f"{limit} bytes read whole (FACTDEBATE_DATASET_MAX_JSON_BYTES)",
                         "convert it to JSON lines (one record per line), or raise the limit")
    try:
        data = json_input.loads(_decode(path.read_bytes(), str(path)))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})",
                         "fix the file") from exc
    if isinstance(data, dict):  # PubMedQA: {pmid: record}
        pairs = [(str(k), v) for k, v in data.items()]
    elif isinstance(data, list):
        pairs = [(str(i), v) for i, v in enumerate(data)]
    else:
        raise InputError(f"{path}: expected a JSON list or object", "use a release file")
    for key, record in pairs:
        if not isinstance(record, dict):
            raise InputError(f"{path}, entry {key}: expected a JSON object", "use a release file")
        yield f"{path}, entry {key}", {"_key": key, **record}


def to_item(record: dict[str, Any], *, dataset: str, task: str, where: str) -> Item:
    """Map one record (any supported format) onto an ``Item``; bad records name ``where`` and,
    once its id is read, the item."""
    try:
        item_id = _record_id(record, dataset, where)
        where = f"{where}, item {item_id!r}"
        check_fields(record, task, where)
        if "gold_answers" in record:
            return _ramdocs(record, dataset, where)
        if "answer_idx" in record:
            return _medqa(record, dataset, where)
        if "QUESTION" in record:
            return _pubmedqa_official(record, dataset, where)
        return _shared_or_claim(record, dataset, task, where)
    except KeyError as exc:
        raise InputError(f"{where}: record lacks field {exc.args[0]!r}",
                         "use the shared schema or an official release file") from exc


# -- the fields every reader uses, checked before any is read -------------------------------------
MAX_ID_CHARS = 200
"""Longest item id (ids name checkpoint threads and results rows; real ids have under 50)."""

MISSING = object()
"""A field that is absent (as :func:`describe` names it)."""

_RECORD_REMEDY = ("fix the record (record fields: docs/evaluation.md, "
                  "\"Dataset record schema\")")


def describe(value: Any) -> str:
    """A value as an error names it: its JSON type and a short excerpt."""
    if value is MISSING or value is None:
        return "missing" if value is MISSING else "null"
    kind = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__)
    text = repr(value) if not isinstance(value, str) or len(value) <= 80 else repr(value[:80])
    more = f", {len(value):,} characters" if isinstance(value, str) and len(value) > 40 else ""
    return f"{kind} ({text[:40]}{'...' if len(text) > 40 else ''}{more})"


def field_error(where: str, field: str, value: Any, expected: str) -> InputError:
    """The one-line error of a record whose ``field`` holds ``value`` instead of ``expected``."""
    return InputError(f"{where}: {field} is {describe(value)}, not {expected}", _RECORD_REMEDY)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _strings(record: dict[str, Any], field: str, where: str, *, required: bool = False) -> None:
    value = record.get(field, MISSING)
    if value is MISSING or value is None:
        if required:
            raise field_error(where, field, value, "a list of strings")
        return
    if not isinstance(value, list):
        raise field_error(where, field, value, "a list of strings")
    for i, element in enumerate(value):
        if not isinstance(element, str):
            raise field_error(where, f"{field}[{i}]", element, "a string")


def _string(record: dict[str, Any], field: str, where: str, expected: str = "a string") -> None:
    value = record.get(field)
    if value is not None and not isinstance(value, str):
        raise field_error(where, field, value, expected)


def _options(record: dict[str, Any], task: str, where: str) -> None:
    options = record.get("options", MISSING)
    expected = 'answer options {"A": text, ...}'
    if options is MISSING or options is None or options == {}:
        if task == "medqa" or "answer_idx" in record:
            raise field_error(where, "options", options, expected)
        return
    if not isinstance(options, dict):
        raise field_error(where, "options", options, expected)
    for key, text in options.items():
        if not isinstance(text, str) or not text.strip():
            raise field_error(where, f"options[{key!r}]", text, "an option text (a string)")
        if len(text) > MAX_CLAIM_CHARS:
            raise InputError(f"{where}: options[{key!r}] has {len(text):,} characters, over the "
                             f"limit of {MAX_CLAIM_CHARS}", "shorten it")


def _documents_field(record: dict[str, Any], where: str) -> None:
    documents = record.get("documents")
    expected = 'a list of documents {"text": ..., "title": ...}'
    if documents is None:
        return
    if not isinstance(documents, list):
        raise field_error(where, "documents", documents, expected)
    for i, doc in enumerate(documents):
        if not isinstance(doc, dict):
            raise field_error(where, f"documents[{i}]", doc, 'a document {"text": ..., "title": ...}')
        if not isinstance(doc.get("text"), str):
            raise field_error(where, f"documents[{i}].text", doc.get("text", MISSING),
                              "the document's text (a string)")
        for name in ("title", "url"):
            if doc.get(name) is not None and not isinstance(doc[name], str):
                raise field_error(where, f"documents[{i}].{name}", doc[name], "a string")


def check_fields(record: dict[str, Any], task: str, where: str) -> None:
    """Raise ``InputError`` naming ``where`` and the field when a field a reader uses has the
    wrong type (every format: the shared schema's ``claim``/``question``, ``label``, ``answers``,
    ``wrong_answers``, ``options``, ``documents``, ``num_hops``, ``split``, ``dataset``, ``task``;
    RAMDocs' ``gold_answers``; MedQA's ``answer_idx``/``answer``; PubMedQA's ``QUESTION``,
    ``CONTEXTS``, ``LABELS``, ``final_decision``). Gold evidence is checked by
    ``datasets.check_gold_evidence``; fields no reader uses (``meta``, ``label_original`` ...) are
    left alone."""
    for name in ("claim", "question", "QUESTION"):
        _string(record, name, where, "a claim or question (a string)")
    text = next((record[name] for name in ("claim", "question", "QUESTION")
                 if isinstance(record.get(name), str) and record[name].strip()), None)
    if text is not None and len(text.strip()) > MAX_CLAIM_CHARS:
        name = next(n for n in ("claim", "question", "QUESTION") if record.get(n) is text)
        raise InputError(f"{where}: {name} has {len(text.strip()):,} characters, over the limit "
                         f"of {MAX_CLAIM_CHARS}", "shorten it or split it into several claims")
    label = record.get("label")
    if label is not None and not isinstance(label, str | bool):
        raise field_error(where, "label", label, "a label (a string)")
    for name in ("answer_idx", "final_decision"):
        _string(record, name, where, "a label (a string)")
    for name in ("answer", "split", "dataset", "task"):
        _string(record, name, where)
    for name in ("answers", "wrong_answers", "LABELS"):
        _strings(record, name, where)
    if "gold_answers" in record:
        _strings(record, "gold_answers", where, required=True)
    if "QUESTION" in record:
        _strings(record, "CONTEXTS", where, required=True)
    _options(record, task, where)
    _documents_field(record, where)
    hops = record.get("num_hops")
    if hops is not None and not (_is_int(hops) and hops >= 0):
        raise field_error(where, "num_hops", hops, "a hop count (an integer)")


def _text(record: dict[str, Any], where: str) -> str:
    text = record.get("claim") or record.get("question")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: no claim or question text", "every record needs one")
    return text


def _record_id(record: dict[str, Any], dataset: str, where: str) -> str:
    name = next((n for n in ("id", "uid", "_key") if n in record), None)
    if name is None:
        raise KeyError("id")
    raw = record[name]
    if not (_is_int(raw) or isinstance(raw, str) and raw.strip()):
        raise field_error(where, name, raw, "an item id (a string or integer)")
    raw = str(raw)
    if len(raw) > MAX_ID_CHARS:
        raise InputError(f"{where}: {name} has {len(raw):,} characters, over the limit of "
                         f"{MAX_ID_CHARS}", "use a shorter id")
    if "dataset" in record:  # shared schema: ids are already unique and prefixed
        return raw
    family = re.sub(r"_\dhop$", "", dataset)  # hover_3hop items keep their hover ids
    return raw if raw.startswith(f"{family}-") else f"{family}-{raw}"


def gold_label(raw: Any, task: str, where: str) -> str:
    """``raw`` normalised onto the label set ``task`` (``supports``, ``SUPPORTED``, ``true`` ...)."""
    label = get_label_set(task).normalise(str(raw)) if raw is not None else None
    if label is None:
        shown = repr(raw) if len(repr(raw)) <= 60 else describe(raw)
        raise InputError(f"{where}: label {shown} is not on the {task!r} label set",
                         f"labels: {', '.join(get_label_set(task).labels)}")
    return label


def _documents(item_id: str, docs: list[dict[str, Any]]) -> list[Evidence]:
    return [
        Evidence(id=f"{item_id}-d{i}", title=str(d.get("title") or ""), text=str(d.get("text", "")),
                 source="item", url=str(d.get("url") or ""), score=0.0)
        for i, d in enumerate(docs)
    ]


def _shared_or_claim(record: dict[str, Any], dataset: str, task: str, where: str) -> Item:
    item_id = _record_id(record, dataset, where)
    text = _text(record, where)
    inp = DebateInput(claim=text, task=task)
    if record.get("options"):
        inp["options"] = {str(k): str(v) for k, v in record["options"].items()}
    if task == ANSWERS_TASK:
        label = None
    else:
        label = gold_label(record.get("label"), task, where)
    if record.get("documents"):
        inp["documents"] = _documents(item_id, record["documents"])
    hops = record.get("num_hops")
    return Item(
        id=item_id, dataset=dataset, input=inp, gold_label=label,
        gold_answers=tuple(str(a) for a in record.get("answers") or ()),
        wrong_answers=tuple(str(a) for a in record.get("wrong_answers") or ()),
        subset=f"{hops}hop" if hops else "", meta={"split": record.get("split", "")},
    )


def _ramdocs(record: dict[str, Any], dataset: str, where: str) -> Item:
    if "id" not in record and "_key" not in record:
        raise InputError(f"{where}: RAMDocs record without an id", "number the records")
    item_id = _record_id(record, dataset, where)
    inp = DebateInput(claim=_text(record, where), task=ANSWERS_TASK,
                      documents=_documents(item_id, record["documents"]))
    return Item(id=item_id, dataset=dataset, input=inp, gold_label=None,
                gold_answers=tuple(map(str, record["gold_answers"])),
                wrong_answers=tuple(map(str, record.get("wrong_answers") or ())))


def _medqa(record: dict[str, Any], dataset: str, where: str) -> Item:
    item_id = _record_id(record, dataset, where)
    inp = DebateInput(claim=_text(record, where), task="medqa",
                      options={str(k): str(v) for k, v in record["options"].items()})
    return Item(id=item_id, dataset=dataset, input=inp,
                gold_label=gold_label(record["answer_idx"], "medqa", where),
                gold_answers=(str(record.get("answer", "")),))


def _pubmedqa_official(record: dict[str, Any], dataset: str, where: str) -> Item:
    item_id = _record_id(record, dataset, where)
    docs = [{"title": lab, "text": txt}
            for lab, txt in zip(record.get("LABELS") or [], record["CONTEXTS"], strict=False)]
    inp = DebateInput(claim=str(record["QUESTION"]), task="pubmedqa",
                      documents=_documents(item_id, docs))
    label = gold_label(record["final_decision"], "pubmedqa", where)
    return Item(id=item_id, dataset=dataset, input=inp, gold_label=label, gold_answers=(label,))
