"""MERMAID's long-term evidence memory M: a key-value store keyed by the claim's entities.

Paper §3.4: keys are the atomic entities (subjects and objects) the decomposer extracts; values are
retrieved evidence with its source metadata (searching query, timestamp). "Recall-then-update":
before the executor's first step the memory is queried with the claim's entities and the hits go
into the initial prompt; after the session the evidence the executor's tools returned is stored
under the entities it is about.

Storage is a LangGraph ``BaseStore``, so the memory persists across claims and runs: nodes get it
as ``runtime.store``. The CLI opens a SQLite store (``langgraph.store.sqlite.AsyncSqliteStore``,
``$FACTDEBATE_HOME/memory.sqlite``); at scale use ``langgraph.store.postgres.AsyncPostgresStore``
(package ``langgraph-checkpoint-postgres``); ``langgraph dev`` / the server supplies its own store.

Layout: namespace ``(<owner>, "mermaid", "evidence", <index fingerprint>, <entity key>)``, item
key = hash of (source, query, id, text), value = a ``MemoryRecord``. The owner is the user the
LangGraph server authenticated (so one user's runs never recall, or poison, another's memory),
``factdebate:shared`` when the operator declares one shared memory, ``factdebate:local`` for the
CLI. The fingerprint names the evidence source (the index build's manifest and the Wikipedia
backend), so a run against another index does not recall passages fetched from this one
(:func:`index_fingerprint`). Entity keys are case- and punctuation-folded (``"Eiffel
Tower"`` and ``"eiffel tower."`` share a key). A record is stored under every claim entity its
query, title or text mentions; a record that mentions none is stored under all the claim's
entities (the executor fetched it while verifying a claim about them).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from langgraph.store.base import BaseStore

from factdebate.core.errors import BackendUnavailableError
from factdebate.tools.indexing import read_manifest
from factdebate.tools.mermaid_shapes import MemoryRecord  # re-exported

NAMESPACE = ("mermaid", "evidence")
LOCAL_OWNER = "factdebate:local"
"""Owner segment of the CLI's memory (no server user). Identities cannot contain ``:``."""
SHARED_OWNER = "factdebate:shared"
"""Owner segment of the one memory every user shares (operator opt-in)."""
_BUILD_FIELDS = ("corpus_sha256", "created", "collection", "embedding_model", "milvus_uri",
                 "passages")
MAX_RECORD_CHARS = 2000
"""Stored evidence text is cut to this length (observations of whole articles can be long)."""


def entity_key(entity: str) -> str:
    """Case- and punctuation-folded key of an entity name ("" when nothing is left)."""
    return " ".join(re.findall(r"[^\W_]+", entity.casefold()))


def mentions(entity: str, text: str) -> bool:
    """True when every word of the entity key occurs in ``text`` as a word sequence."""
    key = entity_key(entity)
    return bool(key) and f" {key} " in f" {entity_key(text)} "


def index_fingerprint(index_dir: str | Path, source: str = "") -> str:
    """16 hex digits naming one index build (its manifest) plus the evidence ``source``.

    A rebuilt index gets a new fingerprint (the manifest's ``created`` changes), and so does a
    different corpus or collection. A folder without a manifest is named by its resolved path.
    """
    try:
        manifest = read_manifest(index_dir)
        build = {k: manifest.get(k) for k in _BUILD_FIELDS}
    except BackendUnavailableError:
        build = {"missing": str(Path(index_dir).expanduser().resolve())}
    payload = json.dumps([build, source], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def memory_namespace(owner: str, fingerprint: str) -> tuple[str, ...]:
    """Namespace prefix of ``owner``'s memory of the evidence source ``fingerprint``."""
    if not owner or not fingerprint:
        raise ValueError("the memory namespace needs an owner and an index fingerprint")
    return (owner, *NAMESPACE, fingerprint)


class EvidenceMemory:
    """Recall and update of evidence records in a LangGraph store."""

    def __init__(self, store: BaseStore, namespace: tuple[str, ...] = NAMESPACE) -> None:
        """Use ``store`` under ``namespace``."""
        self.store = store
        self.namespace = namespace

    async def recall(self, entities: Iterable[str], *, limit: int) -> list[MemoryRecord]:
        """Up to ``limit`` newest records per entity, duplicates across entities dropped."""
        seen: set[str] = set()
        out: list[MemoryRecord] = []
        for key in dict.fromkeys(entity_key(e) for e in entities):
            if not key:
                continue
            items = await self.store.asearch((*self.namespace, key), limit=max(limit * 4, 20))
            items = sorted(items, key=lambda it: it.value.get("timestamp", ""), reverse=True)
            for item in items[:limit]:
                if item.key not in seen:
                    seen.add(item.key)
                    out.append(MemoryRecord(**item.value))  # type: ignore[typeddict-item]
        return out

    async def update(self, entities: Sequence[str], records: Iterable[dict[str, str]]) -> int:
        """Store ``records`` (query, source, id, title, text, url) under their entities.

        Returns:
            Number of (entity, record) pairs written.
        """
        keys = [k for k in dict.fromkeys(entity_key(e) for e in entities) if k]
        if not keys:
            return 0
        now = datetime.now(UTC).isoformat(timespec="seconds")
        written = 0
        for rec in records:
            about = " ".join((rec.get("query", ""), rec.get("title", ""), rec.get("text", "")))
            targets = [k for k in keys if mentions(k, about)] or keys
            item_key = hashlib.sha1(
                "\x1f".join((rec.get("source", ""), rec.get("query", ""), rec.get("id", ""),
                             rec.get("text", ""))).encode()
            ).hexdigest()[:24]
            for key in targets:
                value = MemoryRecord(
                    entity=key, query=rec.get("query", ""), source=rec.get("source", ""),
                    id=rec.get("id", ""), title=rec.get("title", ""),
                    text=rec.get("text", "")[:MAX_RECORD_CHARS], url=rec.get("url", ""),
                    timestamp=now,
                )
                await self.store.aput((*self.namespace, key), item_key, dict(value), index=False)
                written += 1
        return written
