"""The critical path of a run from its model calls' timeline (the scripted double records one)."""

from __future__ import annotations

from typing import Any

__all__ = ["longest_chain"]


def longest_chain(timeline: list[Any]) -> int:
    """Longest sequence of calls each starting after the previous one ended."""
    best: dict[int, int] = {}
    ordered = sorted(timeline, key=lambda r: r.start)
    for rec in ordered:
        best[rec.index] = 1 + max(
            (best[p.index] for p in ordered if p.end <= rec.start and p.index in best), default=0
        )
    return max(best.values(), default=0)
