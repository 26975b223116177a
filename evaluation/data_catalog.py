"""The data catalogue: every dataset factdebate evaluates on and every knowledge source its indexes
are built from, with official URLs, version, licence, the publisher's checksum and where each lands.

The entries are data (``evaluation/data_catalog.yaml``, its header names every field), checked
here when first read: a catalogue that names an unknown kind, a format no one imports with, a
converter that does not exist or a checksum that is not ``md5:``/``sha256:`` hex fails at once.
``factdebate data list`` prints it and ``factdebate data fetch NAME`` downloads an entry into the
data folder ``eval`` reads (``evaluation/datasets.resolve_data_dir``), laid out as the registry
reads it.

What a fetch writes is recorded in the data folder's :data:`FETCHED` file: per file (relative to
the folder) its SHA-256, size, the URL it came from, the catalogue entry, and for a converted file
the official file it was written from. ``run.json`` names every data file an eval read with its
SHA-256 and, when the fetch record vouches for the same bytes, where it was fetched from
(:func:`data_file_record`).

The project's own data files are the uniform JSONL (one record schema, docs/evaluation.md); there is no
converter from the official releases to that schema. ``evaluation/formats.py`` reads most official
record formats as they are, so a fetched release is only re-serialised one record per line where
the registry path is a ``.jsonl`` (:func:`to_json_lines`); releases that reader does not know are
fetched and marked with the converter they lack (``missing``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from difflib import get_close_matches
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from factdebate.core import json_input
from factdebate.core.errors import ConfigError, InputError
from factdebate.tools.sources import DUMP_FORMATS

CATALOG_FILE = Path(__file__).with_name("data_catalog.yaml")
FETCHED = "fetched.json"
"""File of a data folder recording what ``factdebate data fetch`` wrote there."""
KINDS = ("dataset", "knowledge-source")
IMPORT_FORMATS = DUMP_FORMATS
"""``--format`` names a knowledge source is imported with (the dumps ``tools/sources`` reads)."""
CONVERTERS = ("", "json-lines")
"""``""``: the official file is the file eval reads; ``json-lines``: :func:`to_json_lines`."""
_CHECKSUM = re.compile(r"^(md5:[0-9a-f]{32}|sha256:[0-9a-f]{64})$")
_ID_FIELDS = ("id", "uid", "_key")


@dataclass(frozen=True)
class CatalogEntry:
    """One downloadable dataset or knowledge source (fields: ``data_catalog.yaml``'s header)."""

    name: str
    kind: str
    urls: tuple[str, ...]
    version: str
    licence: str
    target: str
    """Where the downloaded file lands, relative to the data folder."""
    size: str | None = None
    size_bytes: int | None = None
    checksum: str | None = None
    """``md5:<hex>`` or ``sha256:<hex>`` as the publisher gives it; None when it gives none."""
    format: str | None = None
    unpack: str | None = None
    source_path: str | None = None
    convert: str | None = None
    reads: str | None = None
    missing: str | None = None
    note: str | None = None
    hub: dict[str, str] = field(default_factory=dict)

    @property
    def index_input(self) -> str:
        """What ``factdebate index NAME`` reads, relative to the data folder."""
        return self.source_path or self.target

    @property
    def eval_ready(self) -> bool:
        """A fetch leaves the file ``eval --dataset NAME`` reads (a converter exists)."""
        return self.kind == "dataset" and self.convert is not None

    def as_json(self) -> dict[str, Any]:
        """The entry as ``data list --json`` prints it."""
        data = {k: getattr(self, k) for k in (
            "name", "kind", "urls", "version", "size", "size_bytes", "licence", "checksum",
            "format", "target", "unpack", "source_path", "convert", "reads", "missing", "note")}
        return {**data, "urls": list(self.urls), "hub": dict(self.hub) or None}


def _entry(raw: Any, where: str) -> CatalogEntry:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ConfigError(f"{where}: an entry without a name", f"fix {CATALOG_FILE}")
    where = f"{where} ({raw['name']})"
    known = set(CatalogEntry.__dataclass_fields__)
    if set(raw) - known:
        raise ConfigError(f"{where}: unknown field(s) {sorted(set(raw) - known)}",
                          f"fix {CATALOG_FILE}")
    urls = raw.get("urls")
    if not isinstance(urls, list) or not urls or not all(
            isinstance(u, str) and u.startswith(("https://", "http://")) for u in urls):
        raise ConfigError(f"{where}: urls must be a list of http(s) URLs", f"fix {CATALOG_FILE}")
    entry = CatalogEntry(**{**raw, "urls": tuple(urls), "hub": raw.get("hub") or {}})
    problems = [
        entry.kind not in KINDS and f"kind {entry.kind!r} is not one of {KINDS}",
        entry.checksum is not None and not _CHECKSUM.match(str(entry.checksum))
        and f"checksum {entry.checksum!r} is not md5:<hex> or sha256:<hex>",
        entry.kind == "knowledge-source" and entry.format not in IMPORT_FORMATS
        and f"format {entry.format!r} is not one of {IMPORT_FORMATS}",
        entry.unpack not in (None, "zip") and f"unpack {entry.unpack!r} is not zip or null",
        entry.kind == "dataset" and entry.convert not in (*CONVERTERS, None)
        and f"convert {entry.convert!r} is not one of {CONVERTERS} or null",
        entry.kind == "dataset" and not entry.reads and "a dataset needs reads",
        entry.convert is None and entry.kind == "dataset" and not entry.missing
        and "a dataset without a converter must say what is missing",
        entry.hub and set(entry.hub) != {"repo_id", "repo_type", "filename", "revision"}
        and "hub needs repo_id, repo_type, filename, revision",
        (Path(entry.target).is_absolute() or ".." in Path(entry.target).parts)
        and "target must stay inside the data folder",
    ]
    found = [p for p in problems if p]
    if found:
        raise ConfigError(f"{where}: {found[0]}", f"fix {CATALOG_FILE}")
    return entry


@cache
def catalog() -> tuple[CatalogEntry, ...]:
    """Every entry, datasets first, in the file's order."""
    raw = yaml.safe_load(CATALOG_FILE.read_text(encoding="utf-8"))
    entries = tuple(_entry(item, f"{CATALOG_FILE.name} entry {i}") for i, item in enumerate(raw))
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise ConfigError(f"{CATALOG_FILE.name}: duplicate names", "give each entry its own name")
    return entries


def entry(name: str) -> CatalogEntry:
    """The entry called ``name``.

    Raises:
        InputError: No entry has that name (the closest names are suggested).
    """
    for item in catalog():
        if item.name == name:
            return item
    names = [e.name for e in catalog()]
    close = get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise InputError(f"no dataset or knowledge source is called {name!r}",
                     f"{hint}factdebate data list names them")


def is_knowledge_source(name: str) -> bool:
    """``name`` is a catalogue knowledge source."""
    return any(e.name == name and e.kind == "knowledge-source" for e in catalog())


def mirror_url(url: str, mirror: str) -> str:
    """``<mirror>/<host>/<path>`` of an official URL (its query dropped)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


# --- the fetch record ---------------------------------------------------------------------------
def read_fetched(folder: Path) -> dict[str, dict[str, Any]]:
    """``{relative path: record}`` of ``folder``'s :data:`FETCHED` ({} when there is none).

    Raises:
        InputError: The file is not a JSON object (named with its path).
    """
    path = folder / FETCHED
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})", "delete it and fetch again") from exc
    if not isinstance(data, dict) or not isinstance(data.get("files", {}), dict):
        raise InputError(f"{path}: expected {{\"files\": {{path: record}}}}",
                         "delete it and fetch again")
    return dict(data.get("files", {}))


def record_fetched(folder: Path, relpath: str, record: dict[str, Any]) -> None:
    """Add (or replace) the record of ``relpath`` in ``folder``'s :data:`FETCHED`, atomically."""
    files = read_fetched(folder)
    files[relpath] = {**record, "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    path = folder / FETCHED
    temp = path.with_name(f".{FETCHED}.{os.getpid()}.tmp")
    temp.write_text(json.dumps({"files": files}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temp, path)


def data_file_record(path: Path, sha256: str, data_dir: Path | None) -> dict[str, Any]:
    """``run.json``'s entry for a data file an eval read: its path and SHA-256, and the URL it was
    fetched from when ``data_dir``'s :data:`FETCHED` records it with the same SHA-256 (a
    converted file names the official URL and file it was written from)."""
    out: dict[str, Any] = {"path": str(path), "sha256": sha256, "fetched_from": None}
    if data_dir is None:
        return out
    try:
        rel = path.resolve().relative_to(data_dir.resolve()).as_posix()
        record = read_fetched(data_dir).get(rel)
    except (ValueError, InputError):  # outside the data folder, or an unreadable record
        return out
    if not record:
        return out
    if record.get("sha256") != sha256:
        return {**out, "changed_since_fetch_from": record.get("url")}
    extra = {k: record[k] for k in ("entry", "converted_from", "converter", "fetched_at")
             if record.get(k)}
    return {**out, "fetched_from": record.get("url"), **extra}


# --- the converter ------------------------------------------------------------------------------
def _records(source: Path) -> Iterator[tuple[str, Any]]:
    """``(key, record)`` of a ``.json`` list or object, or of a JSON-lines file (key: line index
    counting non-blank lines from 0)."""
    if source.suffix == ".json":
        data = json_input.loads(source.read_text(encoding="utf-8-sig"))
        if isinstance(data, dict):
            yield from ((str(k), v) for k, v in data.items())
        elif isinstance(data, list):
            yield from ((str(i), v) for i, v in enumerate(data))
        else:
            raise InputError(f"{source}: expected a JSON list or object", "fetch the file again")
        return
    with source.open(encoding="utf-8-sig") as fh:
        n = 0
        for line in fh:
            if line.strip():
                yield str(n), json_input.loads(line)
                n += 1


def to_json_lines(source: Path, dest: Path) -> int:
    """Write the official release ``source`` to ``dest`` one record per line; returns the count.

    Records are written as they are; one without an id (``id``, ``uid``, ``_key``) gets
    ``_key`` = its position (a list index, an object key such as PubMedQA's PMID, or a line
    number), which is how ``evaluation/formats.py`` numbers the entries of a ``.json`` file.
    No field is renamed or converted: the reader reads the official records.

    Raises:
        InputError: ``source`` does not parse as JSON, or an entry is not an object.
    """
    temp = dest.with_name(f".{dest.name}.tmp")
    count = 0
    try:
        with temp.open("w", encoding="utf-8") as out:
            for key, record in _records(source):
                if not isinstance(record, dict):
                    raise InputError(f"{source}, entry {key}: expected a JSON object",
                                     "fetch the official file again")
                if not any(f in record for f in _ID_FIELDS):
                    record = {"_key": key, **record}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        temp.unlink(missing_ok=True)
        raise InputError(f"{source}: not valid JSON ({exc})", "fetch the official file again") \
            from exc
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    os.replace(temp, dest)
    return count


# --- documentation ------------------------------------------------------------------------------
def _cell(text: Any) -> str:
    return "—" if text in (None, "") else str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table() -> str:
    """The catalogue as the Markdown tables of the documentation (``docs/data.md``)."""
    lines: list[str] = []
    for kind, title in (("dataset", "Datasets"), ("knowledge-source", "Knowledge sources")):
        lines += [f"### {title}", "",
                  "| name | version | licence | size | checksum | lands in | eval / index |",
                  "|---|---|---|---|---|---|---|"]
        for e in catalog():
            if e.kind != kind:
                continue
            if kind == "dataset":
                use = (f"`{e.reads}`" if e.convert is not None else f"missing: {e.missing}")
            else:
                use = f"`--format {e.format}`" + (f", unpacked ({e.unpack})" if e.unpack else "")
            lines.append(f"| [`{e.name}`]({e.urls[0]}) | {_cell(e.version)} | {_cell(e.licence)} "
                         f"| {_cell(e.size)} | {_cell(e.checksum)} | `{e.target}` | {_cell(use)} |")
        lines.append("")
    return "\n".join(lines)
