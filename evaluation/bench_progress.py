"""Progress lines of a long benchmark on stderr: the stage, how far it is, its rate, its time.

A background thread prints the current stage every ``every`` seconds (and when a stage starts and
ends), so a stage stuck in one long call still shows it is alive. Plain lines, no bar: they read
the same in a terminal, a log file and CI.

    bench corpus: import 1,000,000 pages (chunk): 312,000/1,000,000 pages, 11,850 pages/s, 27 s
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO

Probe = Callable[[], tuple[int, str]]
"""Reads how far a stage is, ``(done, detail)``, when its line is printed."""


class StageProgress:
    """``stage(name, total, unit)`` / ``update(done, detail)`` / ``end(detail)`` of one bench
    (or a ``probe`` the line reads when it is printed, for a stage whose work runs elsewhere)."""

    def __init__(self, bench: str, *, every: float = 3.0, stream: IO[str] | None = None) -> None:
        self.bench = bench
        self.every = every
        self.stream = stream
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._name = ""
        self._total: int | None = None
        self._unit = ""
        self._done = 0
        self._detail = ""
        self._rate = True
        self._probe: Probe | None = None
        self._started = 0.0
        self._last = (0.0, 0)  # (time, done) at the previous periodic line

    def __enter__(self) -> StageProgress:
        self._thread = threading.Thread(target=self._tick, name=f"bench-{self.bench}-progress",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def stage(self, name: str, total: int | None = None, unit: str = "", *, rate: bool = True,
              probe: Probe | None = None) -> None:
        """Start stage ``name`` of ``total`` ``unit`` (None: its size is not known); ``rate``:
        show units per second; ``probe``: read ``(done, detail)`` from it for each line."""
        now = time.monotonic()
        with self._lock:
            self._name, self._total, self._unit = name, total, unit
            self._done, self._detail, self._started, self._last = 0, "", now, (now, 0)
            self._rate, self._probe = rate, probe
        size = f" ({total:,} {unit})" if total is not None else ""
        self._print(f"{name}{size}: started")

    def update(self, done: int, detail: str = "") -> None:
        """How far the stage is (in its unit) and anything else worth a glance (RSS, file)."""
        with self._lock:
            self._done, self._detail = done, detail

    def end(self, detail: str = "") -> None:
        """Close the stage with its time and overall rate."""
        self._read_probe()
        with self._lock:
            name, unit, done, show_rate = self._name, self._unit, self._done, self._rate
            seconds = time.monotonic() - self._started
            self._name, self._probe = "", None
        rate = f", {done / seconds:,.0f} {unit}/s" \
            if show_rate and done and unit and seconds > 0 else ""
        self._print(f"{name}: done in {seconds:,.1f} s{rate}" + (f"; {detail}" if detail else ""))

    def note(self, text: str) -> None:
        """A line of its own, now."""
        self._print(text)

    def _read_probe(self) -> None:
        probe = self._probe
        if probe is not None:
            try:
                self.update(*probe())
            except Exception:  # noqa: BLE001  # a progress line never stops the bench
                pass

    def line(self) -> str:
        """The current stage's periodic line ('' between stages)."""
        self._read_probe()
        now = time.monotonic()
        with self._lock:
            if not self._name:
                return ""
            then, before = self._last
            self._last = (now, self._done)
            name, total, unit, done, detail, show_rate = (
                self._name, self._total, self._unit, self._done, self._detail, self._rate)
            elapsed = now - self._started
        parts = [f"{name}:"]
        if unit:
            far = f"{done:,}/{total:,}" if total is not None else f"{done:,}"
            pct = f" ({100 * done / total:.0f}%)" if total else ""
            rate = (done - before) / (now - then) if now > then else 0.0
            parts.append(f"{far} {unit}{pct}," + (f" {rate:,.0f} {unit}/s," if show_rate else ""))
        parts.append(f"{elapsed:,.0f} s")
        if detail:
            parts.append(f"({detail})")
        return " ".join(parts)

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            text = self.line()
            if text:
                self._print(text)

    def _print(self, text: str) -> None:
        stream = self.stream or sys.stderr
        print(f"bench {self.bench}: {text}", file=stream, flush=True)
