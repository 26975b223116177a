"""``factdebate compare OUT1 OUT2``: accuracy difference on the shared items, paired bootstrap.

Only items finished in both runs count (same item ids; error rows excluded). The paired bootstrap
resamples those items with replacement (seeded) and recomputes the difference B - A; the 95%
interval is the percentile interval and the two-sided p-value is twice the smaller tail share of
resampled differences at or beyond zero (capped at 1).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from factdebate.evaluation.metrics import correct
from factdebate.evaluation.reports import load_run

from factdebate.core.errors import InputError


def run_dirs(out: Path) -> dict[str, Path]:
    """Run folders of an eval output: ``out`` itself, or its sub-folders of a ``--config`` run."""
    if (out / "run.json").is_file():
        return {out.name: out}
    found = {d.name: d for d in sorted(out.iterdir()) if (d / "run.json").is_file()} \
        if out.is_dir() else {}
    if not found:
        raise InputError(f"{out} holds no evaluation run (no run.json)", "pass an eval --out folder")
    return found


def paired_bootstrap(a: list[float], b: list[float], *, resamples: int = 10000,
                     seed: int = 0) -> dict[str, Any]:
    """Mean difference ``b - a`` with its 95% interval and two-sided p-value."""
    if len(a) != len(b) or not a:
        raise InputError("the runs share no finished items", "compare runs on the same dataset")
    n = len(a)
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    boot = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    below = sum(d <= 0 for d in boot) / resamples
    above = sum(d >= 0 for d in boot) / resamples
    return {
        "n": n, "accuracy_a": sum(a) / n, "accuracy_b": sum(b) / n, "delta": sum(diffs) / n,
        "ci95": (boot[int(0.025 * resamples)], boot[min(resamples - 1, int(0.975 * resamples))]),
        "p_value": min(1.0, 2 * min(below, above)),
    }


def compare_runs(dir_a: Path, dir_b: Path, *, seed: int = 0) -> dict[str, Any]:
    """Paired comparison of two run folders on their shared finished items."""
    (rec_a, rows_a), (rec_b, rows_b) = load_run(dir_a), load_run(dir_b)
    scored_a = {r["item_id"]: c for r in rows_a if (c := correct(r)) is not None}
    scored_b = {r["item_id"]: c for r in rows_b if (c := correct(r)) is not None}
    shared = [i for i in rec_a["item_ids"] if i in scored_a and i in scored_b]
    result = paired_bootstrap([float(scored_a[i]) for i in shared],
                              [float(scored_b[i]) for i in shared], seed=seed)
    return {"a": f"{rec_a['framework']}/{rec_a['dataset']} ({rec_a['models']['debater']})",
            "b": f"{rec_b['framework']}/{rec_b['dataset']} ({rec_b['models']['debater']})",
            "only_a": len(scored_a) - len(shared), "only_b": len(scored_b) - len(shared), **result}


def compare_outputs(out_a: Path, out_b: Path, *, seed: int = 0) -> list[dict[str, Any]]:
    """Compare two eval outputs: the single runs, or the sub-runs with the same folder name."""
    runs_a, runs_b = run_dirs(out_a), run_dirs(out_b)
    if len(runs_a) == 1 and len(runs_b) == 1:
        pairs = [(next(iter(runs_a.values())), next(iter(runs_b.values())))]
    else:
        pairs = [(runs_a[k], runs_b[k]) for k in runs_a if k in runs_b]
    if not pairs:
        raise InputError(f"{out_a} and {out_b} have no runs in common", "compare matching configs")
    return [compare_runs(a, b, seed=seed) for a, b in pairs]
