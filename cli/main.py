"""The ``factdebate`` command line: ``verify``, ``index``, ``ls``.

Flags map one to one onto ``Context`` fields (``--set field=value`` reaches any other field).
User errors print one line ``error: <problem>. <remedy>`` and exit non-zero, without a traceback.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

for _var, _val in (("RAGAS_DO_NOT_TRACK", "true"), ("HF_HUB_OFFLINE", "1"),
                   ("TOKENIZERS_PARALLELISM", "false"), ("LANGGRAPH_NO_VERSION_CHECK", "true")):
    os.environ.setdefault(_var, _val)

import typer  # noqa: E402

from factdebate.cli.check import WIKIPEDIA_HELP  # noqa: E402
from factdebate.cli.output import err, fail, out, print_outcome, quiet_libraries  # noqa: E402
from factdebate.cli.search import INDEX_HELP  # noqa: E402
from factdebate.cli.verify_checks import read_claim  # noqa: E402
from factdebate.core import log_redaction  # noqa: E402
from factdebate.core.context import context_fields  # noqa: E402
from factdebate.core.errors import (  # noqa: E402
    FactDebateError,
    InputError,
)
from factdebate.run.setup import build_context, check_index  # noqa: E402

app = typer.Typer(no_args_is_help=True)  # with --install-completion / --show-completion
ls_app = typer.Typer(help="List registered names.", no_args_is_help=True)
app.add_typer(ls_app, name="ls")


def version_line() -> str:
    """``factdebate <package version>``, plus ``(git <commit>)`` when run from a checkout."""
    from importlib.metadata import PackageNotFoundError, version

    from factdebate.run.claims import git_sha

    try:
        number = version("factdebate")
    except PackageNotFoundError:  # run from a source tree that was never installed
        number = "(not installed)"
    sha = git_sha()
    return f"factdebate {number}" + (f" (git {sha})" if sha else "")


def _print_version(value: bool) -> None:
    if value:
        out.print(version_line(), markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Show the libraries' loading output too (model-weight progress "
        "bars, Hugging Face warnings); hidden by default.")] = False,
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print the version (and the git commit of a checkout) and exit.")] = False,
) -> None:
    """Verify claims by multi-agent debate (Tool-MAD and friends)."""
    log_redaction.install()  # no secret in any log line on stderr (core/log_redaction.py)
    quiet_libraries(not verbose)


def _tm(field: str, empty: str = "") -> str:
    """``--help``'s default of a flag that fills a Context field: Tool-MAD's Context default."""
    from factdebate.nodes.tool_mad.state import ToolMadContext

    value = getattr(ToolMadContext(), field)
    text = ",".join(value) if isinstance(value, list) else str(value)
    return text or empty


def _searches_index(framework: str, ctx: Any) -> bool:
    """True when the run may read the local index folder (so it is checked, or the demo index
    built, first): a framework that searches one, with a backend that reads it."""
    from factdebate.core.retrievers import reads_local_index
    from factdebate.graphs.registry import FRAMEWORKS

    return bool(FRAMEWORKS.entry(framework).meta.get("needs_index", True)) and \
        reads_local_index(ctx)


@app.command()
def verify(
    claim: Annotated[str | None, typer.Argument(
        help="The claim to verify ('-' reads stdin); may be left out with --resume.",
        show_default=False)] = None,
    framework: Annotated[str, typer.Option(help="Registered framework.")] = "tool_mad",
    model: Annotated[str | None, typer.Option(
        help="Model spec of every role.", show_default=_tm("debater_model"))] = None,
    judge_model: Annotated[str | None, typer.Option(
        help="Judge model spec.", show_default="--model")] = None,
    base_url: Annotated[str | None, typer.Option(
        help="OpenAI-compatible base URL.", show_default="the provider's own")] = None,
    rounds: Annotated[int | None, typer.Option(
        help="Max debate rounds T.", show_default=_tm("max_rounds"))] = None,
    top_k: Annotated[int | None, typer.Option(
        help="Passages per retrieval.", show_default=_tm("top_k"))] = None,
    debaters: Annotated[str | None, typer.Option(
        help="Comma list, e.g. rag,search.", show_default=_tm("debaters"))] = None,
    scoring: Annotated[str | None, typer.Option(
        help="auto | stability | consistency | none (auto: consistency with the embedded "
        "evaluator).", show_default=_tm("scoring_mode"))] = None,
    query_formulation: Annotated[bool | None, typer.Option(
        "--query-formulation/--no-query-formulation", help="Reformulate queries per round.",
        show_default=_tm("query_formulation"))] = None,
    label_set: Annotated[str | None, typer.Option(
        help="fever|binary|averitec|...", show_default=_tm("label_set"))] = None,
    rag_backend: Annotated[str | None, typer.Option(
        help="milvus | keyword | hybrid | wikipedia.", show_default=_tm("rag_backend"))] = None,
    search_backend: Annotated[str | None, typer.Option(
        help="auto|tavily|local_search|wikipedia.", show_default=_tm("search_backend"))] = None,
    index_dir: Annotated[str | None, typer.Option(
        help="Index folder.", show_default="$FACTDEBATE_HOME/index")] = None,
    index_name: Annotated[str | None, typer.Option(
        "--index", help=INDEX_HELP, show_default="--index-dir")] = None,
    wikipedia: Annotated[bool, typer.Option(
        "--wikipedia", help=WIKIPEDIA_HELP, show_default=False)] = False,
    set_: Annotated[list[str], typer.Option(
        "--set", help="Any Context field=value.", show_default="none")] = [],  # noqa: B006
    thread_id: Annotated[str | None, typer.Option(
        help="Name of this run's checkpoint thread.", show_default="a new random id")] = None,
    resume: Annotated[bool, typer.Option(help="Resume --thread-id from its checkpoint.")] = False,
    checkpoint_db: Annotated[Path | None, typer.Option(
        help="SQLite checkpoint file.", show_default="$FACTDEBATE_HOME/checkpoints.sqlite")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    review: Annotated[bool, typer.Option(
        "--review", help="Stop before the verdict is final for a fact-checker's review: asked on "
        "the terminal, or given by --review-decision; without either the run waits, resumable.",
        show_default=False)] = False,
    review_decision: Annotated[str | None, typer.Option(
        help="Reviewer's decision without asking: approve | edit | reject (implies --review).",
        show_default="ask on a terminal")] = None,
    review_label: Annotated[str | None, typer.Option(
        help="Label of an edit (one of the label set).", show_default="none")] = None,
    review_rationale: Annotated[str | None, typer.Option(
        help="Rationale of an edit.", show_default="the machine's")] = None,
    reviewer: Annotated[str | None, typer.Option(
        help="Reviewer's name.", show_default="$USER")] = None,
    review_note: Annotated[str | None, typer.Option(
        help="Reviewer's note.", show_default="none")] = None,
) -> None:
    """Verify CLAIM and print the verdict with its evidence.

    The defaults shown are Tool-MAD's Context; 'factdebate ls context --framework NAME' lists
    another framework's.
    """
    raw_claim = claim  # the token the command that resumes a review leaves out
    try:
        from factdebate.cli.review import scripted_decision
        from factdebate.cli.search import index_overrides
        from factdebate.nodes.prepare import clean_claim

        index_values, explicit_index = index_overrides(index_name, index_dir)
        if resume and not thread_id:
            raise InputError("--resume needs --thread-id", "name the run to resume")
        if claim is None and not resume:
            raise InputError("missing CLAIM", "give the claim to verify ('-' reads stdin)")
        claim = None if claim is None else clean_claim(read_claim(claim))
        scripted = scripted_decision(review_decision, review_label, reviewer, review_note,
                                     review_rationale)
        review = review or scripted is not None
        from factdebate.graphs.registry import FRAMEWORKS, context_class

        framework = FRAMEWORKS.resolve(framework)
        cls = context_class(framework)
        backends = {"rag_backend": rag_backend, "search_backend": search_backend}
        if wikipedia:
            from factdebate.tools.wikipedia_live import shortcut_settings

            backends = {k: v for k, v in shortcut_settings(rag_backend, search_backend).items()
                        if k in context_fields(cls)}
        ctx = build_context(
            {"debater_model": model, "judge_model": judge_model, "model_base_url": base_url,
             "max_rounds": rounds, "top_k": top_k, "scoring_mode": scoring,
             "debaters": debaters.split(",") if debaters else None,
             "query_formulation": query_formulation, "label_set": label_set,
             "review": True if review else None, **backends, **index_values},
            set_,
            cls,
        )
        searches = _searches_index(framework, ctx)
        if searches:
            check_index(ctx, explicit_index=explicit_index)
        from factdebate.run.engine import run_local

        thread_id = thread_id or uuid.uuid4().hex
        waiting = resume and scripted is not None  # a resumed review: the decision resumes it
        result = run_local(framework, {"claim": claim}, ctx, thread_id=thread_id,
                           resume=resume, checkpoint_db=checkpoint_db,
                           review_decision=scripted if waiting else None)
        if result.get("pending_review"):
            from factdebate.cli.review import complete_review

            def resume_review(value: dict[str, Any]) -> dict[str, Any]:
                return run_local(framework, {"claim": claim}, ctx, thread_id=thread_id,
                                 resume=True, checkpoint_db=checkpoint_db, review_decision=value)

            result = complete_review(result, resume_review, None if waiting else scripted, err)
    except FactDebateError as exc:
        fail(exc)
        return
    from factdebate.cli.report import print_result
    from factdebate.cli.search import index_line, searched_index

    if searches:  # the index the run searched: --json key "index", a last line on the terminal
        result = {**result, "index": searched_index(ctx)}
    print_outcome(result, as_json, print_result)
    if searches and not as_json:
        out.print(index_line(result["index"]), highlight=False, markup=False, soft_wrap=True)
    _print_review(result, as_json, framework, drop=(raw_claim,) if raw_claim else ())


def _print_review(result: dict[str, Any], as_json: bool, framework: str,
                  drop: tuple[str, ...] = ()) -> None:
    """The review line of a reviewed verdict, or how to resume a run still waiting for one
    (``drop``: the tokens of the command line the resume command leaves out)."""
    from factdebate.cli.review import print_waiting, review_line

    if result.get("pending_review"):
        print_waiting(err if as_json else out, result, sys.argv[1:], drop, framework)
    elif result.get("review") and not as_json:
        out.print(review_line(result["review"]), highlight=False, markup=False, soft_wrap=True)


@app.command()
def index(
    corpus: Annotated[Path, typer.Argument(
        help="JSONL of {doc_id, title, text}, or a dump (see --format), or the name of a "
        "knowledge source fetched with factdebate data fetch (indexed as $FACTDEBATE_HOME/"
        "indexes/NAME).")],
    index_dir: Annotated[str | None, typer.Option(
        help="Index folder.", show_default="$FACTDEBATE_HOME/index")] = None,
    name: Annotated[str | None, typer.Option(
        "--name", help="Build the index a dataset finds by name: $FACTDEBATE_HOME/indexes/NAME "
        "(eval --index NAME; fever-wiki, hover-wiki, feverous-db, averitec-store are the "
        "datasets' own names).")] = None,
    format_: Annotated[str | None, typer.Option(
        "--format", help="jsonl | fever-wiki | feverous-db | hover-wiki | averitec-store | "
        "wikipedia.", show_default="detected from the file")] = None,
    keyword_only: Annotated[bool, typer.Option(
        "--keyword-only", help="Dumps: build the keyword (tantivy) index only, no embeddings.")
    ] = False,
    granularity: Annotated[str, typer.Option(
        help="Dumps: passages of consecutive sentences up to 2,000 characters (chunk) or one per "
        "sentence (sentence).")] = "chunk",
    milvus_uri: Annotated[str | None, typer.Option(
        help="Milvus Lite folder or server URI.", show_default="<index-dir>/milvus.db")] = None,
    embedding_model: Annotated[str | None, typer.Option(
        help="minilm | openai:<model>.", show_default=_tm("embedding_model"))] = None,
    replace: Annotated[bool, typer.Option(
        help="Overwrite an index built from another corpus (or a damaged one).")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Dumps: stop at the first page the reader repairs or skips (a quirk of "
        "the release) instead of counting it.", show_default="off: repaired and skipped pages are "
        "counted in the manifest and the last line")] = False,
    info: Annotated[bool, typer.Option(
        "--info", help="Show what is inside the index CORPUS names (a name under "
        "$FACTDEBATE_HOME/indexes or a folder) instead of building one: source, format, pages, "
        "passages, repaired/skipped pages, granularity, embeddings, build time.")] = False,
    info_json: Annotated[bool, typer.Option(
        "--json", help="With --info: print one JSON object.")] = False,
) -> None:
    """Build the vector (Milvus) and keyword indexes from CORPUS (skipped when unchanged).

    A dump (FEVER wiki-pages, the FEVEROUS database, HoVer's HotpotQA abstracts, an AVeriTeC
    knowledge store, a Wikipedia parquet/JSONL dump) is streamed and resumes after a kill.
    'factdebate index --info NAME|DIR' shows what an index holds.
    """
    if info or info_json:  # look inside an index instead of building one (cli/search.py)
        from factdebate.cli.search import print_info

        try:
            if not info:
                raise InputError("--json applies to --info", "add --info, or drop --json")
            print_info(str(corpus), info_json)
        except FactDebateError as exc:
            fail(exc)
        return
    from factdebate.evaluation.index_progress import IndexProgress
    from factdebate.tools.indexing import build_indexes
    from factdebate.tools.sources import FORMATS, detect

    try:
        from factdebate.cli.flags import place

        place("--index-dir", index_dir)
        place("--milvus-uri", milvus_uri, "Milvus Lite folder or server URI")
        from factdebate.cli.data import catalogue_corpus

        # a fetched catalogue knowledge source by name: its file, format and index name
        corpus, format_, name = catalogue_corpus(corpus, format_, name, index_dir)
        if name is not None:
            from factdebate.evaluation.datasets import INDEX_NAME, index_folder

            if index_dir is not None:
                raise InputError("--name and --index-dir both name the index folder",
                                 "give one of them")
            if not INDEX_NAME.match(name):
                raise InputError(f"--name {name!r} is not an index name",
                                 "use letters, digits, '.', '_' and '-' (at most 100)")
            index_dir = str(index_folder(name))
        ctx = build_context({"index_dir": index_dir, "milvus_uri": milvus_uri,
                             "embedding_model": embedding_model}, [])
        if not corpus.exists():
            raise InputError(f"corpus {corpus} does not exist", "give a JSONL file or a dump's path")
        if format_ is not None and format_ not in FORMATS:
            raise InputError(f"unknown --format {format_!r}", f"use one of: {', '.join(FORMATS)}")
        fmt = format_ or detect(corpus, default="jsonl")
        with IndexProgress(err) as progress:
            if fmt == "jsonl":
                if keyword_only:
                    raise InputError("--keyword-only applies to dumps, not the JSONL corpus",
                                     "leave it out, or pass a dump with --format")
                manifest = build_indexes(corpus, ctx.index_path, milvus_uri=ctx.milvus_uri or None,
                                         embedding_model=ctx.embedding_model, progress=progress,
                                         replace=replace, reuse=True)
            else:
                from factdebate.tools.sources.build import build_from_source

                manifest = build_from_source(
                    corpus, ctx.index_path, fmt=fmt, granularity=granularity,
                    keyword_only=keyword_only, milvus_uri=ctx.milvus_uri or None,
                    embedding_model=ctx.embedding_model, progress=progress, replace=replace,
                    strict=strict)
    except FactDebateError as exc:
        fail(exc)
        return
    if manifest.get("unchanged"):
        out.print(f"{ctx.index_path} already holds this corpus ({manifest.get('passages')} "
                  "passages, same embedding model): nothing to do", highlight=False)
        return
    from factdebate.tools.sources.build import quirks_line

    resumed = f", resumed at passage {manifest['resumed_at_passage']}" if manifest.get("resumes") \
        else ""
    quirks = quirks_line(manifest.get("quirks"))
    out.print(f"indexed {manifest.get('passages')} passages into {ctx.index_path} "
              f"in {manifest.get('build_seconds', 0):.1f}s{resumed}" + (f"; {quirks}" if quirks else ""),
              highlight=False)


@app.command()
def bench(
    names: Annotated[list[str], typer.Argument(
        help="overhead | scaling | retrieval | index | embedded | floor | profile | tokens | soak | "
        "corpus | hostile")],
    out_raw: Annotated[str, typer.Option(
        "--out", help="Folder for <bench>.json and work files.")] = "bench-results",
    data_dir_raw: Annotated[str | None, typer.Option(
        "--data-dir", help="Benchmark data folder.", show_default="$FACTDEBATE_DATA_DIR")] = None,
    latency: Annotated[float | None, typer.Option(
        help="Scripted-model latency per call, s.",
        show_default="overhead 0.1, scaling 1.0")] = None,
    claims: Annotated[int | None, typer.Option(
        help="Claims per benchmark.", show_default="each benchmark's own")] = None,
    workers: Annotated[int | None, typer.Option(
        help="Scaling: eval worker processes (the budget is for one process).",
        show_default="1")] = None,
    limit: Annotated[int, typer.Option(help="Retrieval: claims per gold set.")] = 300,
    pad_to: Annotated[int, typer.Option(help="Retrieval: passages for the latency run.")] = 100_000,
    sizes: Annotated[str, typer.Option(
        help="Index: synthetic passage counts, comma-separated.")] = "10000,100000",
    duration: Annotated[float | None, typer.Option(
        help="Soak: seconds of load on the server.", show_default="1800")] = None,
    users: Annotated[int | None, typer.Option(
        help="Soak: users, each with an API key of their own.", show_default="4")] = None,
    pages: Annotated[int | None, typer.Option(
        help="Corpus: pages of the synthetic FEVER dump (budgets judged from 200,000 pages, "
        "memory growth from 800,000).",
        show_default="1000000")] = None,
    embed_sample: Annotated[int | None, typer.Option(
        help="Corpus: passages embedded for the dense figures (0 skips them).",
        show_default="2000")] = None,
    budget_raw: Annotated[list[str], typer.Option(
        "--budget", help="NAME=LIMIT: judge the budget NAME (as the budget lines name it) "
        "against LIMIT instead of its own; repeatable.", show_default="none")] = [],  # noqa: B006
    markdown_raw: Annotated[str | None, typer.Option(
        "--markdown", help="Markdown file whose sections to regenerate (e.g. BENCHMARKS.md); "
        "without it only OUT/<name>.json is written.")] = None,
) -> None:
    """Run benchmarks; write OUT/<name>.json (and, with --markdown, regenerate their sections).

    Prints one line per budget (measured, limit, met / MISSED / not judged: why; a short run
    cannot judge every budget) and exits 1 when a judged budget is missed, 2 on bad input.
    """
    from factdebate.cli.flags import in_range, place, required_place
    from factdebate.evaluation.bench import BENCHES, run_bench
    from factdebate.evaluation.bench_budgets import (
        budget_line,
        exit_code,
        parse_overrides,
        summary_line,
    )
    from factdebate.evaluation.bench_report import write_markdown

    results: list[dict[str, Any]] = []
    try:
        out = required_place("--out", out_raw)
        markdown = required_place("--markdown", markdown_raw, "file") if markdown_raw else None
        data_dir = place("--data-dir", data_dir_raw)
        in_range("--latency", latency, 0.0, 60.0)
        in_range("--claims", claims, 1)
        in_range("--workers", workers, 1, default=1)
        in_range("--limit", limit, 1, default=300)
        in_range("--pad-to", pad_to, 1, default=100_000)
        in_range("--duration", duration, 10.0, default=1800)
        in_range("--users", users, 1, 16, default=4)
        in_range("--pages", pages, 1, 100_000_000, default=1_000_000)
        in_range("--embed-sample", embed_sample, 0, 100_000, default=2000)
        try:
            budget_limits = parse_overrides(budget_raw)
        except ValueError as exc:
            raise InputError(str(exc), "e.g. --budget peak_rss_mb=1024") from None
        for name in names:
            BENCHES.resolve(name)
        folder = data_dir or (Path(os.environ["FACTDEBATE_DATA_DIR"])
                              if os.environ.get("FACTDEBATE_DATA_DIR") else None)
        try:
            counts = tuple(int(x) for x in sizes.split(",") if x.strip())
        except ValueError:
            counts = ()
        if not counts or min(counts) < 1:
            raise InputError(f"--sizes {sizes!r} is not a comma-separated list of counts above 0",
                             "e.g. --sizes 10000,100000,1000000")
        kwargs: dict[str, Any] = {"data_dir": folder, "latency": latency, "limit": limit,
                                  "pad_to": pad_to, "sizes": counts}
        if claims is not None:
            kwargs["claims"] = claims
        if workers is not None:
            kwargs["workers"] = workers
        if duration is not None:
            kwargs["duration_s"] = duration
        if users is not None:
            kwargs["users"] = users
        if pages is not None:
            kwargs["pages"] = pages
        if embed_sample is not None:
            kwargs["embed_sample"] = embed_sample
        command = "factdebate bench " + " ".join(sys.argv[2:])
        for name in names:
            result = run_bench(name, out, command, budget_limits=budget_limits, **kwargs)
            results.append(result)
            for entry in result["budgets"]:
                print(budget_line(name, entry), flush=True)
            print(f"{summary_line(name, result['budgets'])} ({result['seconds']} s; "
                  f"{out / (name + '.json')})", flush=True)
        if markdown is not None:
            write_markdown(out, markdown)
        applied = {k for r in results for k in r.get("budget_overrides", {})}
        refused = {k for r in results for k in r.get("budget_overrides_refused", [])}
        if refused or set(budget_limits) - applied:
            names_seen = sorted({str(b["name"]) for r in results for b in r["budgets"]})
            raise InputError(f"--budget {', '.join(sorted(refused or set(budget_limits) - applied))}"
                             f": {'takes no other limit' if refused else 'names no budget'} of "
                             f"{' '.join(names)} (figures written)",
                             f"name one of: {', '.join(names_seen) or 'none'}")
    except FactDebateError as exc:
        fail(exc)
    code = exit_code(results)
    if code:
        raise typer.Exit(code)


@ls_app.command("frameworks")
def ls_frameworks() -> None:
    """Registered frameworks, one per line."""
    from factdebate.graphs.registry import FRAMEWORKS

    try:
        names = FRAMEWORKS.names()  # loads FACTDEBATE_PLUGINS first: a broken one is one line
    except FactDebateError as exc:
        fail(exc)
    for name in names:
        print(name)


@ls_app.command("backends")
def ls_backends() -> None:
    """Registered retriever backends, one per line."""
    from factdebate.tools.base import RETRIEVERS

    for name in RETRIEVERS.names():
        print(name)


@ls_app.command("label-sets")
def ls_label_sets() -> None:
    """Registered task label sets with their labels."""
    from factdebate.core.labels import LABEL_SETS

    for entry in LABEL_SETS:
        print(f"{entry.name}\t{' | '.join(entry.load().labels)}")


@ls_app.command("context")
def ls_context(
    framework: Annotated[str, typer.Option(help="Framework whose Context to list.")] = "tool_mad",
) -> None:
    """The framework's Context fields: default, range, who may set it, description.

    ``[operator]`` fields name a process, URL, file, folder or service: on a shared server only
    the operator's environment sets them (the local CLI may set every field).
    """
    from factdebate.graphs.registry import context_class

    try:
        cls = context_class(framework)
    except FactDebateError as exc:
        fail(exc)
        return
    for name, info in context_fields(cls).items():
        notes = [f"range {info['range'][0]}..{info['range'][1]}"] if info["range"] else []
        notes += ["operator"] if info["operator"] else []
        notes += [f"env {info['env']}"] if info["env"] else []
        tag = f"[{', '.join(notes)}] " if notes else ""
        print(f"{name}={info['default']!r}\t{tag}{info['description']}")


from factdebate.cli.eval import register as _register_evaluation  # noqa: E402

_register_evaluation(app, ls_app)  # eval, compare, ls datasets, ls metrics

from factdebate.cli.data import data_app as _data_app  # noqa: E402

app.add_typer(_data_app, name="data")  # data list, data fetch

from factdebate.cli.export import export_app as _export_app  # noqa: E402

app.add_typer(_export_app, name="export")  # export reviewed, export claimreview

from factdebate.cli.check import check as _check_command  # noqa: E402

app.command("check")(_check_command)  # check a whole text

from factdebate.cli.search import ls_indexes, search_command  # noqa: E402

app.command("search")(search_command)  # the passages a debater would get from an index
ls_app.command("indexes")(ls_indexes)  # what each built index holds
