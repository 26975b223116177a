"""What is in an index folder: absent, complete, or damaged (and how).

Used by ``verify``/``eval`` (``run/setup.py``: only an absent default index may receive
the bundled demo corpus), by ``factdebate index`` (skip an unchanged corpus, ``--replace`` another)
and by the server's start-up (``tools/demo_index.py``). Cheap: it opens no Milvus database (one
process at a time may hold a Milvus Lite folder); the vector index's row count is checked when a
retriever opens it (``tools/milvus_rag.py``). Re-exported by ``tools/indexing.py``.

:func:`index_summary` is what ``factdebate ls indexes`` and ``factdebate index --info`` show of
an index: its source, format, pages, passages, repaired and skipped pages, granularity,
embedding model and build time, read from the manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from factdebate.tools.keyword import KEYWORD_SUBDIR

MANIFEST = "manifest.json"
MILVUS_LITE_NAME = "milvus.db"


@dataclass(frozen=True)
class IndexState:
    """What :func:`inspect_index` found in an index folder."""

    status: Literal["absent", "ok", "damaged"]
    """``absent``: no folder or an empty one; ``ok``: complete; ``damaged``: anything else."""
    path: Path
    reason: str = ""
    """For ``damaged``: what is wrong, e.g. ``manifest.json is missing``."""
    manifest: dict[str, Any] | None = None


_MANIFEST_KEYS = ("corpus_sha256", "passages", "collection", "embedding_model")
JSONL_FORMAT = "jsonl"
"""``source_format`` of an index built from the JSONL corpus (its manifest names no format)."""
JSONL_GRANULARITY = "chunk"
"""Passages of the JSONL corpus: each document cut into chunks of up to 2,000 characters."""


def inspect_index(index_dir: str | Path) -> IndexState:
    """Absent, complete or damaged (with the reason): cheap, opens no Milvus database.

    Checks the manifest, the keyword index (opened, counted and probed with one query) and the
    presence of the Milvus Lite folder (unless the manifest says ``keyword_only``); the vector
    index's row count is checked when a retriever opens it (``tools/milvus_rag.py``).
    """
    root = Path(index_dir).expanduser().absolute()
    if not root.exists():
        return IndexState("absent", root)
    if not root.is_dir():
        return IndexState("damaged", root, "it is a file, not an index folder")
    try:
        if not any(root.iterdir()):
            return IndexState("absent", root)
    except OSError as exc:
        return IndexState("damaged", root, f"the folder cannot be read ({exc.strerror})")
    manifest, reason = _load_manifest(root)
    if manifest is None:
        return IndexState("damaged", root, reason)
    reason = _keyword_damage(root, int(manifest["passages"]))
    if not reason and manifest.get("milvus_uri") is None and not manifest.get("keyword_only") \
            and not (root / MILVUS_LITE_NAME).is_dir():
        reason = f"{MILVUS_LITE_NAME}/ (the vector index) is missing"
    return IndexState("damaged" if reason else "ok", root, reason, manifest)


def _load_manifest(root: Path) -> tuple[dict[str, Any] | None, str]:
    path = root / MANIFEST
    if not path.is_file():
        return None, f"{MANIFEST} is missing"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{MANIFEST} is unreadable ({type(exc).__name__}: {str(exc)[:80]})"
    if not isinstance(manifest, dict):
        return None, f"{MANIFEST} is not a JSON object"
    missing = [k for k in _MANIFEST_KEYS if k not in manifest]
    if missing or not isinstance(manifest.get("passages"), int):
        return None, f"{MANIFEST} lacks {', '.join(missing) or 'a passage count'}"
    return manifest, ""


def _keyword_damage(root: Path, passages: int) -> str:
    """Why the keyword index under ``root`` is unusable, or ``""``."""
    import tantivy

    folder = root / KEYWORD_SUBDIR
    if not (folder / "meta.json").is_file():
        return f"{KEYWORD_SUBDIR}/ (the keyword index) is missing"
    try:
        index = tantivy.Index.open(str(folder))
        searcher = index.searcher()
        searcher.search(index.parse_query('"the" "a"', ["title", "body"]), limit=1)
        found = searcher.num_docs
    except ValueError as exc:
        return f"the keyword index is unreadable ({str(exc)[:120]})"
    if found != passages:
        return f"the keyword index holds {found} passages, {MANIFEST} says {passages}"
    return ""


def source_format_of(manifest: dict[str, Any] | None) -> str | None:
    """The format of the source the index was built from: the manifest's ``source_format`` (a
    dump: ``fever-wiki``, ``feverous-db`` ...), ``jsonl`` for the JSONL corpus (whose manifest
    names none), None without a manifest."""
    if not manifest:
        return None
    fmt = manifest.get("source_format")
    return fmt if isinstance(fmt, str) and fmt else JSONL_FORMAT


def granularity_of(manifest: dict[str, Any] | None) -> str | None:
    """``chunk`` or ``sentence``: the manifest's ``granularity`` (a dump's), ``chunk`` for the
    JSONL corpus, None without a manifest."""
    if not manifest:
        return None
    value = manifest.get("granularity")
    return value if isinstance(value, str) and value else JSONL_GRANULARITY


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def quirk_counts(manifest: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """``(repaired, skipped)`` pages of a dump build (its ``quirks``, or top-level ``repaired``/
    ``skipped``); None for a count the manifest does not record."""
    manifest = manifest or {}
    quirks = manifest.get("quirks") if isinstance(manifest.get("quirks"), dict) else {}
    return tuple(_count(quirks.get(k, manifest.get(k)))  # type: ignore[return-value]
                 for k in ("repaired", "skipped"))


def index_summary(index_dir: str | Path, name: str = "") -> dict[str, Any]:
    """What is inside the index in ``index_dir`` (cheap: :func:`inspect_index`): ``name``,
    ``index_dir``, ``status`` (``ok``/``absent``/``damaged``), ``damage``, ``source`` (the file
    or dump it was built from), ``source_format``, ``granularity``, ``pages`` (the manifest's
    ``documents``), ``passages``, ``repaired``, ``skipped``, ``keyword_only``,
    ``embedding_model`` (None for a keyword-only index), ``created``, ``build_seconds``."""
    state = inspect_index(index_dir)
    manifest = state.manifest
    if manifest is None and state.status == "damaged":  # show what a readable manifest says
        try:
            raw = json.loads((state.path / MANIFEST).read_text(encoding="utf-8"))
            manifest = raw if isinstance(raw, dict) else None
        except (OSError, ValueError):
            manifest = None
    m = manifest or {}
    repaired, skipped = quirk_counts(m)
    keyword_only = bool(m.get("keyword_only"))
    return {
        "name": name, "index_dir": str(state.path), "status": state.status,
        "damage": state.reason or None, "source": m.get("corpus"),
        "source_format": source_format_of(manifest), "granularity": granularity_of(manifest),
        "pages": _count(m.get("documents")), "passages": _count(m.get("passages")),
        "repaired": repaired, "skipped": skipped, "keyword_only": keyword_only,
        "embedding_model": None if keyword_only else m.get("embedding_model"),
        "created": m.get("created"), "build_seconds": m.get("build_seconds"),
    }
