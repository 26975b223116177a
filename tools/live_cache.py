"""What a live source needs to be polite: a per-process rate limit and an on-disk answer cache.

Used by the live Wikipedia backend (``tools/wikipedia_live.py``): :data:`RATE_LIMIT` spaces the
starts of its requests across threads and event loops, :class:`DiskCache` keeps answers under
``$FACTDEBATE_HOME`` for a TTL so a repeated query sends no request, safe under concurrent
processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any


class RateLimit:
    """Request starts at most ``rate`` per second in this process (any thread, any event loop)."""

    def __init__(self) -> None:
        """No request started yet."""
        self._lock = threading.Lock()
        self._next = 0.0

    def delay(self, rate: float) -> float:
        """Reserve the next start; the seconds to wait before it (0 with no limit)."""
        if rate <= 0:
            return 0.0
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + 1.0 / rate
            return start - now


RATE_LIMIT = RateLimit()
"""The process's one limiter: every wiki request goes through it."""


class DiskCache:
    """JSON entries in one folder, one file per key, each valid for ``ttl_s`` seconds.

    A key is the wiki's URL, a kind (``search``/``page``) and the query or title; its file is
    named by their SHA-256. Writes go to a temporary file in the same folder and are renamed over
    the entry (atomic on POSIX and Windows), so readers in other processes see a whole entry or
    none. An unreadable, foreign or expired entry is a miss (and is overwritten by the next write).
    """

    def __init__(self, folder: Path, ttl_s: float) -> None:
        """Entries live in ``folder`` (made on first write) for ``ttl_s`` seconds."""
        self.folder = folder
        self.ttl_s = ttl_s

    def _path(self, key: tuple[str, ...]) -> Path:
        digest = hashlib.sha256("\x00".join(key).encode("utf-8")).hexdigest()
        return self.folder / f"{digest}.json"

    def get(self, key: tuple[str, ...]) -> Any | None:
        """The value stored under ``key`` if younger than the TTL, else None."""
        if self.ttl_s <= 0:
            return None
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != list(key):
            return None
        stored = entry.get("stored")
        if not isinstance(stored, int | float) or not 0 <= time.time() - stored < self.ttl_s:
            return None
        return entry.get("value")

    def put(self, key: tuple[str, ...], value: Any) -> None:
        """Store ``value`` under ``key``; a folder that cannot be written only loses the entry."""
        if self.ttl_s <= 0:
            return
        path = self._path(key)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"key": list(key), "stored": time.time(), "value": value},
                                      ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:  # a read-only home costs requests, not the search
            with contextlib.suppress(OSError):
                tmp.unlink()
