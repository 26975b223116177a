"""Build the vector (Milvus) and keyword (tantivy) indexes from one JSONL passage corpus.

The papers' official dumps (FEVER wiki-pages, the FEVEROUS database, HoVer's HotpotQA abstracts,
AVeriTeC's knowledge store, Wikipedia parquet) are read by ``tools/sources`` and indexed in one
streaming, resumable pass by ``tools/sources/build.py``, which shares this module's staging,
swap and target checks.

Corpus format: one JSON object per line with non-empty ``doc_id`` (string or integer), ``title`` and
``text`` strings; an optional string ``url`` is kept; other fields are ignored; blank lines are
skipped. The whole file is validated (UTF-8, JSON, fields, unique ids) before anything is
written, and every problem is reported with its line number.

Index folder layout (``<index_dir>``)::

    manifest.json   what was built, from what, with which model (written last): corpus path
                    and SHA-256, passages, embedding model, vector and keyword index kinds and
                    parameters, build time - the index identity every evaluation result
                    carries (``evaluation/index_identity.py``)
    keyword/        tantivy BM25 index
    milvus.db/      Milvus Lite database (unless --milvus-uri names a server or another path)

Builds go to a temporary sibling folder that replaces ``<index_dir>`` by ``rename`` only when
complete, so an interrupted build never leaves a half index in place; a killed build leaves at
most a hidden ``.<name>.building-*`` (or ``.old-*``) sibling, which never counts as an index and
is removed by the next build of that folder (which holds the folder's lock, so no live build can
own it). Builds hold the folder's lock exclusively (``tools/index_lock.py``); readers share it.

:func:`inspect_index` tells an absent index (no folder, or an empty one) from a complete one and
from a damaged one (unreadable manifest, missing or unreadable keyword index, passage count that
disagrees with the manifest, missing Milvus Lite folder), naming the damage: only an absent index
may be replaced by the bundled demo corpus.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from factdebate.core import input_limits, json_input
from factdebate.core.errors import (
    BackendUnavailableError,
    FactDebateError,
    IndexDamagedError,
    InputError,
    StorageError,
    storage_problem,
)
from factdebate.core.settings import mask_url
from factdebate.tools import DEMO_CORPUS_DIR, index_lock, milvus_rag
from factdebate.tools.base import RetrieverSettings, get_retriever
from factdebate.tools.chunking import CHUNK_CHARS, chunk_text  # noqa: F401 - re-exported
from factdebate.tools.embeddings import checked_vectors, embedding_dimension, get_embeddings
from factdebate.tools.index_state import (  # noqa: F401 - re-exported: the public API
    MANIFEST,
    MILVUS_LITE_NAME,
    IndexState,
    inspect_index,
)
from factdebate.tools.keyword import KEYWORD_SUBDIR, TITLE_BOOST, write_keyword_index

DEFAULT_COLLECTION = RetrieverSettings.collection
MAX_REPORTED = 20
"""Validation stops listing problems after this many (the count is still reported)."""
ProgressFn = Callable[[str, int, int], None]
"""``progress(stage, done, total)``; stages ``validate`` (bytes) and ``embed`` (passages)."""


class CorpusError(InputError):
    """The corpus file is invalid; ``issues`` lists ``line N: problem`` strings."""

    def __init__(self, path: Path, issues: list[str], total: int) -> None:
        """Summarise the first ``issues`` of ``total`` problems found in ``path``."""
        self.issues = issues
        more = f" (and {total - len(issues)} more)" if total > len(issues) else ""
        super().__init__(
            f"corpus {path} has {total} problem(s): {'; '.join(issues[:5])}{more}",
            "fix the listed lines; nothing was written",
        )


@dataclass
class CorpusScan:
    """What validation learned about a corpus."""

    sha256: str
    documents: int
    passages: int


def _passage_ids(doc_id: str, text: str) -> list[str]:
    n = len(chunk_text(text))
    return [doc_id] if n == 1 else [f"{doc_id}#{i}" for i in range(1, n + 1)]


def _parse_line(lineno: int, offset: int, raw: bytes) -> tuple[dict[str, str] | None, list[str]]:
    """One corpus line -> (clean record or None, problems); blank lines give (None, [])."""
    if isinstance(raw, input_limits.Oversize):
        return None, [raw.describe()]
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = f"byte 0x{raw[exc.start]:02x} at byte offset {offset + exc.start}"
        return None, [f"not UTF-8 ({byte})"]
    line = line.removeprefix("\ufeff") if lineno == 1 else line
    if not line.strip():
        return None, []
    try:
        record = json_input.loads(line)
    except json.JSONDecodeError as exc:
        return None, [f"malformed JSON ({exc.msg} at column {exc.colno})"]
    if not isinstance(record, dict):
        return None, [f"expected a JSON object, got {type(record).__name__}"]
    if isinstance(record.get("doc_id"), int) and not isinstance(record["doc_id"], bool):
        record["doc_id"] = str(record["doc_id"])
    problems = []
    for field in ("doc_id", "title", "text"):
        value = record.get(field)
        if field not in record:
            problems.append(f"missing field {field!r}")
        elif not isinstance(value, str):
            problems.append(f"field {field!r} must be a string, got {type(value).__name__}")
        elif not value.strip():
            problems.append(f"empty field {field!r}")
    url = record.get("url") or ""
    if not isinstance(url, str):
        problems.append(f"field 'url' must be a string, got {type(url).__name__}")
    if problems:
        return None, problems
    clean = {"doc_id": record["doc_id"].strip(), "title": record["title"].strip(),
             "text": record["text"], "url": url}
    for field in ("title", "url"):
        limit = milvus_rag.MAX_TITLE_BYTES if field == "title" else milvus_rag.MAX_URL_BYTES
        if len(clean[field].encode()) > limit:
            problems.append(f"field {field!r} is longer than {limit} bytes")
    return clean, problems


def _records(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset of the line, raw line) for every line of ``path``; a line over
    the record limit (``core/input_limits``) is an ``Oversize`` marker, not held."""
    offset = 0
    with path.open("rb") as f:
        limit = input_limits.limit("corpus_line_bytes")
        for lineno, raw in enumerate(input_limits.bounded_lines(f, limit), 1):
            yield lineno, offset, raw
            offset += len(raw)


def validate_corpus(path: Path, progress: ProgressFn | None = None) -> CorpusScan:
    """Check every line of ``path``; raise :class:`CorpusError` listing the problems.

    Raises:
        InputError: The file is missing or holds no passage.
        CorpusError: Non-UTF-8 bytes, malformed JSON, missing/empty fields, duplicate ids.
    """
    if not path.is_file():
        raise InputError(f"corpus file not found: {path}", "pass a JSONL file of passages")
    size, digest = path.stat().st_size, hashlib.sha256()
    issues: list[str] = []
    first_line: dict[str, int] = {}
    documents = 0
    for lineno, offset, raw in _records(path):
        digest.update(raw)
        if progress and lineno % 10_000 == 0:
            progress("validate", offset, size)
        clean, problems = _parse_line(lineno, offset, raw)
        if clean is not None:
            documents += 1
            for pid in _passage_ids(clean["doc_id"], clean["text"]):
                if pid in first_line:
                    what = "doc_id" if pid == clean["doc_id"] else "passage id"
                    problems.append(f"duplicate {what} {pid!r} (first at line {first_line[pid]})")
                first_line.setdefault(pid, lineno)
                if len(pid.encode()) > milvus_rag.MAX_ID_BYTES:
                    problems.append(f"passage id longer than {milvus_rag.MAX_ID_BYTES} bytes")
        issues.extend(f"line {lineno}: {problem}" for problem in problems)
    if progress:
        progress("validate", size, size)
    if issues:
        raise CorpusError(path, issues[:MAX_REPORTED], len(issues))
    if not first_line:
        raise InputError(f"corpus {path} holds no passages", "pass a non-empty JSONL corpus")
    return CorpusScan(sha256=digest.hexdigest(), documents=documents, passages=len(first_line))


def iter_passages(path: Path) -> Iterator[dict[str, str]]:
    """Passages (``id``, ``title``, ``text``, ``url``) of an already validated corpus."""
    for lineno, offset, raw in _records(path):
        clean, _ = _parse_line(lineno, offset, raw)
        if clean is None:
            continue
        pieces = chunk_text(clean["text"])
        ids = _passage_ids(clean["doc_id"], clean["text"])
        for pid, piece in zip(ids, pieces, strict=True):
            yield {"id": pid, "title": clean["title"], "text": piece, "url": clean["url"],
                   "page": clean["doc_id"], "sentences": [], "pool": ""}


def _write_vectors(
    uri: str, collection: str, corpus: Path, scan: CorpusScan, model: str, batch_size: int,
    progress: ProgressFn | None, *, staged: bool,
) -> None:
    """Embed and insert every passage into ``collection`` at ``uri``.

    ``staged`` (a database shared with the live index: a server or a Lite path outside the index
    folder) builds into ``<collection>__building`` and renames it over ``collection`` at the end.
    """
    embeddings = get_embeddings(model)
    name = f"{collection}__building" if staged else collection
    client = milvus_rag.connect(uri, create=True)
    try:
        dimension = embedding_dimension(embeddings)
        with _server_calls(uri, "create the collection"):
            milvus_rag.create_collection(client, name, dimension)
        done, batch = 0, []
        for passage in itertools.chain(iter_passages(corpus), [None]):  # None: flush the rest
            if passage is not None:
                batch.append(passage)
            if batch and (len(batch) == batch_size or passage is None):
                done += _insert(client, name, embeddings, batch, uri, (dimension, model))
                batch = []
                if progress:
                    progress("embed", done, scan.passages)
        with _server_calls(uri, "flush the collection"):
            client.flush(name)
        if staged:
            with _server_calls(uri, f"replace collection {collection!r}"):
                if client.has_collection(collection):
                    client.drop_collection(collection)
                client.rename_collection(name, collection)
    finally:
        milvus_rag.disconnect(client, uri)


@contextlib.contextmanager
def _server_calls(uri: str, what: str) -> Iterator[None]:
    """A Milvus server's failure inside the block becomes one error naming the server and the
    step (exit 3); nothing is swapped in, so the live collection and index folder stay as they
    were. Milvus Lite's errors pass unchanged (a Lite build writes into the staging folder)."""
    if milvus_rag.is_local_uri(uri):
        yield
        return
    try:
        with milvus_rag.quiet_milvus_logs():
            yield
    except FactDebateError:
        raise
    except Exception as exc:
        raise milvus_rag.milvus_failure(uri, what, exc) from exc


def _insert(client: Any, collection: str, embeddings: Any, batch: list[dict[str, str]],
            uri: str, shape: tuple[int, str]) -> int:
    """Embed and insert ``batch``; ``shape`` is the index's ``(dimension, model name)``, which
    every vector is checked against (finite, that dimension) before any is stored."""
    # The title is embedded with the text: lead sentences often say "it", not the page name.
    vectors = checked_vectors(embeddings.embed_documents(
        [f"{p['title']}\n{p['text']}" for p in batch]), len(batch), *shape)
    rows = [milvus_rag.milvus_row(p, v) for p, v in zip(batch, vectors, strict=True)]
    with _server_calls(uri, "insert passages"):
        client.insert(collection, rows)
    return len(rows)


def build_indexes(
    corpus_path: str | Path,
    index_dir: str | Path,
    *,
    milvus_uri: str | None = None,
    embedding_model: str = "minilm",
    collection: str = DEFAULT_COLLECTION,
    batch_size: int = 256,
    progress: ProgressFn | None = None,
    replace: bool = True,
    reuse: bool = False,
) -> dict[str, Any]:
    """Validate ``corpus_path`` and (re)build both indexes in ``index_dir``.

    Args:
        corpus_path: JSONL corpus of ``{doc_id, title, text}`` records.
        index_dir: Index folder; replaced as a whole when the build succeeds.
        milvus_uri: Milvus server URI or Lite path outside ``index_dir``; None = the Lite
            database ``<index_dir>/milvus.db`` (built inside the staging folder).
        embedding_model: Embedding spec passed to ``get_embeddings``.
        collection: Milvus collection name.
        batch_size: Passages embedded and inserted per batch.
        progress: Optional ``progress(stage, done, total)`` callback.
        replace: Overwrite an index built from another corpus, or a damaged one (``index
            --replace``); an index of the bundled demo corpus is always replaceable.
        reuse: Keep a complete index of the same corpus, model and collection as it is; the
            returned manifest then has ``"unchanged": True``.

    Returns:
        The manifest written to (or kept in) ``<index_dir>/manifest.json``.

    Raises:
        InputError: Invalid corpus (nothing written), ``index_dir`` is a file, or it holds
            another corpus / a damaged index and ``replace`` is False.
        InUseError: Another process reads or builds ``index_dir``.
        StorageError: The disk is full or the parent folder is not writable (nothing kept).
        BackendUnavailableError: Milvus cannot be opened or reached.
    """
    corpus = Path(corpus_path).expanduser().resolve()
    target = Path(index_dir).expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise InputError(f"index folder {target} is a file", "pass a folder for --index-dir")
    scan = validate_corpus(corpus, progress)
    external = milvus_uri is not None and not (
        milvus_rag.is_local_uri(milvus_uri)
        and Path(milvus_uri).expanduser().resolve() == target / MILVUS_LITE_NAME
    )
    wanted = {"corpus_sha256": scan.sha256, "embedding_model": embedding_model,
              "collection": collection, "milvus_uri": milvus_uri if external else None}
    with index_lock.exclusive(target):
        remove_leftovers(target)
        kept = check_target(target, wanted, replace=replace, reuse=reuse)
        if kept is not None:
            return kept
        return _build(corpus, target, scan, wanted, batch_size, progress)


def check_target(target: Path, wanted: dict[str, Any], *, replace: bool,
                 reuse: bool) -> dict[str, Any] | None:
    """What a build may do with ``target`` (call it holding the folder's exclusive lock).

    Returns:
        The existing manifest plus ``"unchanged": True`` when ``reuse`` and the index there was
        built as ``wanted`` (every key equal); None when the build may go ahead.

    Raises:
        InputError: ``target`` holds another corpus' index or a damaged one and not ``replace``.
    """
    existing = inspect_index(target)
    manifest = existing.manifest or {}
    if reuse and existing.status == "ok" and all(manifest.get(k) == v for k, v in wanted.items()):
        return {**manifest, "unchanged": True}
    if not replace and existing.status != "absent" and not _is_demo(manifest):
        what = (f"an index of another corpus ({manifest.get('corpus')}, "
                f"{manifest.get('passages')} passages)" if existing.status == "ok"
                else f"a damaged index ({existing.reason})")
        raise InputError(f"{target} holds {what}",
                         "pass --replace to overwrite it, or choose another --index-dir")
    return None


def _build(corpus: Path, target: Path, scan: CorpusScan, wanted: dict[str, Any],
           batch_size: int, progress: ProgressFn | None) -> dict[str, Any]:
    """Write both indexes into a staging sibling of ``target`` and swap it in."""
    started = time.perf_counter()
    model, collection, external = wanted["embedding_model"], wanted["collection"], wanted["milvus_uri"]
    dimension = embedding_dimension(get_embeddings(model))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.building-", dir=target.parent))
        os.chmod(staging, 0o755)  # mkdtemp makes it private; the index is an ordinary folder
    except OSError as exc:
        raise storage_error(target, exc) from exc
    try:
        write_keyword_index(staging / KEYWORD_SUBDIR, iter_passages(corpus))
        uri = external or str(staging / MILVUS_LITE_NAME)
        _write_vectors(uri, collection, corpus, scan, model, batch_size, progress,
                       staged=bool(external))
        manifest = {
            "format": 1, "corpus": str(corpus), "corpus_sha256": scan.sha256,
            "documents": scan.documents, "passages": scan.passages, "chunk_chars": CHUNK_CHARS,
            "embedding_model": model, "dimension": dimension, "metric": milvus_rag.METRIC,
            "vector_index": milvus_rag.index_description(),
            "keyword_index": keyword_description(),
            "collection": collection, "milvus_uri": external,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "build_seconds": round(time.perf_counter() - started, 3),
        }
        write_json(staging / MANIFEST, manifest)
        swap_in(staging, target)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if storage_problem(exc):
            raise storage_error(target, exc) from exc
        raise
    return manifest


def keyword_description() -> dict[str, Any]:
    """What :func:`write_keyword_index` builds, for the index manifest."""
    from importlib.metadata import version

    return {"kind": "tantivy BM25", "folder": KEYWORD_SUBDIR, "fields": ["title", "body"],
            "title_boost": TITLE_BOOST, "tantivy": version("tantivy")}


def storage_error(target: Path, exc: BaseException) -> StorageError:
    """The one-line error of a build that could not write ``target`` (disk full, read-only)."""
    return StorageError(
        f"cannot write the index {target} ({storage_problem(exc) or exc}); nothing was kept",
        "free disk space or choose a writable --index-dir, then rerun `factdebate index`")


def _is_demo(manifest: dict[str, Any]) -> bool:
    """True for an index of the bundled demo corpus (rebuilt from the package at any time)."""
    demo = DEMO_CORPUS_DIR / "passages.jsonl"
    sha = manifest.get("corpus_sha256")
    return bool(sha) and sha == hashlib.sha256(demo.read_bytes()).hexdigest()


def remove_leftovers(target: Path, keep: Path | None = None) -> list[Path]:
    """Delete ``.<name>.building-*`` / ``.old-*`` siblings a killed build left behind.

    Call only while holding ``target``'s exclusive lock: no live build can own them then.
    ``keep`` (a resumable dump build's staging folder, ``tools/sources/build.py``) stays.
    """
    removed = []
    for pattern in (f".{target.name}.building-*", f".{target.name}.old-*"):
        for leftover in target.parent.glob(pattern):
            if keep is not None and leftover == keep:
                continue
            shutil.rmtree(leftover, ignore_errors=True)
            removed.append(leftover)
    return removed


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` durably (flushed and fsynced)."""
    with path.open("w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.flush()
        os.fsync(f.fileno())


def swap_in(staging: Path, target: Path) -> None:
    """Put ``staging`` at ``target``; the old index is moved aside first, then deleted."""
    if not target.exists():
        os.rename(staging, target)
        return
    old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(old, target)  # put the previous index back
        raise
    shutil.rmtree(old, ignore_errors=True)


def read_manifest(index_dir: str | Path) -> dict[str, Any]:
    """The manifest of the index in ``index_dir``.

    Raises:
        BackendUnavailableError: No (readable) manifest there.
    """
    path = Path(index_dir).expanduser() / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackendUnavailableError(
            f"no index at {path.parent} ({MANIFEST} missing or unreadable)",
            "run: factdebate index CORPUS.jsonl",
        ) from exc


def index_exists(index_dir: str | Path) -> bool:
    """True when ``index_dir`` holds a complete build (see :func:`inspect_index`)."""
    return inspect_index(index_dir).status == "ok"


PROBE_QUERY = "the"
"""What :func:`read_vector_index` searches for: any query has neighbours in a whole index."""


def read_vector_index(index_dir: str | Path, milvus_uri: str = "",
                      embedding_model: str = "minilm") -> int:
    """Read the vector index as the runs will, not only list its files (the server's start-up).

    :func:`inspect_index` is cheap and opens no Milvus database; a Milvus Lite folder whose files
    hold random bytes passed it, and the server started and reported "serving ... (N passages)".
    This opens the index through the retriever registry - the collection, its vector
    dimension, loading it, its passage count against ``manifest.json`` - and runs one search. The
    opened retriever stays cached for the process, so the first run does not open it again.

    Returns:
        The passages the vector index holds (checked against its manifest).

    Raises:
        IndexDamagedError: The vector index cannot be read, holds other counts, or finds nothing.
        BackendUnavailableError: A Milvus server cannot be reached, or the folder is in use.
    """
    settings = RetrieverSettings(index_dir=str(index_dir), embedding_model=embedding_model,
                                 milvus_uri=milvus_uri or str(Path(index_dir) / MILVUS_LITE_NAME))
    retriever: Any = get_retriever("milvus", settings)
    hits = retriever.search_sync(PROBE_QUERY, 1)
    if not hits:  # a server index that answers nothing (Lite raises in search_sync itself)
        raise IndexDamagedError(f"vector index at {mask_url(settings.milvus_uri)} "
                                "answered a search with nothing",
                                f"rebuild it: factdebate index CORPUS.jsonl --index-dir {index_dir} "
                                "--replace")
    return int(retriever.passages)
