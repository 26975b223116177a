"""PNG plots of an evaluation (matplotlib, headless ``Agg`` backend).

* ``accuracy_vs_rounds.png`` - two panels per evaluation (Tool-MAD Fig. 8 plots accuracy against
  rounds): (a) accuracy of the items that *stopped* at round r, each point labelled with its n
  (early stops are the easy items, so this is not "accuracy after r rounds"); (b) accuracy *if
  every debate had stopped after round r*: an item that stopped by then keeps its answer, a later
  one takes the majority label of its debaters' round-r answers (first debater on ties).
* ``stability_scores.png`` - histograms of every per-round debater score, one row of panels per
  run, with the run's stopping thresholds drawn as dashed lines (Tool-MAD Fig. 3).
* ``scores_correct_vs_incorrect.png`` - one panel per score kind (faithfulness, answer relevancy,
  consistency ...): an item's mean score, correct vs incorrect, with n (Fig. 11).
* ``tool_calls_memory.png`` - tool calls per item, runs with vs without evidence memory (MERMAID
  Fig. 3); drawn when some run's Context has a ``memory`` field.
* ``accuracy_vs_cost.png`` - accuracy against USD per item; when a run has no price (cost
  None) or every cost is 0 (a local model, the test double) the x axis falls back to tokens per
  item, then to LLM calls per item, so the axis is never degenerate (it starts at 0).

Integer quantities (rounds, counts of turns) get integer axes. A plot without data is not drawn;
the returned map says why instead of a path.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from factdebate.evaluation.metrics import correct, is_ok

Rows = dict[str, list[dict[str, Any]]]
THRESHOLDS = {"faithfulness": "faithfulness_threshold", "answer_relevancy": "relevance_threshold"}
"""Score kind -> the Context field holding its stopping threshold (Tool-MAD stability mode)."""


def _figure() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _integer_axis(axis: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _name(run: dict[str, Any]) -> str:
    """``framework/dataset [run folder]`` (the folder tells two runs of one pair apart)."""
    folder = Path(run["run_dir"]).name if run.get("run_dir") else ""
    return f"{run['framework']}/{run['dataset']}" + (f" [{folder}]" if folder else "")


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


def label_after_round(row: dict[str, Any], r: int) -> str | None:
    """The answer had the debate stopped after round ``r``: the final one if it had stopped,
    else the majority of the debaters' round-``r`` labels (first debater on ties)."""
    if int(row["rounds"]) <= r:
        return row["prediction"].get("label")
    labels = [label for _, rnd, label in row.get("turn_labels") or [] if rnd == r and label]
    if not labels:
        return None
    counts = Counter(labels)
    return next(label for label in labels if counts[label] == max(counts.values()))


def rounds_curves(rows: list[dict[str, Any]]) -> tuple[dict[int, list[float]], dict[int, float]]:
    """``(r -> outcomes of items that stopped at r, r -> accuracy if stopped after r)``."""
    stopped: dict[int, list[float]] = defaultdict(list)
    scored = [r for r in rows if (c := correct(r)) is not None and r["prediction"].get("label")]
    for row in rows:
        if (c := correct(row)) is not None:
            stopped[int(row["rounds"])].append(float(c))
    last = max((int(r["rounds"]) for r in scored), default=0)
    after = {r: sum(label_after_round(row, r) == row["gold"].get("label") for row in scored)
             / len(scored) for r in range(1, last + 1)}
    return stopped, after


def accuracy_vs_rounds(out: Path, runs: list[dict[str, Any]], rows: Rows) -> str:
    """(a) accuracy of the items that stopped at round r (with n); (b) if stopped after r."""
    curves = {run["run_id"]: rounds_curves(rows[run["run_id"]]) for run in runs}
    if not any(stopped for stopped, _ in curves.values()):
        return "not drawn: no finished items"
    plt = _figure()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for run in runs:
        stopped, after = curves[run["run_id"]]
        if stopped:
            xs = sorted(stopped)
            ys = [sum(stopped[x]) / len(stopped[x]) for x in xs]
            left.plot(xs, ys, marker="o", label=_name(run))
            for x, y in zip(xs, ys, strict=True):
                left.annotate(f"n={len(stopped[x])}", (x, y), textcoords="offset points",
                              xytext=(4, 6), fontsize=7)
        if after:
            right.plot(sorted(after), [after[x] for x in sorted(after)], marker="o",
                       label=_name(run))
    left.set(xlabel="round the debate stopped at", ylabel="accuracy", ylim=(0, 1.1),
             title="(a) Accuracy of items that stopped at round r")
    right.set(xlabel="rounds r allowed", ylabel="accuracy", ylim=(0, 1.1),
              title="(b) Accuracy if every debate stopped after round r")
    for ax in (left, right):
        _integer_axis(ax.xaxis)
        ax.legend(fontsize=7)
    return _save(plt, fig, out, "accuracy_vs_rounds.png")


def _thresholds(run: dict[str, Any]) -> dict[str, float]:
    """Score kind -> stopping threshold from the run's ``run.json`` context (if it has one)."""
    path = Path(run.get("run_dir") or "") / "run.json"
    if not path.is_file():
        return {}
    context = json.loads(path.read_text(encoding="utf-8")).get("context") or {}
    if context.get("scoring_mode") != "stability":
        return {}
    return {kind: float(context[f]) for kind, f in THRESHOLDS.items() if f in context}


def score_distributions(out: Path, runs: list[dict[str, Any]], rows: Rows) -> str:
    """Histograms per run (rows) and score kind (columns), thresholds as dashed lines."""
    per_run: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        merged: dict[str, list[float]] = defaultdict(list)
        for row in rows[run["run_id"]]:
            for key, vals in _score_values(row).items():
                merged[key].extend(vals)
        if merged:
            per_run[run["run_id"]] = merged
    if not per_run:
        return "not drawn: no per-round scores (scoring_mode none or frameworks without scores)"
    kinds = sorted({k for merged in per_run.values() for k in merged})
    shown = [run for run in runs if run["run_id"] in per_run]
    plt = _figure()
    fig, axes = plt.subplots(len(shown), len(kinds), figsize=(4 * len(kinds), 3 * len(shown)),
                             squeeze=False)
    for axes_row, run in zip(axes, shown, strict=True):
        limits = _thresholds(run)
        for ax, kind in zip(axes_row, kinds, strict=True):
            vals = per_run[run["run_id"]].get(kind, [])
            ax.hist(vals, bins=20, range=(0, 1))
            if kind in limits:
                ax.axvline(limits[kind], color="red", linestyle="--",
                           label=f"threshold {limits[kind]:g}")
                ax.legend(fontsize=7)
            ax.set(title=f"{_name(run)}: {kind} (n={len(vals)})", xlabel="score",
                   ylabel="debater turns")
            ax.title.set_fontsize(9)
            _integer_axis(ax.yaxis)
    return _save(plt, fig, out, "stability_scores.png")


def scores_by_correctness(out: Path, rows: Rows) -> str:
    """One box plot per score kind: each item's mean score, correct vs incorrect, with n."""
    groups: dict[str, dict[bool, list[float]]] = defaultdict(lambda: {True: [], False: []})
    for run_rows in rows.values():
        for row in run_rows:
            if (c := correct(row)) is None:
                continue
            for kind, vals in _score_values(row).items():
                if vals:
                    groups[kind][bool(c)].append(sum(vals) / len(vals))
    if not groups:
        return "not drawn: no per-round scores"
    plt = _figure()
    kinds = sorted(groups)
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.5 * len(kinds), 4), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        right, wrong = groups[kind][True], groups[kind][False]
        ax.boxplot([right or [float("nan")], wrong or [float("nan")]])
        ax.set_xticks([1, 2], [f"correct (n={len(right)})", f"incorrect (n={len(wrong)})"])
        ax.set(ylabel=f"item's mean {kind}", ylim=(-0.05, 1.05), title=kind)
    fig.suptitle("Scores of correct vs incorrect predictions")
    return _save(plt, fig, out, "scores_correct_vs_incorrect.png")


def tool_calls_memory(out: Path, runs: list[dict[str, Any]]) -> str:
    """Mean tool calls per item, runs with memory on vs off."""
    with_memory = [r for r in runs if "memory" in r["settings"]]
    if not with_memory:
        return "not drawn: no run has a memory setting (MERMAID)"
    plt = _figure()
    fig, ax = plt.subplots(figsize=(6, 4))
    labels = [f"{_name(r)}\nmemory {'on' if r['settings']['memory'] else 'off'}\n"
              f"(n={r['n_ok']})" for r in with_memory]
    ax.bar(labels, [r["metrics"].get("tool_calls", 0) for r in with_memory])
    ax.set(ylabel="tool calls per item", title="Tool calls with vs without memory")
    ax.tick_params(axis="x", labelsize=7)
    return _save(plt, fig, out, "tool_calls_memory.png")


def cost_axis(points: list[dict[str, Any]]) -> tuple[str, list[float]]:
    """The x quantity per run: USD, else tokens, else LLM calls per item (first non-degenerate)."""
    costs = [r["metrics"].get("cost_usd") for r in points]
    if all(c is not None for c in costs) and any(c > 0 for c in costs):
        return "USD per item", [c / max(r["n_ok"], 1) for c, r in zip(costs, points, strict=True)]
    tokens = [r["metrics"].get("prompt_tokens", 0) + r["metrics"].get("completion_tokens", 0)
              for r in points]
    why = "no price" if any(c is None for c in costs) else "cost 0"
    if any(t > 0 for t in tokens):
        return f"tokens per item ({why}: tokens instead of USD)", tokens
    return f"LLM calls per item ({why}, no token counts)", \
        [r["metrics"].get("llm_calls", 0) for r in points]


def accuracy_vs_cost(out: Path, runs: list[dict[str, Any]]) -> str:
    """Scatter of accuracy against cost per item (or its fallback), one point per run."""
    points = [r for r in runs if "accuracy" in r["metrics"]]
    if not points:
        return "not drawn: no finished items"
    label, xs = cost_axis(points)
    plt = _figure()
    fig, ax = plt.subplots(figsize=(6, 4))
    for r, x in zip(points, xs, strict=True):
        ax.scatter([x], [r["metrics"]["accuracy"]])
        ax.annotate(f"{_name(r)} (n={r['n_ok']})", (x, r["metrics"]["accuracy"]), fontsize=7,
                    textcoords="offset points", xytext=(4, 4))
    ax.set(xlabel=label, ylabel="accuracy", ylim=(0, 1.05), xlim=(0, (max(xs) or 1) * 1.25),
           title="Accuracy vs cost")
    return _save(plt, fig, out, "accuracy_vs_cost.png")


PLOT_NAMES = ("accuracy vs rounds", "score distributions", "scores of correct vs incorrect",
              "tool calls with vs without memory", "accuracy vs cost")
"""The keys of :func:`draw_plots`' answer."""


def draw_plots(out: Path, runs: list[dict[str, Any]], rows: Rows) -> dict[str, str]:
    """Every plot; value = file name relative to ``out`` or the reason it was not drawn.

    matplotlib comes with the ``plots`` extra; without it every plot says so instead.
    """
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        reason = "not drawn: matplotlib is not installed (pip install 'factdebate[plots]')"
        return dict.fromkeys(PLOT_NAMES, reason)
    ok_rows = {k: [r for r in v if is_ok(r)] for k, v in rows.items()}
    return {
        "accuracy vs rounds": accuracy_vs_rounds(out, runs, ok_rows),
        "score distributions": score_distributions(out, runs, ok_rows),
        "scores of correct vs incorrect": scores_by_correctness(out, ok_rows),
        "tool calls with vs without memory": tool_calls_memory(out, runs),
        "accuracy vs cost": accuracy_vs_cost(out, runs),
    }
