"""``summary.json`` and ``report.md`` (tables in the papers' shapes) from one or more run folders.

Tables: accuracy as frameworks x datasets (Tool-MAD Table III), accuracy with its 95% bootstrap CI
(Table IV), per-class and macro F1 (MERMAID Table 1), multi-answer EM/P/R/F1 (MADAM-RAG Table 1 and
Fig. 3), Co2/Cons (MADKE Table 3), evidence quality of the cited passages against the gold
evidence (precision/recall/F1, FEVER score, HoVer EM/F1, retrieval vs citation, citation hygiene;
``evaluation/evidence_metrics.py``, with an evidence column beside accuracy in the frameworks x
datasets table), and effort: rounds, calls, tokens, tool calls, cost, wall time.
Plots (``evaluation/plots.py``) are linked from the report.

Caveats travel with the figures (``evaluation/caveats.py``): each run's models per role, whether a
test double answered, rows on the offline search stand-in and error rows head the report and are
in ``summary.json``; every figure in a table stands next to its n (a cell ``62.0 (n=100)`` in the
frameworks x datasets table, an ``N`` column in the others); MERMAID runs get an "Evidence memory"
table (tool calls with vs without memory, MERMAID Fig. 3).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from factdebate.core.control_chars import neutralise
from factdebate.evaluation.caveats import (
    caveat_lines,
    loud_caveats,
    memory_summary,
    memory_table_rows,
    run_caveats,
)
from factdebate.evaluation.evidence_metrics import evidence_summary, headline
from factdebate.evaluation.formats import ANSWERS_TASK
from factdebate.evaluation.index_identity import describe
from factdebate.evaluation.metrics import (
    bootstrap_ci,
    compute_metrics,
    correct,
    is_ok,
    label_pairs,
    per_class_f1,
)
from factdebate.evaluation.results import RESULTS, read_results

CONTEXT_KEYS = ("max_rounds", "scoring_mode", "debaters", "memory", "debater_model")


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``run.json`` and the rows of the run's items (rows of other ids are ignored)."""
    record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    wanted = set(record["item_ids"])
    rows = [r for r in read_results(run_dir / RESULTS) if r["item_id"] in wanted]
    return record, rows


def summarize_run(run_dir: Path) -> dict[str, Any]:
    """Metrics of one run folder (deterministic: no timestamps, CI seeded by the run's seed)."""
    record, rows = load_run(run_dir)
    values = [float(c) for c in (correct(r) for r in rows) if c is not None]
    ci = bootstrap_ci(values, seed=record.get("seed", 0))
    tools: dict[str, float] = defaultdict(float)
    ok = [r for r in rows if is_ok(r)]
    for row in ok:
        for tool, n in row["ledger"].get("tool_calls", {}).items():
            tools[tool] += n / len(ok)
    evidence = evidence_summary(rows)
    subsets: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row.get("subset") and (c := correct(row)) is not None:
            subsets[row["subset"]].append(float(c))
    return {
        "run_id": record["run_id"], "name": run_dir.name, "framework": record["framework"],
        "dataset": record["dataset"],
        "dataset_version": record["dataset_version"], "task": record.get("task"),
        "model": record["models"]["debater"], "prompt_version": record["prompt_version"],
        "settings": {k: record["context"][k] for k in CONTEXT_KEYS if k in record["context"]},
        "n_items": len(record["item_ids"]), "n_done": len(rows), "n_ok": len(ok),
        "n_errors": len(rows) - len(ok),
        # over every sampled item: error rows and items not run yet count as wrong
        "accuracy_all": (sum(1 for r in rows if correct(r)) / len(record["item_ids"])
                         if record["item_ids"] else None),
        "metrics": {k: v for k, v in compute_metrics(rows).items() if v is not None},
        "accuracy_ci95": list(ci) if ci else None,
        "per_class_f1": per_class_f1(label_pairs(rows)),
        "subsets": {k: {"n": len(v), "accuracy": sum(v) / len(v)} for k, v in sorted(subsets.items())},
        "tool_calls_per_item": dict(sorted(tools.items())),
        "stopped_by": dict(Counter(r.get("stopped_by", "") for r in ok)),
        "caveats": run_caveats(record, rows, evidence),
        "memory": memory_summary(record, ok),
        "evidence": evidence,
        "index": record["index"] if "index" in record else {"status": "unrecorded"},
        "scoring": record.get("scoring"),
        "run_dir": str(run_dir),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _num(value: float | None, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows), ""]


def _main_table(runs: list[dict[str, Any]]) -> list[str]:
    datasets = list(dict.fromkeys(r["dataset"] for r in runs))
    by_system: dict[str, dict[str, tuple[float | None, int]]] = defaultdict(dict)
    evidence: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    names: dict[str, str] = {}  # dataset -> its evidence column's figure (FEVER score, F1)
    for r in runs:
        by_system[_system(r, runs)][r["dataset"]] = (r["metrics"].get("accuracy"), r["n_ok"])
        head = headline(r.get("evidence"))
        if head:
            evidence[_system(r, runs)][r["dataset"]] = head
            names.setdefault(r["dataset"], head["name"])
    rows = []
    for system, accs in by_system.items():
        known = [v for v, _ in accs.values() if v is not None]
        avg = sum(known) / len(known) if len(known) == len(datasets) else None
        cells = []
        for d in datasets:
            cells.append(_with_n(*accs[d]) if d in accs else "-")
            if d in names:  # the evidence column (and its ceiling) beside the accuracy
                head = evidence[system].get(d)
                cells.append(_with_n(head["value"], head["n"]) if head else "-")
                cells.append(_with_n(head.get("ceiling"), head.get("ceiling_n") or 0)
                             if head else "-")
        rows.append([system, *cells,
                     _with_n(avg, sum(n for _, n in accs.values())) if avg is not None else "-"])
    header = [h for d in datasets for h in (
        [d, f"{d}: {names[d]}", f"{d}: ceiling (gold in index)"] if d in names else [d])]
    return _table(["Framework (model)", *header, "Average (n = items over datasets)"], rows)


def _with_n(value: float | None, n: int) -> str:
    """A percentage with the number of items it is over (never a figure without its n)."""
    return "-" if value is None else f"{_pct(value)} (n={n})"


def _system(run: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """Row name of a run: framework and model, plus the run's name when several runs share them."""
    base = f"{run['framework']} ({run['model']})"
    twins = [r for r in runs if (r["framework"], r["model"], r["dataset"])
             == (run["framework"], run["model"], run["dataset"])]
    return f"{base} [{run['name']}]" if len(twins) > 1 else base


def _ci_table(runs: list[dict[str, Any]]) -> list[str]:
    rows = []
    for r in runs:
        ci = r["accuracy_ci95"]
        rows.append([r["name"], r["dataset"], str(r["n_ok"]), _num(r["metrics"].get("accuracy")),
                     f"({ci[0]:.2f}, {ci[1]:.2f})" if ci else "-",
                     f"{_num(r.get('accuracy_all'))} (n={r['n_items']}, errors={r.get('n_errors', 0)})"])
    return _table(["Run", "Dataset", "N", "Acc.", "95% C.I",
                   "Acc. over all sampled items (errors = wrong)"], rows)


def _f1_table(runs: list[dict[str, Any]]) -> list[str]:
    labelled = [r for r in runs if r["per_class_f1"]]
    classes = sorted({c for r in labelled for c in r["per_class_f1"]})
    rows = [[r["name"], r["dataset"], str(r["n_ok"]), _pct(r["metrics"].get("accuracy")),
             *(_pct(r["per_class_f1"].get(c)) for c in classes), _pct(r["metrics"].get("macro_f1"))]
            for r in labelled]
    return _table(["Run", "Dataset", "N", "Acc.", *(f"{c} F1" for c in classes), "Macro-F1"],
                  rows)


def _metric_table(runs: list[dict[str, Any]], columns: dict[str, str], pct: bool) -> list[str]:
    chosen = [r for r in runs if any(k in r["metrics"] for k in columns)]
    fmt = _pct if pct else _num
    rows = [[r["name"], r["dataset"], str(r["n_ok"]), *(fmt(r["metrics"].get(k)) for k in columns)]
            for r in chosen]
    return _table(["Run", "Dataset", "N", *columns.values()], rows) if chosen else []


def _effort_table(runs: list[dict[str, Any]]) -> list[str]:
    rows = []
    for r in runs:
        m = r["metrics"]
        tools = ", ".join(f"{k} {v:.1f}" for k, v in r["tool_calls_per_item"].items()) or "-"
        cost = m.get("cost_usd")
        rows.append([r["name"], r["dataset"], str(r["n_ok"]), _num(m.get("rounds")),
                     _num(m.get("llm_calls"), ".1f"),
                     _num(m.get("prompt_tokens"), ".0f"), _num(m.get("completion_tokens"), ".0f"),
                     tools, "unknown" if cost is None else f"{cost:.4f}", _num(m.get("wall_time_s")),
                     str(int(m.get("errors", 0)))])
    return _table(["Run", "Dataset", "N", "Rounds", "LLM calls", "Prompt tok.", "Compl. tok.",
                   "Tool calls / item", "Cost USD (total)", "Wall s / item", "Errors"], rows)


def _pct_n(value: float | None, n: int | None) -> str:
    return "-" if value is None else f"{_pct(value)} (n={n})"


CEILING = "Ceiling: gold in index"
"""Column beside every evidence figure: the share of items whose complete gold evidence set is
in the index at all (``evidence_metrics.ceiling_summary``), with its n."""


def _ceiling(block: dict[str, Any]) -> str:
    return _pct_n(block.get("ceiling"), block.get("ceiling_n"))


def _evidence_section(runs: list[dict[str, Any]]) -> list[str]:
    """Evidence quality of the cited passages (evaluation/evidence_metrics.py), every figure with
    its n: precision/recall/F1, the FEVER score, HoVer EM/F1, retrieval vs citation, hygiene."""
    ev = [(r, r["evidence"]) for r in runs if r.get("evidence")]
    if not ev:
        return []
    lines = ["## Evidence: cited passages vs gold evidence (%)", "",
             "Precision/recall/F1 of the passages the verdict cites against the benchmark's gold "
             "evidence (docs/evaluation.md, \"Evidence: citations and how they are scored\"). n = finished "
             "items with gold evidence and citation data. The ceiling beside each figure is the "
             "share of those items whose complete gold evidence set is in the searched index at "
             "all (no framework can cite more), with its own n.", ""]
    prf = []
    for r, e in ev:
        for level in ("page", "sentence"):
            block = e.get(level)
            if block:
                prf.append([r["name"], r["dataset"], level, str(block["n"]),
                            _pct(block["precision"]), _pct(block["recall"]), _pct(block["f1"]),
                            _ceiling(block)])
    if prf:
        lines += _table(["Run", "Dataset", "Level", "N", "Evidence prec.", "Evidence rec.",
                         "Evidence F1", CEILING], prf)
    fever = [(r, e["fever"]) for r, e in ev if e.get("fever")]
    if fever:
        lines += ["### FEVER score (label right and a complete gold set among the first 5 cited "
                  "passages; NEI: FEVER's rule needs no evidence, the FEVEROUS scorer's does)", "",
                  *_table(["Run", "Dataset", "Level", "Rule", "N", "FEVER score", "Label acc.",
                           "Evidence prec. (scorer)", "Evidence rec. (scorer)", "Evidence F1 "
                           "(scorer)", "N in prec./rec.", CEILING],
                          [[r["name"], r["dataset"], f["level"], f.get("rule") or "fever",
                            str(f["n"]), _pct(f["score"]),
                            _pct(f["label_accuracy"]), _pct(f["precision"]), _pct(f["recall"]),
                            _pct(f["f1"]), str(f["n_verifiable"]), _ceiling(f)]
                           for r, f in fever])]
    hover = [(r, e["hover"]) for r, e in ev if e.get("hover")]
    if hover:
        lines += ["### HoVer supporting facts (page level = HoVer's document-level EM/F1)", "",
                  *_table(["Run", "Dataset", "N", "EM", "F1", CEILING],
                          [[r["name"], r["dataset"], str(h["n"]), _pct(h["em"]), _pct(h["f1"]),
                            _ceiling(h)] for r, h in hover])]
    retrieval = [(r, e["retrieval"]) for r, e in ev if e.get("retrieval")]
    if retrieval:
        lines += ["### Retrieval vs citation: whose miss is it?", "",
                  "Gold retrieved = a complete gold set is among all passages the run saw (cited "
                  "+ retrieved); gold cited = among the cited ones. Retrieved but not cited is the "
                  "model's miss, not retrieved the retriever's.", "",
                  *_table(["Run", "Dataset", "Level", "N", "Gold retrieved", "Gold cited",
                           "Retrieved, not cited (model)", "Not retrieved (retriever)",
                           "Recall of all seen", "Recall of cited", CEILING],
                          [[r["name"], r["dataset"], x["level"], str(x["n"]),
                            _pct(x["gold_retrieved"]), _pct(x["gold_cited"]),
                            _pct(x["retrieved_not_cited"]), _pct(x["not_retrieved"]),
                            _pct(x["recall_retrieved"]), _pct(x["recall_cited"]), _ceiling(x)]
                           for r, x in retrieval])]
    lines += ["### Citations (every dataset)", "",
              "N = finished rows with citation data; verdicts count where passages were shown, "
              "replies are the labelled replies of those rows.", "",
              *_table(["Run", "Dataset", "N", "Verdicts without a citation",
                       "Rows with a hallucinated (unshown) citation",
                       "Unshown numbers dropped (total)", "Labelled replies without a citation"],
                      [[r["name"], r["dataset"], str(c["n_rows"]),
                        _pct_n(c["uncited_verdicts"], c["n_verdicts"]), _pct(c["hallucinated"]),
                        str(c["unshown_total"]), _pct_n(c["uncited_replies"], c["n_replies"])]
                       for r, c in ((r, e["citations"]) for r, e in ev)])]
    for r, e in ev:
        lines += [f"- {r['name']}: {note}" for note in e.get("notes") or []]
    return [*lines, ""]


def render_report(runs: list[dict[str, Any]], plots: dict[str, str]) -> str:
    """The Markdown report."""
    loud = [f"> **Caveat** ({r['name']}): {line}" for r in runs for line in loud_caveats(r)]
    lines = ["# Evaluation report", "", *(loud + [""] if loud else [])]
    for r in runs:
        lines.append(f"- `{r['name']}` (`{r['run_id']}`): {r['framework']} on {r['dataset']} "
                     f"({r['dataset_version']}), {r['n_ok']}/{r['n_items']} items finished, model "
                     f"`{r['model']}`, prompts {r['prompt_version']}, settings "
                     f"{json.dumps(r['settings'])}")
        lines.append(f"  - index searched: {describe(r.get('index'))}")
    lines += ["", "## Caveats", "", *(line for r in runs for line in caveat_lines(r))]
    lines += ["", "## Accuracy (EM, %) - Tool-MAD Table III shape", "", *_main_table(runs),
              "## Accuracy and 95% bootstrap CI (1000 resamples) - Tool-MAD Table IV shape", "",
              *_ci_table(runs), "## Per-class F1 (%) - MERMAID Table 1 shape", "", *_f1_table(runs)]
    multi = [r for r in runs if r.get("task") == ANSWERS_TASK]
    if multi:
        lines += ["## Multi-answer (%) - MADAM-RAG Table 1 / Fig. 3 shape", "",
                  *_metric_table(multi, {"multi_em": "EM (strict)", "multi_precision": "Prec.",
                                         "multi_recall": "Rec.", "multi_f1": "F1"}, True)]
    cons = _metric_table(runs, {"co2": "Co2", "cons": "Cons"}, False)
    if cons:
        lines += ["## Debate consistency - MADKE Table 3 shape", "", *cons]
    judged = _metric_table(runs, {"llm_judge": "LLM judge", "token_f1": "Token F1",
                                  "ragas_faithfulness": "RAGAS faithf.",
                                  "ragas_answer_relevancy": "RAGAS relev."}, False)
    if judged:
        lines += ["## Generative-answer scores", "", *judged]
    lines += _evidence_section(runs)
    lines += ["## Effort and cost", "", *_effort_table(runs)]
    memory = memory_table_rows(runs)
    if memory:
        lines += ["## Evidence memory - MERMAID Fig. 3 shape (search tool calls)", "",
                  *_table(["Run", "Memory", "N", "Tool calls (total)", "Tool calls / item",
                           "Memory hits", "Items with hits", "Change in calls"], memory)]
    for r in runs:
        if r["subsets"]:
            lines += [f"Subsets of {r['name']} ({r['dataset']}): " + ", ".join(
                f"{k} {_pct(v['accuracy'])}% (n={v['n']})" for k, v in r["subsets"].items()), ""]
    lines += ["## Plots", ""]
    lines += [f"![{name}]({path})" if path.endswith(".png") else f"- {name}: {path}"
              for name, path in plots.items()]
    return "\n".join(lines) + "\n"


def write_reports(out: Path, run_dirs: list[Path]) -> dict[str, Any]:
    """``summary.json``, ``report.md`` and plots in ``out`` over ``run_dirs``; returns the summary."""
    from factdebate.evaluation.plots import draw_plots

    runs = [summarize_run(d) for d in run_dirs]
    rows = {s["run_id"]: load_run(d)[1] for s, d in zip(runs, run_dirs, strict=True)}
    plots = draw_plots(out, runs, rows)
    summary = {"runs": runs, "plots": plots}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    # run names, datasets and notes come from files: their control characters are shown as text
    (out / "report.md").write_text(neutralise(render_report(runs, plots)), encoding="utf-8")
    return summary

