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

Layout: namespace ``("mermaid", "evidence", <entity key>)``, item key = hash of (source, query, id,
text), value = a ``MemoryRecord``. Entity keys are case- and punctuation-folded (``"Eiffel
Tower"`` and ``"eiffel tower."`` share a key). A record is stored under every claim entity its
query, title or text mentions; a record that mentions none is stored under all the claim's
entities (the executor fetched it while verifying a claim about them).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TypedDict

from langgraph.store.base import BaseStore

NAMESPACE = ("mermaid", "evidence")
MAX_RECORD_CHARS = 2000
"""Stored evidence text is cut to this length (observations of whole articles can be long)."""


class MemoryRecord(TypedDict):
    """One remembered piece of evidence."""

    entity: str
    """Entity key the record is stored under."""
    query: str
    """The tool input that fetched it."""
    source: str
    """Tool name that fetched it (``search_wikipedia``, ``get_summary`` ...)."""
    id: str
    """Evidence id in its source."""
    title: str
    """Evidence title."""
    text: str
    """Evidence text."""
    url: str
    """Link, or ``""``."""
    timestamp: str
    """UTC time the record was stored (ISO 8601)."""


def entity_key(entity: str) -> str:
    """Case- and punctuation-folded key of an entity name ("" when nothing is left)."""
    return " ".join(re.findall(r"[^\W_]+", entity.casefold()))


def mentions(entity: str, text: str) -> bool:
    """True when every word of the entity key occurs in ``text`` as a word sequence."""
    key = entity_key(entity)
    return bool(key) and f" {key} " in f" {entity_key(text)} "


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
