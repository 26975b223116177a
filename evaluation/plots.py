"""PNG plots of an evaluation (matplotlib, headless ``Agg`` backend).

* ``accuracy_vs_rounds.png`` - accuracy by rounds used, per run (Tool-MAD Fig. 8 shows accuracy
  against the number of rounds; one run gives the accuracy of the items that stopped at each round).
* ``stability_scores.png`` - distribution of every per-round debater score (Tool-MAD Fig. 3).
* ``scores_correct_vs_incorrect.png`` - an item's mean score, correct vs incorrect (Fig. 11).
* ``tool_calls_memory.png`` - tool calls per item, runs with vs without evidence memory (MERMAID
  Fig. 3); drawn when some run's Context has a ``memory`` field.
* ``accuracy_vs_cost.png`` - accuracy against cost per item (tokens per item when no price).

A plot without data is not drawn; the returned map says why instead of a path.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from factdebate.evaluation.metrics import correct, is_ok

Rows = dict[str, list[dict[str, Any]]]


def _figure() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _name(run: dict[str, Any]) -> str:
    return f"{run['framework']}/{run['dataset']}"


def _save(plt: Any, fig: Any, out: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(out / name, dpi=100)
    plt.close(fig)
    return name


def _score_values(row: dict[str, Any]) -> dict[str, list[float]]:
    values: dict[str, list[float]] = defaultdict(list)
    for info in (row.get("scores") or {}).values():
        for entry in info.get("rounds", []):
            for key, value in entry.items():
                if key != "round" and isinstance(value, int | float):
                    values[key].append(float(value))
    return values


def accuracy_vs_rounds(out: Path, runs: list[dict[str, Any]], rows: Rows) -> str:
    """Accuracy of the items that used r rounds, per run."""
    plt = _figure()
    fig, ax = plt.subplots(figsize=(6, 4))
    drawn = False
    for run in runs:
        buckets: dict[int, list[float]] = defaultdict(list)
        for row in rows[run["run_id"]]:
            if (c := correct(row)) is not None:
                buckets[int(row["rounds"])].append(float(c))
        if buckets:
            xs = sorted(buckets)
            ax.plot(xs, [sum(buckets[x]) / len(buckets[x]) for x in xs], marker="o", label=_name(run))
            drawn = True
    if not drawn:
        plt.close(fig)
        return "not drawn: no finished items"
    ax.set(xlabel="rounds used", ylabel="accuracy", ylim=(0, 1.05), title="Accuracy vs rounds")
    ax.legend(fontsize=7)
    return _save(plt, fig, out, "accuracy_vs_rounds.png")


def score_distributions(out: Path, rows: Rows) -> str:
    """Histogram per score kind over every debater turn of every run."""
    merged: dict[str, list[float]] = defaultdict(list)
    for run_rows in rows.values():
        for row in run_rows:
            for key, vals in _score_values(row).items():
                merged[key].extend(vals)
    if not merged:
        return "not drawn: no per-round scores (scoring_mode none or frameworks without scores)"
    plt = _figure()
    fig, axes = plt.subplots(1, len(merged), figsize=(4 * len(merged), 3.5), squeeze=False)
    for ax, (key, vals) in zip(axes[0], sorted(merged.items()), strict=True):
        ax.hist(vals, bins=20, range=(0, 1))
        ax.set(title=key, xlabel="score", ylabel="turns")
    return _save(plt, fig, out, "stability_scores.png")


def scores_by_correctness(out: Path, rows: Rows) -> str:
    """Box plot of each item's mean debater score, split by correct vs incorrect."""
    groups: dict[str, list[float]] = {"correct": [], "incorrect": []}
    for run_rows in rows.values():
        for row in run_rows:
            vals = [v for vs in _score_values(row).values() for v in vs]
            if vals and (c := correct(row)) is not None:
                groups["correct" if c else "incorrect"].append(sum(vals) / len(vals))
    if not any(groups.values()):
        return "not drawn: no per-round scores"
    plt = _figure()
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.boxplot([groups["correct"] or [float("nan")], groups["incorrect"] or [float("nan")]])
    ax.set_xticks([1, 2], [f"correct (n={len(groups['correct'])})",
                           f"incorrect (n={len(groups['incorrect'])})"])
    ax.set(ylabel="mean score of the item", title="Scores of correct vs incorrect predictions")
    return _save(plt, fig, out, "scores_correct_vs_incorrect.png")


def tool_calls_memory(out: Path, runs: list[dict[str, Any]]) -> str:
    """Mean tool calls per item, runs with memory on vs off."""
    with_memory = [r for r in runs if "memory" in r["settings"]]
    if not with_memory:
        return "not drawn: no run has a memory setting (MERMAID)"
    plt = _figure()
    fig, ax = plt.subplots(figsize=(6, 4))
    labels = [f"{_name(r)}\nmemory {'on' if r['settings']['memory'] else 'off'}" for r in with_memory]
    ax.bar(labels, [r["metrics"].get("tool_calls", 0) for r in with_memory])
    ax.set(ylabel="tool calls per item", title="Tool calls with vs without memory")
    ax.tick_params(axis="x", labelsize=7)
    return _save(plt, fig, out, "tool_calls_memory.png")


def accuracy_vs_cost(out: Path, runs: list[dict[str, Any]]) -> str:
    """Scatter of accuracy against cost (or tokens) per item, one point per run."""
    points = [r for r in runs if "accuracy" in r["metrics"]]
    if not points:
        return "not drawn: no finished items"
    priced = all(r["metrics"].get("cost_usd") is not None for r in points)
    plt = _figure()
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in points:
        m = r["metrics"]
        x = (m["cost_usd"] / max(r["n_ok"], 1) if priced
             else m.get("prompt_tokens", 0) + m.get("completion_tokens", 0))
        ax.scatter([x], [m["accuracy"]])
        ax.annotate(_name(r), (x, m["accuracy"]), fontsize=7)
    ax.set(xlabel="USD per item" if priced else "tokens per item", ylabel="accuracy",
           ylim=(0, 1.05), title="Accuracy vs cost")
    return _save(plt, fig, out, "accuracy_vs_cost.png")


def draw_plots(out: Path, runs: list[dict[str, Any]], rows: Rows) -> dict[str, str]:
    """Every plot; value = file name relative to ``out`` or the reason it was not drawn."""
    ok_rows = {k: [r for r in v if is_ok(r)] for k, v in rows.items()}
    return {
        "accuracy vs rounds": accuracy_vs_rounds(out, runs, ok_rows),
        "score distributions": score_distributions(out, ok_rows),
        "scores of correct vs incorrect": scores_by_correctness(out, ok_rows),
        "tool calls with vs without memory": tool_calls_memory(out, runs),
        "accuracy vs cost": accuracy_vs_cost(out, runs),
    }
