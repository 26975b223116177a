"""How the scripted test double cites: like a model would, or wrongly on purpose.

A reply to a schema with a ``citations`` field (``factdebate.core.citations.with_citations``) gets
the numbers of the documents the prompt showed (``<document n="3" ...>``) that share at least half
of the claim's words (at most three, most shared first; the first shown document when none does). Modes
(``scripted:<scenario>?cite=...``):

* ``shown`` (default) - as above;
* ``wrong`` - one shown number and one that was never shown (the largest shown + 5), so every
  framework's check of hallucinated citations is exercised offline;
* ``none`` - cites nothing (uncited verdicts).

A responder that sets ``citations`` itself is left alone.
"""

from __future__ import annotations

import re
from typing import Any

from factdebate.testing.script import ScriptCall

CITE_MODES = ("shown", "wrong", "none")

_DOC = re.compile(r'<document n="(\d+)"[^>]*>(.*?)</document>', re.DOTALL)
_WORD = re.compile(r"[a-z0-9]{4,}")


def shown_documents(prompt: str) -> list[tuple[int, str]]:
    """``(number, text)`` of each document the prompt shows, first occurrence of each number."""
    out: dict[int, str] = {}
    for match in _DOC.finditer(prompt):
        out.setdefault(int(match.group(1)), match.group(2))
    return list(out.items())


def _claim_words(call: ScriptCall) -> set[str]:
    from factdebate.testing.scenarios import claim_of

    return set(_WORD.findall(claim_of(call).lower()))


def choose_citations(call: ScriptCall, mode: str) -> list[int]:
    """The numbers the double cites in ``mode`` for this call's prompt."""
    docs = shown_documents(call.prompt)
    if mode == "none":
        return []
    words = _claim_words(call)
    overlap = {n: len(words & set(_WORD.findall(text.lower()))) for n, text in docs}
    need = max(1, (len(words) + 1) // 2)  # at least half of the claim's words, as a reader would
    chosen = sorted((n for n in overlap if overlap[n] >= need), key=lambda n: -overlap[n])[:3]
    if not chosen and docs:
        chosen = [docs[0][0]]
    if mode == "wrong":
        return [*chosen[:1], max((n for n, _ in docs), default=0) + 5]
    return chosen


def add_citations(call: ScriptCall, reply: Any, mode: str) -> Any:
    """``reply`` with ``citations`` filled when the requested schema asks for them."""
    fields = getattr(call.schema, "model_fields", None) or {}
    if "citations" not in fields or not isinstance(reply, dict) or "citations" in reply:
        return reply
    return {**reply, "citations": choose_citations(call, mode)}
