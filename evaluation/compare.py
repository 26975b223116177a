"""``factdebate compare OUT1 OUT2``: accuracy difference on the shared items, two paired tests.

Only items finished in both runs count (same item ids; error rows excluded). Two views of the
same paired data, side by side:

* the paired bootstrap resamples the shared items with replacement (seeded) and recomputes the
  difference B - A; the 95% interval is the percentile interval and the two-sided p-value is
  twice the smaller tail share of resampled differences at or beyond zero (capped at 1);
* McNemar's exact test looks only at the discordant items - ``b`` = A wrong and B right,
  ``c`` = A right and B wrong - and under H0 (either is as likely) ``min(b, c)`` is
  Binomial(b + c, 1/2): two-sided p = min(1, 2 * P(X <= min(b, c))); p = 1 when b + c = 0.

A comparison on fewer than ``SMALL_N`` shared items carries a warning (both tests are then
unreliable, the bootstrap interval especially). Each run is named by framework, dataset and model
plus every Context setting (from ``run.json``) in which the two runs differ, so two Tool-MAD runs
that differ only in ``stop_rule`` are told apart.

Evidence quality is compared the same way, item by item on the items both runs scored
(gold evidence and citation data in both): the FEVER score (0/1, also McNemar) and the page- and
sentence-level evidence F1 (bootstrap only), each with its own n and each run's retrieval ceiling
on those items (the share whose gold evidence is in its index at all).

Each run's index (``run.json`` ``index``, ``evaluation/index_identity.py``) is named in the result;
when the two runs searched different indexes (another corpus, model or index parameters) the
comparison carries a warning naming both: its differences may be the indexes', not the
frameworks'.
"""

from __future__ import annotations

import random
from math import comb
from pathlib import Path
from typing import Any

from factdebate.core.errors import InputError
from factdebate.evaluation.evidence_metrics import ceiling_summary, item_value
from factdebate.evaluation.index_identity import describe, index_change
from factdebate.evaluation.metrics import correct
from factdebate.evaluation.reports import load_run

SMALL_N = 30
"""Below this many shared items a comparison gets a warning."""
NAMED_ELSEWHERE = {"debater_model"}
"""Context fields already in a run's name (framework/dataset (model))."""


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


def mcnemar_exact(a: list[float], b: list[float]) -> dict[str, Any]:
    """McNemar's exact test on paired 0/1 outcomes: discordant counts and two-sided p."""
    only_b = sum(1 for x, y in zip(a, b, strict=True) if not x and y)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    n = only_a + only_b
    if n == 0:
        return {"b_only_correct": 0, "a_only_correct": 0, "mcnemar_p": 1.0}
    tail = sum(comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n
    return {"b_only_correct": only_b, "a_only_correct": only_a, "mcnemar_p": min(1.0, 2 * tail)}


def differing_settings(rec_a: dict[str, Any], rec_b: dict[str, Any]) -> tuple[str, str]:
    """``key=value`` settings of each run where the two runs' Contexts differ ("" if none)."""
    ctx_a, ctx_b = rec_a.get("context") or {}, rec_b.get("context") or {}
    keys = sorted(k for k in set(ctx_a) | set(ctx_b)
                  if k not in NAMED_ELSEWHERE and ctx_a.get(k) != ctx_b.get(k))

    def show(ctx: dict[str, Any]) -> str:
        return " ".join(f"{k}={_value(ctx.get(k, '-'))}" for k in keys)

    return show(ctx_a), show(ctx_b)


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return "''" if value == "" else str(value)


def run_name(record: dict[str, Any], settings: str) -> str:
    """``framework/dataset (model)`` plus the settings that set this run apart."""
    base = f"{record['framework']}/{record['dataset']} ({record['models']['debater']})"
    return f"{base} {settings}" if settings else base


def compare_runs(dir_a: Path, dir_b: Path, *, seed: int = 0) -> dict[str, Any]:
    """Paired comparison of two run folders on their shared finished items."""
    (rec_a, rows_a), (rec_b, rows_b) = load_run(dir_a), load_run(dir_b)
    scored_a = {r["item_id"]: c for r in rows_a if (c := correct(r)) is not None}
    scored_b = {r["item_id"]: c for r in rows_b if (c := correct(r)) is not None}
    shared = [i for i in rec_a["item_ids"] if i in scored_a and i in scored_b]
    a = [float(scored_a[i]) for i in shared]
    b = [float(scored_b[i]) for i in shared]
    result = paired_bootstrap(a, b, seed=seed) | mcnemar_exact(a, b)
    settings_a, settings_b = differing_settings(rec_a, rec_b)
    warnings = []
    unrecorded = {"status": "unrecorded"}
    index_a, index_b = rec_a.get("index", unrecorded), rec_b.get("index", unrecorded)
    if index_change(index_a, index_b):
        warnings.append(f"DIFFERENT INDEXES: A searched {describe(index_a)}; B searched "
                        f"{describe(index_b)}. Differences in accuracy and evidence figures may "
                        "be the indexes', not the frameworks'")
    if result["n"] < SMALL_N:
        warnings.append(f"only {result['n']} shared item(s) (fewer than {SMALL_N}): the interval "
                        "and both p-values are unreliable; compare larger runs")
    return {"a": run_name(rec_a, settings_a), "b": run_name(rec_b, settings_b),
            "only_a": len(scored_a) - len(shared), "only_b": len(scored_b) - len(shared),
            "warnings": warnings, **result, "index_a": index_a, "index_b": index_b,
            "same_index": not index_change(index_a, index_b),
            "evidence": compare_evidence(rec_a, rows_a, rows_b, seed=seed)}


EVIDENCE_METRICS = {"fever_score": "FEVER score", "evidence_f1": "evidence F1 (page level)",
                    "evidence_sentence_f1": "evidence F1 (sentence level)"}
"""Evidence figures compared item by item, each where both runs have it."""


def compare_evidence(record: dict[str, Any], rows_a: list[dict[str, Any]],
                     rows_b: list[dict[str, Any]], *, seed: int = 0) -> list[dict[str, Any]]:
    """Paired B - A of each evidence metric on the items both runs scored (gold evidence and
    citation data in both): bootstrap interval and p, McNemar's exact p for the 0/1 FEVER score."""
    out = []
    for key, name in EVIDENCE_METRICS.items():
        value = item_value(key)
        got_a = {r["item_id"]: v for r in rows_a if (v := value(r)) is not None}
        got_b = {r["item_id"]: v for r in rows_b if (v := value(r)) is not None}
        shared = [i for i in record["item_ids"] if i in got_a and i in got_b]
        if not shared:
            continue
        a, b = [got_a[i] for i in shared], [got_b[i] for i in shared]
        result = paired_bootstrap(a, b, seed=seed)
        result = {"metric": key, "name": name, "n": result["n"], "a": result["accuracy_a"],
                  "b": result["accuracy_b"], "delta": result["delta"], "ci95": result["ci95"],
                  "p_value": result["p_value"]}
        if key == "fever_score":
            result |= mcnemar_exact(a, b)
        for side, rows in (("a", rows_a), ("b", rows_b)):
            ceiling = ceiling_summary([r for r in rows if r["item_id"] in set(shared)],
                                      "sentence" if key == "evidence_sentence_f1" else "page")
            result[f"ceiling_{side}"] = ceiling["share"] if ceiling else None
            result[f"ceiling_n_{side}"] = ceiling["n"] if ceiling else None
        out.append(result)
    return out


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


COLUMNS = ("A", "B", "shared n", "acc A", "acc B", "B - A", "95% CI (bootstrap)",
           "p (bootstrap)", "B only / A only correct", "p (McNemar exact)")


EVIDENCE_COLUMNS = ("A", "B", "evidence metric", "shared n", "A", "B", "B - A",
                    "95% CI (bootstrap)", "p (bootstrap)", "p (McNemar exact)",
                    "ceiling A / B (gold in index)")


def evidence_rows(results: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """One row of ``EVIDENCE_COLUMNS`` per evidence metric per comparison (with its n)."""
    return [(r["a"], r["b"], e["name"], str(e["n"]), f"{e['a']:.3f}", f"{e['b']:.3f}",
             f"{e['delta']:+.3f}", f"({e['ci95'][0]:+.3f}, {e['ci95'][1]:+.3f})",
             f"{e['p_value']:.4f}", f"{e['mcnemar_p']:.4f}" if "mcnemar_p" in e else "-",
             f"{_share(e.get('ceiling_a'), e.get('ceiling_n_a'))} / "
             f"{_share(e.get('ceiling_b'), e.get('ceiling_n_b'))}")
            for r in results for e in r.get("evidence") or []]


def _share(value: float | None, n: int | None) -> str:
    return "-" if value is None else f"{value:.3f} (n={n})"


def table_rows(results: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """One row of ``COLUMNS`` per comparison (every figure next to its n)."""
    return [(r["a"], r["b"], str(r["n"]), f"{r['accuracy_a']:.3f}", f"{r['accuracy_b']:.3f}",
             f"{r['delta']:+.3f}", f"({r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f})",
             f"{r['p_value']:.4f}", f"{r['b_only_correct']} / {r['a_only_correct']}",
             f"{r['mcnemar_p']:.4f}") for r in results]
