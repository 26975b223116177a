"""Model-based per-item measurements taken while a run executes, and the cost estimate.

* ``llm_judge``: MADKE's GPT-4 Score (Prompt C.1, ``prompts/eval_judge``), through ``nodes/llm.py``
  (role ``eval_judge``, counted in a separate ledger so the framework's own cost stays clean).
* ``ragas``: RAGAS faithfulness and answer relevancy of the *final* answer (rationale w.r.t. the
  final round's evidence), through ``tools/scoring.py``.
* ``estimate_cost``: tokens x the price table ``evaluation/prices.yaml``.
"""

from __future__ import annotations

import asyncio
import fnmatch
import importlib
import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from factdebate.core.context import Context
from factdebate.nodes.llm import CallLog, ask_structured, call_config, model_for
from factdebate.prompts import load_prompts

PRICES = Path(__file__).with_name("prices.yaml")
EXTRA_METRICS = ("llm_judge", "ragas")


class JudgeVerdict(BaseModel):
    """Reply of the evaluation judge (Prompt C.1)."""

    reasoning: str = Field(description="Step-by-step comparison with the reference answers.")
    label: Literal["True", "False"] = Field(description="True if the answer is correct.")


@cache
def price_table() -> dict[str, dict[str, float]]:
    """Model spec (glob) -> {input, output} USD per 1M tokens."""
    return yaml.safe_load(PRICES.read_text(encoding="utf-8"))


def estimate_cost(ledger: dict[str, Any], model_spec: str) -> float | None:
    """USD for the ledger's tokens at ``model_spec``'s price; None when the model has no price."""
    spec = model_spec.partition("?")[0]
    for pattern, price in price_table().items():
        if fnmatch.fnmatchcase(spec, pattern):
            return (ledger.get("prompt_tokens", 0) * price["input"]
                    + ledger.get("completion_tokens", 0) * price["output"]) / 1e6
    return None


def _reference(row: dict[str, Any]) -> str:
    gold = row["gold"]
    return "; ".join(gold.get("answers") or []) or str(gold.get("label") or "")


def _evaluated(row: dict[str, Any]) -> str:
    pred = row["prediction"]
    answer = "; ".join(pred.get("answers") or []) or str(pred.get("label") or "")
    return f"[{answer}] {pred.get('rationale', '')}".strip()


async def llm_judge(row: dict[str, Any], ctx: Context, spec: str) -> tuple[float | None, CallLog]:
    """1.0 / 0.0 from the judge's [True]/[False]; None if its reply cannot be read."""
    calls = CallLog()
    messages = load_prompts("eval_judge").render(
        "gpt4_eval", question=row["claim"], reference_answers=_reference(row),
        evaluation_answer=_evaluated(row),
    )
    parsed, text = await ask_structured(
        await model_for(spec, ctx), messages, JudgeVerdict,
        config=call_config(calls, role="eval_judge"), retries=ctx.llm_retries,
    )
    if parsed is not None:
        return float(parsed.model_dump()["label"] == "True"), calls
    found = re.findall(r"\[(True|False)\]", text)
    return (float(found[-1] == "True") if found else None), calls


async def ragas_final(row: dict[str, Any], ctx: Context, spec: str) -> tuple[dict[str, Any], CallLog]:
    """RAGAS faithfulness / relevancy of the final rationale (None values on faults)."""
    from factdebate.tools.embeddings import get_embeddings

    scoring = await asyncio.to_thread(importlib.import_module, "factdebate.tools.scoring")
    calls = CallLog()
    result = await scoring.stability_scores(
        question=row["claim"], answer=row["prediction"].get("rationale") or "",
        contexts=row.get("contexts") or [], llm=await model_for(spec, ctx),
        embeddings=await asyncio.to_thread(get_embeddings, ctx.embedding_model),
        config=call_config(calls, role="ragas"),
    )
    return ({"ragas_faithfulness": result["faithfulness"],
             "ragas_answer_relevancy": result["answer_relevancy"]}, calls)


async def measure(row: dict[str, Any], ctx: Context, names: list[str], spec: str) -> dict[str, Any]:
    """The requested extra measurements of one finished row, plus their own ledger."""
    extra: dict[str, Any] = {}
    ledgers: list[dict[str, Any]] = []
    if "llm_judge" in names:
        extra["llm_judge"], calls = await llm_judge(row, ctx, spec)
        ledgers.append(calls.tracker.delta())
    if "ragas" in names:
        values, calls = await ragas_final(row, ctx, spec)
        extra |= values
        ledgers.append(calls.tracker.delta())
    extra["eval_llm_calls"] = sum(x.get("llm_calls", 0) for x in ledgers)
    return extra
