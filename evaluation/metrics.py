"""The metric registry and the metric functions (pure: they read results rows, never call models).

A metric either scores one row (``item``; aggregated by ``mean`` or ``sum`` over the rows where it
is defined) or a whole run (``corpus``: macro-F1). Definitions follow the papers:

* ``accuracy`` - exact match of the label (Tool-MAD, MADKE "EM"); on multi-answer tasks the strict
  MADAM-RAG criterion (``multi_em``).
* ``macro_f1`` and per-class F1 (MERMAID Table 1: True-F1, False-F1, macro).
* ``co2`` / ``cons`` (MADKE eq. 7-8): an item is *consistent* when every debater's final-round label
  is the same; Co2 = consistent and correct / N, Cons = consistent / N. Frameworks without
  debaters (no turns) have no value.
* ``multi_em``, ``multi_precision``, ``multi_recall``, ``multi_f1`` (MADAM-RAG §5.1, Fig. 3): a
  predicted answer matches a gold answer when their normalised forms are equal or the gold one is
  contained in it; EM = every gold answer matched and no misinformation answer present.
* ``token_f1`` - SQuAD token F1 against the best gold answer (generative QA).
* ``llm_judge`` (MADKE Prompt C.1), ``ragas_faithfulness``/``ragas_answer_relevancy`` of the final
  answer - computed by ``factdebate.evaluation.judging`` while the run executes (they need a
  model) and read here.
* evidence quality (``factdebate.evaluation.evidence_metrics``): ``evidence_*``
  precision/recall/F1/EM of the cited passages against the gold evidence (page level; sentence
  level on FEVEROUS), ``fever_score`` and the FEVER scorer's ``fever_evidence_*``, ``gold_retrieved``
  vs ``gold_cited``, ``uncited_verdicts``, ``hallucinated_citations``, ``uncited_replies``.
* ``rounds``, ``llm_calls``, ``prompt_tokens``, ``completion_tokens``, ``tool_calls``, ``cost_usd``
  (price table ``evaluation/prices.yaml``), ``wall_time_s``, ``errors``.

``bootstrap_ci`` is the percentile bootstrap (Tool-MAD Table IV: 95%, 1000 resamples) with a seed.
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from factdebate.core.registry import Registry
from factdebate.evaluation.evidence_metrics import (
    ITEM_METRICS,
    fever_evidence_f1,
    item_value,
    uncited_replies,
)
from factdebate.evaluation.formats import ANSWERS_TASK

Row = dict[str, Any]


@dataclass(frozen=True)
class Metric:
    """One registered metric."""

    name: str
    description: str
    higher_is_better: bool | None
    """None for descriptive quantities (rounds used)."""
    aggregation: Literal["mean", "sum", "corpus"]
    item: Callable[[Row], float | None] | None = None
    corpus: Callable[[list[Row]], float | None] | None = None

    def aggregate(self, rows: list[Row]) -> float | None:
        """The run-level value over ``rows`` (error rows included only by ``errors``)."""
        if self.corpus is not None:
            return self.corpus(rows)
        assert self.item is not None
        values = [v for v in (self.item(r) for r in rows) if v is not None]
        if not values:
            return None
        return sum(values) if self.aggregation == "sum" else sum(values) / len(values)


METRICS: Registry[Metric] = Registry("metric")


def _register(name: str, description: str, higher: bool | None, aggregation: str = "mean",
              **fns: Any) -> None:
    METRICS.register(name, Metric(name, description, higher, aggregation, **fns),  # type: ignore[arg-type]
                     higher_is_better=higher, aggregation=aggregation)


# -- answer matching (SQuAD normalisation) ------------------------------------------------------
def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in str(text).lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def answer_matches(predicted: str, gold: str) -> bool:
    """Equal after normalisation, or the gold answer contained in the predicted one."""
    p, g = normalize_answer(predicted), normalize_answer(gold)
    return bool(g) and (p == g or f" {g} " in f" {p} ")


def token_f1(predicted: str, gold: str) -> float:
    """SQuAD token-level F1."""
    p, g = normalize_answer(predicted).split(), normalize_answer(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g or not common:
        return float(p == g)
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def multi_answer_scores(predicted: Sequence[str], gold: Sequence[str],
                        wrong: Sequence[str] = ()) -> dict[str, float]:
    """MADAM-RAG strict EM plus precision / recall / F1 of the predicted answer list."""
    pred = [p for p in predicted if normalize_answer(p)]
    correct_pred = sum(any(answer_matches(p, g) for g in gold) for p in pred)
    found = sum(any(answer_matches(p, g) for p in pred) for g in gold)
    misinformed = any(answer_matches(p, w) for p in pred for w in wrong)
    precision = correct_pred / len(pred) if pred else 0.0
    recall = found / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    em = float(bool(gold) and found == len(gold) and not misinformed)
    return {"em": em, "precision": precision, "recall": recall, "f1": f1}


# -- row accessors ------------------------------------------------------------------------------
def is_ok(row: Row) -> bool:
    """A finished item (not an error row)."""
    return row.get("status") == "ok"


def is_multi(row: Row) -> bool:
    """Scored against a list of answers (RAMDocs)."""
    return row.get("task") == ANSWERS_TASK


def _multi(row: Row) -> dict[str, float] | None:
    if not (is_ok(row) and is_multi(row)):
        return None
    gold = row["gold"]
    return multi_answer_scores(row["prediction"].get("answers") or [], gold.get("answers") or [],
                               gold.get("wrong_answers") or [])


def correct(row: Row) -> bool | None:
    """Exact match of the label, or strict multi-answer EM; None for error rows."""
    if not is_ok(row):
        return None
    if is_multi(row):
        scores = _multi(row)
        return bool(scores and scores["em"])
    return row["prediction"].get("label") == row["gold"].get("label")


def consistent(row: Row) -> bool | None:
    """Every debater's final-round label is the same (MADKE); None without labelled debaters."""
    labels = list((row.get("final_labels") or {}).values()) if is_ok(row) else []
    if len(labels) < 2 or all(label is None for label in labels):
        return None
    return None not in labels and len(set(labels)) == 1


def _ledger(key: str) -> Callable[[Row], float | None]:
    return lambda r: float(r["ledger"].get(key, 0)) if is_ok(r) else None


def _extra(key: str) -> Callable[[Row], float | None]:
    def get(row: Row) -> float | None:
        value = (row.get("extra") or {}).get(key) if is_ok(row) else None
        return float(value) if value is not None else None
    return get


def _bool(fn: Callable[[Row], bool | None]) -> Callable[[Row], float | None]:
    def get(row: Row) -> float | None:
        value = fn(row)
        return None if value is None else float(value)
    return get


def _co2(row: Row) -> float | None:
    cons = consistent(row)
    return None if cons is None else float(cons and bool(correct(row)))


def _token_f1(row: Row) -> float | None:
    golds = row["gold"].get("answers") or [] if is_ok(row) else []
    if not golds:
        return None
    pred = row["prediction"]
    text = " ; ".join(pred.get("answers") or []) or str(pred.get("label") or "")
    return max(token_f1(text, g) for g in golds)


# -- corpus metrics -----------------------------------------------------------------------------
def per_class_f1(pairs: Sequence[tuple[str | None, str | None]]) -> dict[str, float]:
    """F1 per gold class over ``(predicted, gold)`` pairs; a None prediction is simply wrong."""
    classes = sorted({g for _, g in pairs if g is not None})
    out = {}
    for cls in classes:
        tp = sum(p == cls and g == cls for p, g in pairs)
        fp = sum(p == cls and g != cls for p, g in pairs)
        fn = sum(p != cls and g == cls for p, g in pairs)
        out[cls] = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return out


def label_pairs(rows: list[Row]) -> list[tuple[str | None, str | None]]:
    """``(predicted, gold)`` labels of the finished single-label rows."""
    return [(r["prediction"].get("label"), r["gold"].get("label"))
            for r in rows if is_ok(r) and not is_multi(r)]


def macro_f1(rows: list[Row]) -> float | None:
    """Unweighted mean of the per-class F1 over the gold classes."""
    scores = per_class_f1(label_pairs(rows))
    return sum(scores.values()) / len(scores) if scores else None


def bootstrap_ci(values: Sequence[float], *, resamples: int = 1000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values`` (seeded, reproducible)."""
    if not values:
        return None
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    lo = means[int((1 - level) / 2 * resamples)]
    hi = means[min(resamples - 1, int((1 + level) / 2 * resamples))]
    return lo, hi


# -- registry -----------------------------------------------------------------------------------
_register("accuracy", "Exact match of the label (strict multi-answer EM on RAMDocs)", True,
          item=_bool(correct))
_register("macro_f1", "Macro-averaged F1 over the gold classes (MERMAID)", True, "corpus",
          corpus=macro_f1)
_register("co2", "Consistent and correct ratio (MADKE eq. 7)", True, item=_co2)
_register("cons", "Consistency ratio: debaters' final labels agree (MADKE eq. 8)", True,
          item=_bool(consistent))
for _key in ("em", "precision", "recall", "f1"):
    _register(f"multi_{_key}", f"MADAM-RAG multi-answer {_key} (all gold, no misinformation)", True,
              item=lambda r, k=_key: (_multi(r) or {}).get(k))
_register("token_f1", "SQuAD token F1 against the best gold answer", True, item=_token_f1)
_register("llm_judge", "LLM-judge correctness (MADKE Prompt C.1), 1 = [True]", True,
          item=_extra("llm_judge"))
_register("ragas_faithfulness", "RAGAS faithfulness of the final answer to the evidence", True,
          item=_extra("ragas_faithfulness"))
_register("ragas_answer_relevancy", "RAGAS answer relevancy of the final answer", True,
          item=_extra("ragas_answer_relevancy"))
_register("rounds", "Debate rounds used", None, item=lambda r: float(r["rounds"]) if is_ok(r) else None)
for _key in ("llm_calls", "prompt_tokens", "completion_tokens"):
    _register(_key, f"{_key.replace('_', ' ').capitalize()} per item", False, item=_ledger(_key))
_register("tool_calls", "Tool calls per item (all tools)", False,
          item=lambda r: float(sum(r["ledger"].get("tool_calls", {}).values())) if is_ok(r) else None)
_register("cost_usd", "Estimated cost, summed over items (evaluation/prices.yaml)", False, "sum",
          item=lambda r: r.get("cost_usd") if is_ok(r) else None)
_register("wall_time_s", "Wall time per item, seconds", False,
          item=lambda r: float(r["wall_time_s"]) if is_ok(r) else None)
_register("errors", "Items that ended in an error row", False, "sum",
          item=lambda r: float(not is_ok(r)))
# evidence quality of the cited passages against the gold evidence (evaluation/evidence_metrics.py)
for _key, _description in ITEM_METRICS.items():
    _register(_key, _description, _key not in ("uncited_verdicts", "hallucinated_citations"),
              item=item_value(_key))
_register("fever_evidence_f1", "F1 of the FEVER scorer's evidence precision and recall", True,
          "corpus", corpus=fever_evidence_f1)
_register("uncited_replies", "Labelled replies that cited no passage / labelled replies", False,
          "corpus", corpus=uncited_replies)


def compute_metrics(rows: list[Row], names: Sequence[str] | None = None) -> dict[str, float | None]:
    """Every (or the named) registered metric over ``rows``."""
    return {name: METRICS.get(name).aggregate(rows) for name in (names or METRICS.names())}
