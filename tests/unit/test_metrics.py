"""Metrics against hand-computed values (evaluation/metrics.py, compare.py)."""

from __future__ import annotations

import random

import pytest

from factdebate.core.errors import ConfigError
from factdebate.evaluation.compare import paired_bootstrap
from factdebate.evaluation.judging import estimate_cost
from factdebate.evaluation.metrics import (
    METRICS,
    bootstrap_ci,
    compute_metrics,
    multi_answer_scores,
    per_class_f1,
    token_f1,
)


def row(pred, gold, *, status="ok", final=None, task="fever", answers=(), gold_answers=(),
        wrong=(), **extra):
    return {"item_id": f"i{random.random()}", "status": status, "task": task,
            "prediction": {"label": pred, "answers": list(answers), "rationale": ""},
            "gold": {"label": gold, "answers": list(gold_answers), "wrong_answers": list(wrong)},
            "final_labels": final or {}, "rounds": extra.pop("rounds", 1),
            "ledger": extra.pop("ledger", {"llm_calls": 0, "prompt_tokens": 0,
                                           "completion_tokens": 0, "tool_calls": {}}),
            "wall_time_s": 1.0, **extra}


def test_accuracy_and_macro_f1_by_hand():
    # gold S S S R R N ; pred S S R R S None  (one error row ignored by accuracy)
    rows = [row("SUPPORTS", "SUPPORTS"), row("SUPPORTS", "SUPPORTS"), row("REFUTES", "SUPPORTS"),
            row("REFUTES", "REFUTES"), row("SUPPORTS", "REFUTES"),
            row(None, "NOT ENOUGH INFO"), row(None, "SUPPORTS", status="error")]
    m = compute_metrics(rows, ["accuracy", "macro_f1", "errors"])
    assert m["accuracy"] == pytest.approx(3 / 6)
    # SUPPORTS: tp 2 fp 1 fn 1 -> 4/6 ; REFUTES: tp 1 fp 1 fn 1 -> 2/4 ; NEI: 0
    f1 = per_class_f1([("SUPPORTS", "SUPPORTS")] * 2 + [("REFUTES", "SUPPORTS"),
                      ("REFUTES", "REFUTES"), ("SUPPORTS", "REFUTES"), (None, "NOT ENOUGH INFO")])
    assert f1 == pytest.approx({"SUPPORTS": 2 / 3, "REFUTES": 0.5, "NOT ENOUGH INFO": 0.0})
    assert m["macro_f1"] == pytest.approx((2 / 3 + 0.5 + 0) / 3)
    assert m["errors"] == 1


def test_co2_and_cons_by_hand():
    rows = [
        row("SUPPORTS", "SUPPORTS", final={"a": "SUPPORTS", "b": "SUPPORTS"}),  # consistent, correct
        row("REFUTES", "SUPPORTS", final={"a": "REFUTES", "b": "REFUTES"}),    # consistent, wrong
        row("SUPPORTS", "SUPPORTS", final={"a": "SUPPORTS", "b": "REFUTES"}),   # inconsistent
        row("SUPPORTS", "SUPPORTS", final={"a": "SUPPORTS", "b": None}),        # one unparsed
        row("SUPPORTS", "SUPPORTS", final={"a": None, "b": None}),              # no labels: n/a
        row("SUPPORTS", "SUPPORTS"),                                             # no debaters: n/a
    ]
    m = compute_metrics(rows, ["co2", "cons"])
    assert m["cons"] == pytest.approx(2 / 4) and m["co2"] == pytest.approx(1 / 4)


def test_multi_answer_em_precision_recall_f1():
    s = multi_answer_scores(["The 1963", "1956"], ["1963", "1956"], ["1998"])
    assert s == {"em": 1.0, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    s = multi_answer_scores(["1963", "1998", "banana"], ["1963", "1956"], ["1998"])
    assert s["em"] == 0.0 and s["precision"] == pytest.approx(1 / 3)
    assert s["recall"] == pytest.approx(1 / 2) and s["f1"] == pytest.approx(0.4)
    # all gold present but a misinformation answer too: not an exact match
    assert multi_answer_scores(["1963", "1956", "1998"], ["1963", "1956"], ["1998"])["em"] == 0.0
    assert multi_answer_scores([], ["x"])["f1"] == 0.0
    rows = [row(None, None, task="open_qa", answers=["American football"],
                gold_answers=["American football"]),
            row(None, None, task="open_qa", answers=["soccer"], gold_answers=["American football"])]
    m = compute_metrics(rows, ["accuracy", "multi_em", "multi_recall"])
    assert m == {"accuracy": 0.5, "multi_em": 0.5, "multi_recall": 0.5}


def test_token_f1_squad_style():
    assert token_f1("The Eiffel Tower", "eiffel tower") == 1.0
    # pred tokens {paris, france, capital}, gold {paris}: p=1/3, r=1 -> 0.5
    assert token_f1("Paris, France capital", "Paris") == pytest.approx(0.5)
    assert token_f1("London", "Paris") == 0.0
    rows = [row(None, None, task="open_qa", answers=["Paris, France capital"],
                gold_answers=["Berlin", "Paris"])]
    assert compute_metrics(rows, ["token_f1"])["token_f1"] == pytest.approx(0.5)


def test_bootstrap_ci_is_reproducible_by_seed_and_brackets_the_mean():
    values = [1.0] * 73 + [0.0] * 27
    ci = bootstrap_ci(values, seed=7)
    assert ci == bootstrap_ci(values, seed=7)
    assert ci != bootstrap_ci(values, seed=8)
    lo, hi = ci
    # binomial standard error sqrt(.73*.27/100) = 0.0444 -> about +-0.087
    assert 0.63 <= lo <= 0.66 and 0.80 <= hi <= 0.83
    assert bootstrap_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)
    assert bootstrap_ci([]) is None


def test_paired_bootstrap_difference_and_p_value():
    a = [1.0] * 10 + [0.0] * 10
    same = paired_bootstrap(a, a)
    assert same["delta"] == 0.0 and same["p_value"] == 1.0 and same["ci95"] == (0.0, 0.0)
    b = [1.0] * 20  # B fixes all 10 of A's errors
    better = paired_bootstrap(a, b, seed=3)
    assert better["delta"] == 0.5 and better["p_value"] == 0.0
    assert 0.25 <= better["ci95"][0] < 0.5 < better["ci95"][1] <= 0.75
    assert paired_bootstrap(a, b, seed=3) == better


def test_registry_metadata_and_did_you_mean():
    assert METRICS.entry("accuracy").meta == {"higher_is_better": True, "aggregation": "mean"}
    assert METRICS.entry("cost_usd").meta["aggregation"] == "sum"
    assert METRICS.get("rounds").higher_is_better is None
    with pytest.raises(ConfigError, match="did you mean 'macro_f1'"):
        METRICS.get("macro-f1")


def test_cost_from_price_table():
    ledger = {"prompt_tokens": 1_000_000, "completion_tokens": 500_000}
    assert estimate_cost(ledger, "openai:gpt-4o-mini") == pytest.approx(0.15 + 0.30)
    assert estimate_cost(ledger, "scripted:agree?latency=0.1") == 0.0
    assert estimate_cost(ledger, "openai:unknown-model") is None
    rows = [row("S", "S", cost_usd=0.25), row("S", "S", cost_usd=0.5)]
    assert compute_metrics(rows, ["cost_usd"])["cost_usd"] == pytest.approx(0.75)
