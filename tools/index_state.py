"""What is in an index folder: absent, complete, or damaged (and how).

Used by ``verify``/``eval`` (``run/setup.py``: only an absent default index may receive
the bundled demo corpus), by ``factdebate index`` (skip an unchanged corpus, ``--replace`` another)
and by the server's start-up (``tools/demo_index.py``). Cheap: it opens no Milvus database (one
process at a time may hold a Milvus Lite folder); the vector index's row count is checked when a
retriever opens it (``tools/milvus_rag.py``). Re-exported by ``tools/indexing.py``.
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
