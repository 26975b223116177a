"""``prepare`` for the baselines: the shared validation, a fresh claim and the run's answer mode."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.context import Context
from factdebate.core.labels import get_label_set
from factdebate.core.state import fresh_claim
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.prepare import start_claim


def prepare_baseline(state: BaselineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """``prepare`` (validated claim, resolved task, backend flags) and ``multi_answer``.

    Multi-answer mode is ``answer_mode="answers"`` or a task without labels (``open_qa``, which
    RAMDocs' ``qa_conflict`` resolves to): the run returns ``answers`` and no label. Every other
    per-claim key (evidence, passages, turns, ledger ...) starts empty: one claim per run.
    """
    update = start_claim(state, runtime.context)
    multi = (getattr(runtime.context, "answer_mode", "label") == "answers"
             or not get_label_set(update["task"]).labels)
    return fresh_claim(BaselineState, {**update, "multi_answer": multi})
