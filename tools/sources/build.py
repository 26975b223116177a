"""Index a dump in one streaming pass, resumable after a kill (``factdebate index DUMP --format``).

The dump is read once, page by page (``tools/sources``); each page's passages go into the tantivy
keyword index and, unless ``keyword_only``, are embedded and inserted into Milvus in batches.
Memory stays bounded whatever the dump's size: one page, one embedding batch and tantivy's
fixed writer heap are held, plus 8 bytes per passage for the duplicate-id check
(:data:`IDS_FILE`).

Everything is written into a staging sibling ``.<name>.building-<key>`` of the index folder, the
key being a hash of the source's fingerprint and the build options. Every
:data:`CHECKPOINT_PASSAGES` passages (or :data:`CHECKPOINT_SECONDS`) the build commits: the
pending embedding batch is inserted and flushed, the passage-id hashes appended to
:data:`IDS_FILE` and fsynced, ``checkpoint.json`` records the commit as *pending* (source cursor,
pages, passages), tantivy commits, and ``checkpoint.json`` records it as *committed*. A killed
build (``kill -9``, Ctrl-C, a power cut) leaves the staging folder; the next build of the same
dump and options finds it and resumes from the last committed cursor: tantivy's commit is atomic,
so its document count tells whether a pending commit happened; Milvus rows of the interrupted
interval are written again with ``upsert`` (same primary keys). Only a finished build is renamed
over the index folder: a half-built index is never searched.

The releases as shipped have quirks (tools/sources/fever_wiki.py lists FEVER's). A reader repairs
what has one right reading and skips, page by page, what has none; the build counts both in the
manifest's ``quirks`` (``repaired``, ``skipped``, ``empty_pages`` and the first
:data:`QUIRK_EXAMPLES` with file and line, page and why; the counts survive a resume) and the
CLI's last line says ``repaired N, skipped M pages``. ``strict`` stops at the first instead.
Input that is not the format at all (not a zip, a truncated archive, a first record of the wrong
schema) raises :class:`~factdebate.tools.sources.SourceError` (one line naming the file and
line, page or row) and removes the staging folder: no index is created or replaced. An
embedding model that fails (a provider's retries exhausted, its quota used up, a refused key)
stops the build but keeps the staging folder: the dump is fine, so the error says how many
passages are committed, and running the same command again resumes from there without embedding
them again. An embedding model that reports its traffic (``usage()``, as
:class:`~factdebate.tools.embeddings_provider.ProviderEmbeddings` does: requests, retries, seconds
waited, tokens) has this build's share recorded under the manifest's ``embedding`` key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from factdebate.core.errors import FactDebateError, InputError, storage_problem
from factdebate.tools import index_lock, milvus_rag
from factdebate.tools.embeddings import checked_vectors, embedding_dimension, get_embeddings
from factdebate.tools.index_state import MANIFEST, MILVUS_LITE_NAME
from factdebate.tools.indexing import (
    DEFAULT_COLLECTION,
    ProgressFn,
    check_target,
    keyword_description,
    remove_leftovers,
    storage_error,
    swap_in,
    write_json,
)
from factdebate.tools.keyword import KEYWORD_SUBDIR, keyword_document, keyword_schema
from factdebate.tools.sources import (
    CHUNK_CHARS,
    GRANULARITIES,
    Cursor,
    Page,
    Source,
    SourceError,
    open_source,
    passages_of,
)

CHECKPOINT_PASSAGES = int(os.environ.get("FACTDEBATE_INDEX_CHECKPOINT_PASSAGES", "200000"))
"""Passages between two commits (the most a resumed build writes again)."""
CHECKPOINT_SECONDS = 120.0
"""A commit also happens after this long, so a slow (embedding) build loses little to a kill."""
KEYWORD_HEAP = 64_000_000
"""tantivy's writer heap in bytes (segments are flushed when it fills). Measured on 1M synthetic
FEVER pages (``bench corpus``'s dump, in-process, 2 busy cores): 64 MB and one indexing thread
peaked at 139 MB anonymous memory at 250k pages and 186 MB at 1M, 15k pages/s; 128 MB and two
threads at 192 MB and 315 MB, 21k pages/s; 256 MB and two threads at 385 MB at 1M. The smallest
heap keeps memory flattest at a throughput above the 10k pages/s budget."""
KEYWORD_THREADS = 1
"""tantivy indexing threads (the Python reader runs beside it on the second core)."""
IDS_FILE = "ids.u64"
CHECKPOINT = "checkpoint.json"
PROGRESS_EVERY = 2000
"""Pages between two progress callbacks."""
QUIRK_EXAMPLES = 20
"""Repaired and skipped pages the manifest names (file and line, page, why) besides counting all."""
STAGE = "importing the dump"
"""The ``progress`` stage name of a dump build (units: the source's bytes or rows)."""


def source_fingerprint(source: Source) -> str:
    """SHA-256 of the source's files: names, sizes and their first and last MiB.

    A multi-GB dump is not hashed whole (that would cost a read of it); any download, unpack or
    edit changes the size or the sampled bytes in practice. The manifest records it as
    ``corpus_sha256`` (the index's identity in evaluation results).
    """
    digest = hashlib.sha256(source.name.encode())
    for path in source.files():
        size = path.stat().st_size
        digest.update(f"\0{path.name}\0{size}\0".encode())
        with path.open("rb") as f:
            digest.update(f.read(1 << 20))
            if size > 2 << 20:
                f.seek(size - (1 << 20))
                digest.update(f.read())
    return digest.hexdigest()


def build_from_source(
    path: str | Path,
    index_dir: str | Path,
    *,
    fmt: str | None = None,
    granularity: str = "chunk",
    keyword_only: bool = False,
    milvus_uri: str | None = None,
    embedding_model: str = "minilm",
    collection: str = DEFAULT_COLLECTION,
    batch_size: int = 256,
    progress: ProgressFn | None = None,
    replace: bool = False,
    reuse: bool = True,
    strict: bool = False,
) -> dict[str, Any]:
    """Index the dump at ``path`` into ``index_dir`` (resuming an interrupted build of it).

    Args:
        path: The dump's file or folder.
        index_dir: Index folder; replaced as a whole when the build succeeds.
        fmt: A name of ``tools.sources.DUMP_FORMATS``; None detects it.
        granularity: ``chunk`` or ``sentence`` (``tools.sources.GRANULARITIES``).
        keyword_only: Build the tantivy index only (no embeddings, no Milvus).
        milvus_uri: Milvus server URI (or Lite path outside ``index_dir``); None = Milvus Lite
            in ``<index_dir>/milvus.db``.
        embedding_model: Embedding spec passed to ``get_embeddings``.
        collection: Milvus collection name.
        batch_size: Passages embedded and inserted per batch.
        progress: Optional ``progress(stage, done, total)`` callback.
        replace: Overwrite an index of another corpus or a damaged one.
        reuse: Keep a complete index of the same dump and options as it is.
        strict: Stop at the first page a reader repaired or skipped (a :class:`SourceError`
            naming it; nothing written) instead of counting it in the manifest's ``quirks``.

    Returns:
        The manifest written (``"unchanged": True`` when kept as it was).

    Raises:
        SourceError: The dump is malformed (nothing written).
        InputError: Unknown format or granularity, or ``index_dir`` is taken (see ``replace``).
        InUseError: Another process reads or builds ``index_dir``.
        StorageError: The disk is full or the folder is not writable.
    """
    if granularity not in GRANULARITIES:
        raise InputError(f"unknown passage granularity {granularity!r}",
                         f"use one of: {', '.join(GRANULARITIES)}")
    source = open_source(path, fmt)
    target = Path(index_dir).expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise InputError(f"index folder {target} is a file", "pass a folder for --index-dir")
    external = milvus_uri is not None and not keyword_only and not (
        milvus_rag.is_local_uri(milvus_uri)
        and Path(milvus_uri).expanduser().resolve() == target / MILVUS_LITE_NAME)
    wanted = {"corpus_sha256": source_fingerprint(source), "source_format": source.name,
              "granularity": granularity, "keyword_only": keyword_only,
              "embedding_model": None if keyword_only else embedding_model,
              "collection": collection, "milvus_uri": milvus_uri if external else None}
    key = hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()[:12]
    with index_lock.exclusive(target):
        staging = target.with_name(f".{target.name}.building-{key}")
        remove_leftovers(target, keep=staging)
        kept = check_target(target, wanted, replace=replace, reuse=reuse)
        if kept is not None:
            return kept
        build = _Build(source, target, staging, wanted, batch_size, progress, strict=strict)
        return build.run()


@dataclass
class _Mark:
    """A commit point: the source cursor and what was written before it."""

    cursor: Cursor | None = None
    pages: int = 0
    passages: int = 0
    quirks: dict[str, Any] = field(default_factory=lambda: new_quirks())

    def as_json(self) -> dict[str, Any]:
        return {"cursor": self.cursor, "pages": self.pages, "passages": self.passages,
                "quirks": self.quirks}


def new_quirks() -> dict[str, Any]:
    """The manifest's ``quirks`` record before any page: counts and the first examples."""
    return {"repaired": 0, "skipped": 0, "empty_pages": 0, "examples": []}


def note_quirk(quirks: dict[str, Any], page: Page, *, strict: bool) -> None:
    """Count ``page`` in ``quirks`` if a reader repaired or skipped it (or it is empty).

    Raises:
        SourceError: ``strict`` and the page was repaired or skipped.
    """
    if page.skip or page.repairs:
        kind, why = ("skipped", page.skip) if page.skip else ("repaired", "; ".join(page.repairs))
        if strict:
            raise SourceError(page.where or page.page, f"{why} (--strict stops at the first "
                              f"{'skipped' if page.skip else 'repaired'} page; without it the "
                              "page is counted and the import goes on)")
        quirks[kind] += 1
        if len(quirks["examples"]) < QUIRK_EXAMPLES:
            quirks["examples"].append({"where": page.where, "page": page.page, "kind": kind,
                                       "why": why[:300]})
    elif not page.elements:
        quirks["empty_pages"] += 1


def quirks_line(quirks: dict[str, Any] | None) -> str:
    """``repaired N, skipped M pages`` and the first example of each, for the build's last line."""
    if not quirks:
        return ""
    line = f"repaired {quirks.get('repaired', 0)}, skipped {quirks.get('skipped', 0)} pages"
    firsts = []
    for kind in ("repaired", "skipped"):
        first = next((e for e in quirks.get("examples", []) if e["kind"] == kind), None)
        if first is not None:
            firsts.append(f"first {kind}: {first['where']}: {first['why'][:120]}")
    return f"{line} ({'; '.join(firsts)})" if firsts else line


@dataclass
class _Build:
    source: Source
    target: Path
    staging: Path
    wanted: dict[str, Any]
    batch_size: int
    progress: ProgressFn | None
    strict: bool = False
    done: _Mark = field(default_factory=_Mark)
    resumes: int = 0
    rewrite_until: int = 0
    """Passages up to this count go to Milvus by upsert (they may be there from before a kill)."""
    writer: Any = None
    """tantivy's index writer (None once finished or discarded)."""
    embedding_failed: bool = False
    """The embedding model raised: the staging folder is kept for the next build to resume."""
    usage_before: dict[str, Any] | None = None
    """The embedding model's ``usage()`` when this build opened it (None: it reports none)."""

    def run(self) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            self._open()
            resumed_at = self.done.passages
            self._read()
            self._finish()
            manifest = self._manifest(time.perf_counter() - started, resumed_at)
            write_json(self.staging / MANIFEST, manifest)
            (self.staging / CHECKPOINT).unlink()
            (self.staging / IDS_FILE).unlink()
            swap_in(self.staging, self.target)
            return manifest
        except (KeyboardInterrupt, SystemExit):
            self._close()
            raise  # the staging folder stays: the next build of this dump resumes from it
        except BaseException as exc:
            self._close(discard=True)
            if self.embedding_failed and not storage_problem(exc):
                resumable = _resumable(exc, self.done.passages)
                if resumable is exc:
                    raise  # the staging folder stays: the next build resumes from its last commit
                raise resumable from exc
            shutil.rmtree(self.staging, ignore_errors=True)
            if storage_problem(exc):
                raise storage_error(self.target, exc) from exc
            raise

    # --- opening: fresh or resumed --------------------------------------------------------

    def _open(self) -> None:
        import tantivy

        checkpoint = self._load_checkpoint()
        if checkpoint is None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging.mkdir(parents=True)
            os.chmod(self.staging, 0o755)
            (self.staging / KEYWORD_SUBDIR).mkdir()
            self.index = tantivy.Index(keyword_schema(), path=str(self.staging / KEYWORD_SUBDIR))
            (self.staging / IDS_FILE).touch()
        else:
            self.index = tantivy.Index.open(str(self.staging / KEYWORD_SUBDIR))
            self.index.reload()
            found = self.index.searcher().num_docs
            committed, pending = checkpoint.get("committed") or {}, checkpoint.get("pending")
            self.done = _Mark(**committed) if committed else _Mark()
            if pending and found == pending["passages"]:
                self.done = _Mark(**pending)  # tantivy committed; the second record was lost
            if found != self.done.passages:  # neither: not a state this builder leaves
                shutil.rmtree(self.staging, ignore_errors=True)
                self.done, self.resumes = _Mark(), 0
                return self._open()
            self.resumes = int(checkpoint.get("resumes", 0)) + 1
            self.rewrite_until = self.done.passages + 2 * CHECKPOINT_PASSAGES
        with (self.staging / IDS_FILE).open("r+b") as f:
            f.truncate(self.done.passages * 8)
        self.ids = (self.staging / IDS_FILE).open("ab")
        self.writer = self.index.writer(heap_size=KEYWORD_HEAP, num_threads=KEYWORD_THREADS)
        self._open_vectors(fresh=checkpoint is None)

    def _load_checkpoint(self) -> dict[str, Any] | None:
        try:
            data = json.loads((self.staging / CHECKPOINT).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        ok = isinstance(data, dict) and (self.staging / KEYWORD_SUBDIR / "meta.json").is_file() \
            and (self.staging / IDS_FILE).is_file()
        return data if ok else None

    def _open_vectors(self, *, fresh: bool) -> None:
        self.client: Any = None
        self.batch: list[dict[str, Any]] = []
        if self.wanted["keyword_only"]:
            return
        model = self.wanted["embedding_model"]
        self.embeddings = get_embeddings(model)
        self.usage_before = _usage(self.embeddings)
        self.uri = self.wanted["milvus_uri"] or str(self.staging / MILVUS_LITE_NAME)
        self.name = (f"{self.wanted['collection']}__building" if self.wanted["milvus_uri"]
                     else self.wanted["collection"])
        self.client = milvus_rag.connect(self.uri, create=True)
        self.dimension = self._embedding(lambda: embedding_dimension(self.embeddings))
        if fresh or not self.client.has_collection(self.name):
            milvus_rag.create_collection(self.client, self.name, self.dimension)
            self.rewrite_until = 0

    def _close(self, *, discard: bool = False) -> None:
        """Release files and clients; ``discard`` also drops tantivy's uncommitted documents
        (its writer threads would otherwise write their segments when the writer is freed,
        after the staging folder is removed)."""
        writer, self.writer = getattr(self, "writer", None), None
        if discard and writer is not None:
            with contextlib.suppress(Exception):
                writer.rollback()
        del writer
        with contextlib.suppress(Exception):
            self.ids.close()
        if getattr(self, "client", None) is not None:
            with contextlib.suppress(Exception):
                milvus_rag.disconnect(self.client, self.uri)
            self.client = None

    # --- the pass over the dump ------------------------------------------------------------

    def _read(self) -> None:
        total = self.source.total()
        mark, last_commit = self.done, time.monotonic()
        pages, passages, last_cursor = mark.pages, mark.passages, mark.cursor
        quirks = json.loads(json.dumps(mark.quirks))  # a copy: the committed mark stays as it was
        hashes = bytearray()
        granularity = self.wanted["granularity"]
        for page, cursor in self.source.read(mark.cursor):
            pages, last_cursor = pages + 1, cursor
            note_quirk(quirks, page, strict=self.strict)
            for p in passages_of(page, granularity):
                hashes += hashlib.blake2b(p["id"].encode(), digest_size=8).digest()
                self.writer.add_document(keyword_document(p))
                passages += 1
                if self.client is not None:
                    self.batch.append(p)
                    if len(self.batch) >= self.batch_size:
                        self._insert(passages)
            if passages - self.done.passages >= CHECKPOINT_PASSAGES or (
                    self.client is not None and time.monotonic() - last_commit > CHECKPOINT_SECONDS):
                self._commit(_Mark(cursor, pages, passages, json.loads(json.dumps(quirks))), hashes)
                hashes, last_commit = bytearray(), time.monotonic()
            if self.progress and pages % PROGRESS_EVERY == 0:
                self.progress(STAGE, self.source.done(cursor), total)
        self._commit(_Mark(last_cursor, pages, passages, quirks), hashes)
        if self.progress:
            self.progress(STAGE, total, total)

    def _insert(self, passages: int) -> None:
        batch, self.batch = self.batch, []
        if not batch:
            return
        texts = [f"{p['title']}\n{p['text']}" for p in batch]
        vectors = self._embedding(lambda: checked_vectors(
            self.embeddings.embed_documents(texts), len(texts), self.dimension,
            self.wanted["embedding_model"]))
        rows = [milvus_rag.milvus_row(p, v) for p, v in zip(batch, vectors, strict=True)]
        call = self.client.upsert if passages <= self.rewrite_until else self.client.insert
        call(self.name, rows)

    def _embedding(self, call: Any) -> Any:
        """``call()``, an embedding model's work: its failure keeps the staging folder."""
        try:
            return call()
        except Exception:
            self.embedding_failed = True
            raise

    def _commit(self, mark: _Mark, hashes: bytearray) -> None:
        """Make everything up to ``mark`` durable, then record it (see the module docstring)."""
        if self.client is not None:
            self._insert(mark.passages)
            self.client.flush(self.name)
        self.ids.write(hashes)
        self.ids.flush()
        os.fsync(self.ids.fileno())
        self._checkpoint({"committed": self.done.as_json(), "pending": mark.as_json()})
        self.writer.commit()
        self.done = mark
        self._checkpoint({"committed": mark.as_json()})

    def _checkpoint(self, data: dict[str, Any]) -> None:
        data = {**data, "resumes": self.resumes, "format": self.wanted["source_format"]}
        tmp = self.staging / f"{CHECKPOINT}.tmp"
        write_json(tmp, data)
        os.replace(tmp, self.staging / CHECKPOINT)

    # --- the end ------------------------------------------------------------------------------

    def _finish(self) -> None:
        self.ids.close()
        writer, self.writer = self.writer, None
        writer.wait_merging_threads()
        if not self.done.passages:
            raise SourceError(str(self.source.path), "holds no page with text: nothing to index")
        self._check_duplicates()
        if self.client is not None:
            if self.wanted["milvus_uri"]:
                collection = self.wanted["collection"]
                if self.client.has_collection(collection):
                    self.client.drop_collection(collection)
                self.client.rename_collection(self.name, collection)
            self._close()

    def _check_duplicates(self) -> None:
        import numpy as np

        hashes = np.fromfile(self.staging / IDS_FILE, dtype=np.uint64)
        hashes.sort()
        same = np.flatnonzero(hashes[1:] == hashes[:-1])
        if not same.size:
            return
        dup = int(hashes[same[0]])
        for page, _ in self.source.read(None):  # name it: a second pass, error case only
            for p in passages_of(page, self.wanted["granularity"]):
                digest = hashlib.blake2b(p["id"].encode(), digest_size=8).digest()
                if int.from_bytes(digest, "little") == dup:
                    raise SourceError(f"{self.source.path} (page {page.page!r})",
                                      f"duplicate passage id {p['id']!r}: the page occurs twice")
        raise SourceError(str(self.source.path), "two passages have the same id")

    def _manifest(self, seconds: float, resumed_at: int) -> dict[str, Any]:
        keyword_only = self.wanted["keyword_only"]
        dimension = None if keyword_only else embedding_dimension(self.embeddings)
        return {
            "format": 1, "corpus": str(self.source.path), **self.wanted,
            "source_files": len(self.source.files()),
            "documents": self.done.pages, "passages": self.done.passages,
            "quirks": self.done.quirks,
            "chunk_chars": CHUNK_CHARS, "dimension": dimension,
            "metric": None if keyword_only else milvus_rag.METRIC,
            "vector_index": None if keyword_only else milvus_rag.index_description(),
            "keyword_index": keyword_description(),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "build_seconds": round(seconds, 3), "resumes": self.resumes,
            "resumed_at_passage": resumed_at,
            **({"embedding": _usage_since(self.usage_before, _usage(self.embeddings))}
               if self.usage_before is not None else {}),
        }


def _usage(embeddings: Any) -> dict[str, Any] | None:
    """The embedding model's ``usage()`` counts, or None when it has no such method."""
    usage = getattr(embeddings, "usage", None)
    return dict(usage()) if callable(usage) else None


def _usage_since(before: dict[str, Any], after: dict[str, Any] | None) -> dict[str, Any]:
    """``after`` with its numbers counted from ``before`` (a model cached for the process keeps
    counting across builds); other values as ``after`` has them."""
    out: dict[str, Any] = {}
    for key, value in (after or {}).items():
        old = before.get(key)
        numbers = isinstance(value, int | float) and not isinstance(value, bool) \
            and isinstance(old, int | float)
        out[key] = round(value - old, 3) if numbers else value
    return out


def _resumable(exc: BaseException, passages: int) -> BaseException:
    """``exc`` as the same type with a remedy that says the build resumes from ``passages``
    (a ``FactDebateError``; any other error is returned as it is)."""
    if not isinstance(exc, FactDebateError):
        return exc
    note = (f"the build keeps its {passages} committed passages: run the same command again "
            "to resume from there")
    remedy = f"{exc.remedy}; then {note}" if exc.remedy else note
    try:
        return type(exc)(exc.problem, remedy)
    except TypeError:  # a subclass with other arguments: its own message
        return exc

