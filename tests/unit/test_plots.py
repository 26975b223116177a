"""Evaluation plots: the rounds curves, the cost-axis fallback, and that every
plot is drawn from a small synthetic evaluation (the PNGs were also checked by eye)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factdebate.evaluation.plots import cost_axis, draw_plots, label_after_round, rounds_curves


def row(gold: str, final: str, rounds: int, turns: list[tuple[str, int, str]],
        faith: float = 0.9) -> dict[str, Any]:
    scores = {"rag": {"rounds": [{"round": r, "faithfulness": faith, "answer_relevancy": 0.85}
                                 for r in range(1, rounds + 1)]}}
    return {"status": "ok", "task": "fever", "gold": {"label": gold},
            "prediction": {"label": final}, "rounds": rounds,
            "turn_labels": [list(t) for t in turns], "scores": scores}


ROWS = [
    row("SUPPORTS", "SUPPORTS", 1, [("rag", 1, "SUPPORTS"), ("search", 1, "SUPPORTS")]),
    row("REFUTES", "REFUTES", 3, [("rag", 1, "SUPPORTS"), ("search", 1, "REFUTES"),
                                  ("rag", 2, "REFUTES"), ("search", 2, "SUPPORTS"),
                                  ("rag", 3, "REFUTES"), ("search", 3, "SUPPORTS")], 0.4),
    row("REFUTES", "SUPPORTS", 2, [("rag", 1, "REFUTES"), ("search", 1, "REFUTES"),
                                   ("rag", 2, "SUPPORTS"), ("search", 2, "SUPPORTS")], 0.5),
]


def test_label_after_round_keeps_stopped_answers_and_takes_the_round_majority():
    assert label_after_round(ROWS[0], 1) == "SUPPORTS"  # stopped at 1: its answer
    assert label_after_round(ROWS[1], 1) == "SUPPORTS"  # tie: the first debater
    assert label_after_round(ROWS[1], 2) == "REFUTES"
    assert label_after_round(ROWS[2], 1) == "REFUTES"  # it would have been right after round 1
    assert label_after_round(ROWS[2], 2) == "SUPPORTS"


def test_rounds_curves():
    stopped, after = rounds_curves(ROWS)
    assert stopped == {1: [1.0], 2: [0.0], 3: [1.0]}
    assert after == {1: 2 / 3, 2: 2 / 3, 3: 2 / 3}
    stopped, after = rounds_curves(ROWS[1:])
    assert after == {1: 0.5, 2: 0.5, 3: 0.5}


def run(run_id: str, cost: float | None, tokens: float, calls: float, n: int = 3) -> dict:
    return {"run_id": run_id, "framework": "tool_mad", "dataset": "fever", "n_ok": n,
            "settings": {}, "metrics": {"accuracy": 0.5, "cost_usd": cost, "llm_calls": calls,
                                        "prompt_tokens": tokens, "completion_tokens": 0}}


def test_cost_axis_falls_back_when_prices_are_unknown_or_zero():
    label, xs = cost_axis([run("a", 0.3, 10, 2), run("b", 0.6, 10, 2)])
    assert label == "USD per item" and xs == pytest.approx([0.1, 0.2])
    label, xs = cost_axis([run("a", None, 100, 2), run("b", 0.6, 300, 2)])
    assert label.startswith("tokens per item (no price") and xs == [100, 300]
    label, xs = cost_axis([run("a", 0.0, 100, 2), run("b", 0.0, 300, 2)])
    assert label.startswith("tokens per item (cost 0") and xs == [100, 300]
    label, xs = cost_axis([run("a", None, 0, 2), run("b", None, 0, 5)])
    assert label.startswith("LLM calls per item") and xs == [2, 5]


def test_every_plot_is_drawn(tmp_path: Path):
    runs = []
    for name, cost in (("a", None), ("b", 0.0)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "run.json").write_text(json.dumps({"context": {
            "scoring_mode": "stability", "faithfulness_threshold": 0.7,
            "relevance_threshold": 0.8}}), encoding="utf-8")
        runs.append(run(name, cost, 1000, 10) | {"run_dir": str(folder)})
    plots = draw_plots(tmp_path, runs, {"a": ROWS, "b": ROWS[:2]})
    for name in ("accuracy vs rounds", "score distributions", "scores of correct vs incorrect",
                 "accuracy vs cost"):
        assert (tmp_path / plots[name]).stat().st_size > 5000, name
    assert plots["tool calls with vs without memory"].startswith("not drawn")
    assert draw_plots(tmp_path, runs, {"a": [], "b": []})["accuracy vs rounds"] == \
        "not drawn: no finished items"
