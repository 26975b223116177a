"""The evaluation commands: ``eval``, ``compare``, ``ls datasets``, ``ls metrics``.

``cli/main.py`` registers them with ``register(app, ls_app)``; heavy modules are imported
inside the commands so ``factdebate --help`` stays fast.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from factdebate.cli.output import err, fail, out
from factdebate.core.errors import FactDebateError

EXIT_ITEM_ERRORS = 4
"""``eval`` finished, but at least one item ended in an error row (docs/reliability.md)."""


def _print_summary(summary: dict[str, Any], folder: Path) -> None:
    table = Table("framework", "dataset", "n ok/all", "acc (finished)", "acc (all items)",
                  "95% CI", "macro-F1", "errors", "cost USD", title=f"Evaluation: {folder}")
    for run in summary["runs"]:
        m, ci = run["metrics"], run["accuracy_ci95"]
        every = run.get("accuracy_all")
        table.add_row(run["framework"], run["dataset"], f"{run['n_ok']}/{run['n_items']}",
                      f"{m['accuracy']:.3f}" if "accuracy" in m else "-",
                      f"{every:.3f}" if every is not None else "-",
                      f"({ci[0]:.3f}, {ci[1]:.3f})" if ci else "-",
                      f"{m['macro_f1']:.3f}" if "macro_f1" in m else "-",
                      str(int(m.get("errors", 0))),
                      f"{m['cost_usd']:.4f}" if m.get("cost_usd") is not None else "unknown")
    out.print(table)
    from factdebate.evaluation.caveats import loud_caveats
    from factdebate.evaluation.index_identity import describe

    for run in summary["runs"]:  # the index each run searched, then its evidence figures
        out.print(f"index {run.get('name', run['framework'])}: {describe(run.get('index'))}",
                  highlight=False, soft_wrap=True, markup=False)
        for line in evidence_lines(run):
            out.print(line, highlight=False, soft_wrap=True)
        for line in loud_caveats(run):
            out.print(f"caveat: {run.get('name', run['framework'])}: "
                      f"{line.replace('**', '').replace('`', '')}", highlight=False,
                      soft_wrap=True, markup=False)
    for run in summary["runs"]:  # the report's caveats (evaluation/caveats.py), the loudest one
        doubled = (run.get("caveats") or {}).get("test_double_roles")
        if doubled:
            out.print(f"note: {run.get('name', run['framework'])}: {', '.join(doubled)} answered "
                      "by the scripted test double, not a model", highlight=False, soft_wrap=True)
    out.print(f"results: {folder}/**/results.jsonl  summary: {folder / 'summary.json'}  "
              f"report: {folder / 'report.md'}", highlight=False)


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ceiling(block: dict[str, Any]) -> str:
    """``; ceiling X (n=N)``: the share of items whose gold evidence is in the index at all."""
    if block.get("ceiling_n") is None:
        return ""
    return f"; ceiling (gold in index) {_f(block.get('ceiling'))} (n={block['ceiling_n']})"


def evidence_lines(run: dict[str, Any]) -> list[str]:
    """The run's evidence figures as plain lines, each with its n and its ceiling (none without
    citation data)."""
    ev = run.get("evidence")
    if not ev:
        return []
    name = f"{run.get('name', run['framework'])} ({run['framework']} / {run['dataset']})"
    lines = []
    ceiling = ev.get("ceiling")
    if ceiling:
        levels = ", ".join(f"{level} level {_f(ceiling[level]['share'])} ({ceiling[level]['in_index']}"
                           f" of {ceiling[level]['n']} items)" for level in ("page", "sentence")
                           if ceiling.get(level))
        lines.append(f"retrieval ceiling {name}: complete gold evidence in the index at all: "
                     f"{levels}")
    for level in ("page", "sentence"):
        block = ev.get(level)
        if block:
            only = (" - page level only: the gold's sentence ids cannot be matched, the passages "
                    "carry none" if ev.get("level") == "page" else "")
            basis = f" by {ev['basis']}" if level == "sentence" and ev.get("basis") else ""
            em = f" EM {_f(block['em'])}" if level == "sentence" and "em" in block else ""
            lines.append(f"evidence {name}, {level} level{basis}: precision "
                         f"{_f(block['precision'])} recall {_f(block['recall'])} F1 "
                         f"{_f(block['f1'])}{em} (n={block['n']} items with gold evidence)"
                         f"{_ceiling(block)}{only}")
    fever = ev.get("fever")
    if fever:
        level = " (page level)" if fever["level"] == "page" else ""
        lines.append(f"FEVER score{level} {name}: {_f(fever['score'])} (n={fever['n']}; first "
                     f"{fever['max_evidence']} cited passages), label accuracy "
                     f"{_f(fever['label_accuracy'])}, scorer evidence precision "
                     f"{_f(fever['precision'])} recall {_f(fever['recall'])} F1 {_f(fever['f1'])} "
                     f"(n={fever['n_verifiable']} claims; {fever.get('rule') or 'fever'} rule)"
                     f"{_ceiling(fever)}")
    if ev.get("hover"):
        hover = ev["hover"]
        lines.append(f"HoVer supporting facts {name}, {hover.get('level', 'page')} level: EM "
                     f"{_f(hover['em'])} F1 {_f(hover['f1'])} (n={hover['n']}){_ceiling(hover)}")
    retrieval = ev.get("retrieval")
    if retrieval:
        lines.append(f"gold evidence {name}: retrieved {_f(retrieval['gold_retrieved'])}, cited "
                     f"{_f(retrieval['gold_cited'])} (n={retrieval['n']}, {retrieval['level']} "
                     "level; retrieved but not cited = the model's miss "
                     f"{_f(retrieval['retrieved_not_cited'])}){_ceiling(retrieval)}")
    cites = ev["citations"]
    lines.append(f"citations {name}: verdicts without a citation {_f(cites['uncited_verdicts'])} "
                 f"(n={cites['n_verdicts']}), rows with a hallucinated (unshown) citation "
                 f"{_f(cites['hallucinated'])} (n={cites['n_rows']})")
    if ev.get("n_without_gold") or ev.get("n_no_citation_data"):
        lines.append(f"evidence {name}: {ev['n_without_gold']} item(s) without gold evidence and "
                     f"{ev['n_no_citation_data']} without citation data left out of the evidence "
                     "precision/recall/F1")
    return lines


def eval_command(
    framework: Annotated[str | None, typer.Option(
        help="Registered framework.", show_default="none: required unless --config")] = None,
    dataset: Annotated[str | None, typer.Option(
        help="Registered dataset or a JSONL/JSON file.",
        show_default="none: required unless --config")] = None,
    limit: Annotated[int | None, typer.Option(
        help="Items (stratified, seeded sample); without --limit the whole dataset runs.",
        show_default="all items")] = None,
    seed: Annotated[int | None, typer.Option(
        help="Sampling and bootstrap seed.", show_default="0")] = None,
    concurrency: Annotated[int | None, typer.Option(
        help="Items run at once (MERMAID with memory on: one at a time, in order).",
        show_default="4")] = None,
    workers: Annotated[int | None, typer.Option(
        help="Processes running items (up to one per core when our CPU, not the model, limits "
             "throughput).", show_default="1")] = None,
    out_raw: Annotated[str | None, typer.Option(
        "--out", help="Output folder.",
        show_default="runs/<framework>__<dataset>__<time>")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in --out.")] = False,
    retry_errors: Annotated[bool, typer.Option(help="With --resume: rerun error rows.")] = False,
    repair: Annotated[bool, typer.Option(
        help="With --resume: set aside unreadable result rows, a damaged run.json or checkpoint "
             "database, and rerun the affected items.")] = False,
    config: Annotated[Path | None, typer.Option(
        help="run.yaml: frameworks x datasets (its values stand where no flag is given).",
        show_default="none")] = None,
    model: Annotated[str | None, typer.Option(
        help="Model spec of every role.",
        show_default="the framework Context's debater_model ($FACTDEBATE_MODEL or local:smollm2)",
    )] = None,
    data_dir: Annotated[str | None, typer.Option(
        help="Benchmark data folder.", show_default="$FACTDEBATE_DATA_DIR")] = None,
    langsmith: Annotated[bool, typer.Option(
        help="Record the items as examples of the data file's LangSmith dataset (missing ones "
        "added) and the run as an experiment with per-item feedback (LANGSMITH_API_KEY).")] = False,
    server: Annotated[str | None, typer.Option(
        help="LangGraph server URL.", show_default="none: items run in this process")] = None,
    server_api_key: Annotated[str | None, typer.Option(
        help="API key of --server.", show_default="$FACTDEBATE_API_KEY or $LANGGRAPH_API_KEY",
    )] = None,
    metrics: Annotated[str | None, typer.Option(
        help="Extra: llm_judge,ragas.", show_default="none")] = None,
    metric_model: Annotated[str | None, typer.Option(
        help="Model of --metrics.", show_default="the run's judge model")] = None,
    checkpointer: Annotated[str | None, typer.Option(
        help="sqlite (OUT/checkpoints.sqlite; MERMAID's memory in OUT/memory.sqlite) | postgres "
             "($FACTDEBATE_POSTGRES_URI; checkpoints and memory).", show_default="sqlite")] = None,
    set_: Annotated[list[str], typer.Option(
        "--set", help="Any Context field=value.", show_default="none")] = [],  # noqa: B006
    demo_index: Annotated[bool, typer.Option(
        "--demo-index", help="Search the bundled demo corpus (the default index folder) although "
        "no index is named; every report says so at its top.",
        show_default="off: a named index, else the data folder's corpus/ indexed once")] = False,
    index: Annotated[str | None, typer.Option(
        "--index", help="Index to search: a name ($FACTDEBATE_HOME/indexes/NAME, see 'factdebate "
        "ls indexes'; 'factdebate index DUMP --format fever-wiki --name fever-wiki' builds "
        "fever-wiki) or a folder.",
        show_default="the one DATA_DIR/indexes.json or the dataset names, else the data folder's "
        "corpus/")] = None,
    feverous_rule: Annotated[str | None, typer.Option(
        help="NOT ENOUGH INFO rule of the FEVEROUS score: 'feverous' (its scorer: NEI needs "
             "evidence) or 'fever' (FEVER's: NEI needs none).", show_default="feverous")] = None,
    tool_faults: Annotated[str | None, typer.Option(
        help="An item whose tool calls failed (retriever or search down after its retries; the "
             "debate went on without that evidence): 'error' (an error row of type ToolFault, "
             "not scored, rerun by --resume --retry-errors) or 'score' (scored, the fault in "
             "its flags).", show_default="error")] = None,
) -> None:
    """Evaluate a framework on a dataset (or a --config experiment); writes results and reports."""
    from factdebate.cli.flags import in_range, place
    from factdebate.evaluation.config import load_config, with_flags
    from factdebate.evaluation.runner import RunSpec, run_eval
    from factdebate.run.claims import run_async

    try:
        out_dir = place("--out", out_raw)  # "" is refused, never the current folder
        in_range("--concurrency", concurrency, 1, default=4)
        in_range("--workers", workers, 1, default=1)
        in_range("--limit", limit, 1, default="all items")
        extra = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
        named = [p for p in set_ if p.partition("=")[0].strip() == "index"]
        if named:  # --set index=NAME is --index NAME: resolved, checked and recorded alike
            from factdebate.core.errors import InputError

            if index is not None or len(named) > 1:
                raise InputError("--index and --set index=... both name the index",
                                 "give one of them")
            if server:
                raise InputError(f"--set {named[0]} names an index, but an eval --server run "
                                 "records the index the server reports, its own",
                                 "drop it, or run the items in this process (no --server)")
            index, set_ = named[0].partition("=")[2], [p for p in set_ if p not in named]
        if index is not None:  # the one rule of verify, check and search: a name, else a folder
            from factdebate.core.context import resolve_index

            folder_of, name_of = resolve_index(index, "--index")
            # the runner finds a name under $FACTDEBATE_HOME/indexes unless a folder here has it
            index = name_of if name_of and not Path(name_of).is_dir() else str(folder_of)
        if config:
            folder, specs = load_config(config, {
                "out": str(out_dir) if out_dir else None, "limit": limit, "seed": seed,
                "concurrency": concurrency, "workers": workers, "model": model,
                "data_dir": data_dir, "sets": set_,
                "metrics": extra, "metric_model": metric_model, "server": server,
                "demo_index": demo_index or None, "feverous_rule": feverous_rule,
                "index": index})
        else:
            if not framework or not dataset:
                from factdebate.core.errors import InputError

                raise InputError("eval needs --framework and --dataset", "or pass --config run.yaml")
            stamp = time.strftime("%Y%m%d-%H%M%S")
            folder = out_dir or Path("runs") / f"{framework}__{Path(dataset).stem}__{stamp}"
            specs = [(folder.name, RunSpec(
                framework=framework, dataset=dataset, out=folder, limit=limit, seed=seed or 0,
                concurrency=4 if concurrency is None else concurrency,
                workers=1 if workers is None else workers, model=model, sets=list(set_),
                data_dir=data_dir,
                metrics=extra or [], metric_model=metric_model, server=server,
                checkpointer=checkpointer, demo_index=demo_index, index=index,
                feverous_rule=feverous_rule or "feverous"))]
        for _, spec in specs:
            spec = with_flags(spec, resume=resume, retry_errors=retry_errors, repair=repair,
                              langsmith=langsmith, server_api_key=server_api_key,
                              checkpointer=checkpointer, tool_faults=tool_faults)
            try:
                run_async(run_eval(spec, err))
            except KeyboardInterrupt:
                err.print(f"interrupted; finished items are in {spec.out}/results.jsonl. "
                          f"Continue with: factdebate eval ... --out {folder} --resume")
                raise typer.Exit(130) from None
            if len(specs) > 1:
                _write_reports(spec.out, [spec.out])
        summary = _write_reports(folder, [s.out for _, s in specs])
    except FactDebateError as exc:
        fail(exc)
        return
    _print_summary(summary, folder)
    failed = sum(run.get("n_errors", 0) for run in summary["runs"])
    if failed:
        total = sum(run["n_items"] for run in summary["runs"])
        dirs = [s.out for _, s in specs]
        faulted = _tool_fault_rows(dirs)
        why = (f" {faulted} of them ToolFault: a tool failed and the debate went on without its "
               "evidence (--tool-faults score scores such rows)." if faulted else "")
        err.print(f"[yellow]{failed} of {total} item(s) ended in an error (first: "
                  f"{_first_error(dirs)}; all in results.jsonl); exit code {EXIT_ITEM_ERRORS}."
                  f"{why} Rerun them with: factdebate eval ... --out {escape(str(folder))} "
                  "--resume --retry-errors[/yellow]",
                  highlight=False, soft_wrap=True, markup=True)
        raise typer.Exit(EXIT_ITEM_ERRORS)


def _first_error(run_dirs: list[Path]) -> str:
    """``Type: message`` of the first error row, on one line (what most failed items share)."""
    from factdebate.evaluation.results import RESULTS, read_results

    for folder in run_dirs:
        for row in read_results(folder / RESULTS):
            if row.get("status") == "error":
                error = row.get("error") or {}
                text = " ".join(f"{error.get('type', '')}: {error.get('message', '')}".split())
                return escape(text[:300])
    return "-"


def _tool_fault_rows(run_dirs: list[Path]) -> int:
    """How many error rows are ``ToolFault`` (a finished debate whose tool calls failed)."""
    from factdebate.evaluation.results import RESULTS, TOOL_FAULT, read_results

    return sum((row.get("error") or {}).get("type") == TOOL_FAULT
               for folder in run_dirs for row in read_results(folder / RESULTS))


def _write_reports(folder: Path, run_dirs: list[Path]) -> dict[str, Any]:
    """``write_reports`` with a full or read-only disk as one error line."""
    from factdebate.evaluation.html_report import write_eval_html
    from factdebate.evaluation.reports import write_reports
    from factdebate.evaluation.run_folder import storage_error

    try:
        summary = write_reports(folder, run_dirs)
        for run_dir in run_dirs:  # report.html: every item with its debate, one file, offline
            write_eval_html(run_dir)
        return summary
    except OSError as exc:
        raise storage_error(folder, exc, "write the reports into") from exc


def compare_command(
    first_raw: Annotated[str, typer.Argument(metavar="FIRST",
                                             help="Baseline eval output folder (A).")],
    second_raw: Annotated[str, typer.Argument(metavar="SECOND",
                                              help="Eval output folder to compare (B).")],
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
) -> None:
    """Accuracy difference B - A on the shared items: paired-bootstrap CI and p, McNemar's exact p."""
    from factdebate.cli.flags import required_place
    from factdebate.evaluation.compare import (
        COLUMNS,
        EVIDENCE_COLUMNS,
        compare_outputs,
        evidence_rows,
        table_rows,
    )

    try:
        first = required_place("FIRST", first_raw, "run folder")
        second = required_place("SECOND", second_raw, "run folder")
        results = compare_outputs(first, second, seed=seed)
    except FactDebateError as exc:
        fail(exc)
        return
    from factdebate.evaluation.index_identity import describe

    for r in results:  # the index behind each side: a comparison across indexes is flagged
        line = (f"both runs searched: {describe(r['index_a'])}" if r["same_index"] else
                f"DIFFERENT INDEXES: A {r['a']} searched {describe(r['index_a'])}; B {r['b']} "
                f"searched {describe(r['index_b'])}")
        out.print(line, highlight=False, soft_wrap=True, markup=False)
    table = Table(*COLUMNS, title="Paired comparison (bootstrap: 10,000 resamples; McNemar exact)")
    for row in table_rows(results):
        table.add_row(*row)
    out.print(table)
    evidence = evidence_rows(results)
    if evidence:  # evidence quality, paired on the items both runs scored
        table = Table(*EVIDENCE_COLUMNS, title="Evidence, paired (items with gold evidence in both)")
        for row in evidence:
            table.add_row(*row)
        out.print(table)
    for warning in (w for r in results for w in r["warnings"]):
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)


def ls_datasets() -> None:
    """Registered datasets with version, task and description."""
    from factdebate.evaluation.datasets import DATASETS

    for entry in DATASETS:
        spec = entry.load()
        print(f"{spec.name}\t{spec.version}\t{spec.task}\t{spec.description}")


def ls_metrics() -> None:
    """Registered metrics with direction and aggregation."""
    from factdebate.evaluation.metrics import METRICS

    for entry in METRICS:
        metric = entry.load()
        direction = {True: "higher", False: "lower", None: "-"}[metric.higher_is_better]
        print(f"{metric.name}\t{direction}\t{metric.aggregation}\t{metric.description}")


def register(app: typer.Typer, ls_app: typer.Typer) -> None:
    """Add the evaluation commands to the ``factdebate`` CLI."""
    app.command("eval")(eval_command)
    app.command("compare")(compare_command)
    ls_app.command("datasets")(ls_datasets)
    ls_app.command("metrics")(ls_metrics)
