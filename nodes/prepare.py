"""``prepare``: validates the input and resolves the task before any model is called.

The same checks guard the CLI and the LangGraph server API: an empty or oversized claim, an unknown
label set, missing options for multiple-choice tasks and an unusable backend are rejected here with
an error that names the problem and the remedy.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from factdebate.nodes.retrieve import resolve_backend
from langgraph.runtime import Runtime

from factdebate.core.context import MAX_CLAIM_CHARS, Context
from factdebate.core.errors import InputError
from factdebate.core.labels import LABEL_SETS
from factdebate.core.state import DebateState

_ALLOWED_CONTROLS = {"\n", "\t"}


def clean_claim(claim: object) -> str:
    """The claim with control characters removed and whitespace trimmed; invalid input raises."""
    if not isinstance(claim, str):
        raise InputError(f"the claim must be text, got {type(claim).__name__}",
                         "pass the claim as a string")
    cleaned = "".join(
        ch for ch in claim
        if ch in _ALLOWED_CONTROLS or unicodedata.category(ch) not in ("Cc", "Cf", "Cs")
    ).strip()
    if not cleaned:
        raise InputError("the claim is empty or whitespace only", "pass a non-empty claim")
    if len(cleaned) > MAX_CLAIM_CHARS:
        raise InputError(
            f"the claim has {len(cleaned)} characters, over the limit of {MAX_CLAIM_CHARS}",
            "shorten it or split it into several claims",
        )
    return cleaned


def prepare(state: DebateState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Validated claim, resolved task and backend flags."""
    ctx = runtime.context
    task = LABEL_SETS.resolve(state.get("task") or ctx.label_set)
    if task == "medqa" and not state.get("options"):
        raise InputError("task 'medqa' needs answer options", "pass options {'A': ..., 'D': ...}")
    flags = []
    for kind in ctx.tool_kinds():
        _, flag = resolve_backend(kind, ctx)
        if flag and flag not in flags:
            flags.append(flag)
    return {"claim": clean_claim(state.get("claim")), "task": task, "flags": flags,
            "ledger": {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                       "tool_calls": {}}}
