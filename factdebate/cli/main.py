"""The ``factdebate`` command line: ``verify``, ``index``, ``ls``.

Flags map one to one onto ``Context`` fields (``--set field=value`` reaches any other field).
User errors print one line ``error: <problem>. <remedy>`` and exit non-zero, without a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

for _var, _val in (("RAGAS_DO_NOT_TRACK", "true"), ("HF_HUB_OFFLINE", "1"),
                   ("TOKENIZERS_PARALLELISM", "false"), ("LANGGRAPH_NO_VERSION_CHECK", "true")):
    os.environ.setdefault(_var, _val)

import typer  # noqa: E402
from rich.console import Console  # noqa: E402

from factdebate.core.context import Context, context_fields  # noqa: E402
from factdebate.core.errors import (  # noqa: E402
    BackendUnavailableError,
    ConfigError,
    FactDebateError,
    InputError,
)
from factdebate.tools import DEMO_CORPUS_DIR  # noqa: E402

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Verify claims by multi-agent debate (Tool-MAD and friends).")
ls_app = typer.Typer(help="List registered names.", no_args_is_help=True)
app.add_typer(ls_app, name="ls")
out = Console()
err = Console(stderr=True)

DEMO_CORPUS = DEMO_CORPUS_DIR / "passages.jsonl"


def _fail(exc: FactDebateError) -> None:
    one_line = " ".join(str(exc).split())
    err.print(f"[red]error:[/red] {one_line}", highlight=False, soft_wrap=True, markup=True)
    raise typer.Exit(exc.exit_code)


def _coerce(name: str, raw: str, cls: type[Context]) -> Any:
    default = context_fields(cls)[name]["default"]
    if isinstance(default, bool):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise InputError(f"--set {name}={raw!r} is not a boolean", "use true or false")
    if isinstance(default, list):
        return [p.strip() for p in raw.split(",") if p.strip()]
    try:
        return type(default)(raw)
    except ValueError as exc:
        raise InputError(f"--set {name}={raw!r}: {exc}", f"give a {type(default).__name__}") from exc


def build_context(
    overrides: dict[str, Any], sets: list[str], cls: type[Context] = Context
) -> Context:
    """A ``cls`` Context from explicit flags plus ``--set field=value`` pairs."""
    known = context_fields(cls)
    values = {k: v for k, v in overrides.items() if v is not None}
    for pair in sets:
        name, sep, raw = pair.partition("=")
        if not sep or name not in known:
            raise ConfigError(f"--set {pair!r} does not name a Context field",
                              f"fields: {', '.join(known)}")
        values[name] = _coerce(name, raw, cls)
    return cls(**values)


def ensure_index(ctx: Context, explicit_index: bool) -> None:
    """Build the demo-corpus index on first use of the default index folder."""
    from factdebate.tools.indexing import index_exists

    if index_exists(ctx.index_path):
        return
    if explicit_index or ctx.milvus_uri:
        raise ConfigError(f"no index in {ctx.index_path}",
                          "run: factdebate index CORPUS.jsonl --index-dir ...")
    err.print(f"[yellow]No index yet: indexing the bundled demo corpus into {ctx.index_path} "
              "(once).[/yellow]")
    _build_index(DEMO_CORPUS, ctx)


def _build_index(corpus: Path, ctx: Context) -> dict[str, Any]:
    from factdebate.tools.indexing import build_indexes

    return build_indexes(corpus, ctx.index_path, milvus_uri=ctx.milvus_uri or None,
                         embedding_model=ctx.embedding_model)


@app.command()
def verify(
    claim: Annotated[str, typer.Argument(help="The claim to verify ('-' reads stdin).")],
    framework: Annotated[str, typer.Option(help="Registered framework.")] = "tool_mad",
    model: Annotated[str | None, typer.Option(help="Model spec of every role.")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Judge model spec.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL.")] = None,
    rounds: Annotated[int | None, typer.Option(help="Max debate rounds T.")] = None,
    top_k: Annotated[int | None, typer.Option(help="Passages per retrieval.")] = None,
    debaters: Annotated[str | None, typer.Option(help="Comma list, e.g. rag,search.")] = None,
    scoring: Annotated[str | None, typer.Option(help="stability | consistency | none.")] = None,
    query_formulation: Annotated[bool | None, typer.Option(
        "--query-formulation/--no-query-formulation", help="Reformulate queries per round.")] = None,
    label_set: Annotated[str | None, typer.Option(help="fever|binary|averitec|...")] = None,
    rag_backend: Annotated[str | None, typer.Option(help="milvus | keyword.")] = None,
    search_backend: Annotated[str | None, typer.Option(help="auto|tavily|local_search.")] = None,
    index_dir: Annotated[str | None, typer.Option(help="Index folder.")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="Any Context field=value.")] = [],  # noqa: B006
    thread_id: Annotated[str | None, typer.Option(help="Name of this run's checkpoint thread.")] = None,
    resume: Annotated[bool, typer.Option(help="Resume --thread-id from its checkpoint.")] = False,
    checkpoint_db: Annotated[Path | None, typer.Option(help="SQLite checkpoint file.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Verify CLAIM and print the verdict with its evidence."""
    try:
        from factdebate.nodes.prepare import clean_claim

        if claim == "-":
            claim = sys.stdin.read()
        if resume and not thread_id:
            raise InputError("--resume needs --thread-id", "name the run to resume")
        claim = clean_claim(claim)
        from factdebate.run.frameworks import FRAMEWORKS, context_class

        framework = FRAMEWORKS.resolve(framework)
        ctx = build_context(
            {"debater_model": model, "judge_model": judge_model, "model_base_url": base_url,
             "max_rounds": rounds, "top_k": top_k, "scoring_mode": scoring,
             "debaters": debaters.split(",") if debaters else None,
             "query_formulation": query_formulation, "label_set": label_set,
             "rag_backend": rag_backend, "search_backend": search_backend,
             "index_dir": index_dir},
            set_,
            context_class(framework),
        )
        if FRAMEWORKS.entry(framework).meta.get("needs_index", True):
            ensure_index(ctx, explicit_index=bool(index_dir or os.environ.get("FACTDEBATE_INDEX_DIR")))
        thread_id = thread_id or uuid.uuid4().hex
        try:
            from factdebate.run.claims import run_async

            result = run_async(_verify(framework, claim, ctx, thread_id, resume, checkpoint_db))
        except FactDebateError:
            raise
        except Exception as exc:  # a provider or tool fault that outlived its retries
            raise interrupted_run(exc, thread_id) from exc
    except FactDebateError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps(result, ensure_ascii=False, default=str))
    else:
        from factdebate.cli.report import print_result

        print_result(out, result)


def interrupted_run(exc: Exception, thread_id: str) -> BackendUnavailableError:
    """A one-line error for a run stopped by a fault; its checkpoint lets it resume."""
    detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    what = "the model server is unreachable" if "connect" in detail.lower() else "the run stopped"
    return BackendUnavailableError(
        f"{what} ({detail}); progress is checkpointed under thread {thread_id}",
        f"fix the cause, then rerun with --resume --thread-id {thread_id}",
    )


async def _verify(framework: str, claim: str, ctx: Context, thread_id: str | None,
                  resume: bool, checkpoint_db: Path | None) -> dict[str, Any]:
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    from factdebate.run.claims import (
        default_checkpoint_db,
        default_memory_db,
        open_sqlite_saver,
        run_claim,
    )

    db = checkpoint_db or default_checkpoint_db()
    db.parent.mkdir(parents=True, exist_ok=True)
    async with open_sqlite_saver(db) as saver, \
            AsyncSqliteStore.from_conn_string(str(default_memory_db())) as store:
        await store.setup()
        return await run_claim(framework, {"claim": claim}, ctx, checkpointer=saver,
                               thread_id=thread_id, resume=resume, store=store)


@app.command()
def index(
    corpus: Annotated[Path, typer.Argument(help="JSONL of {doc_id, title, text}.")],
    index_dir: Annotated[str | None, typer.Option(help="Index folder.")] = None,
    milvus_uri: Annotated[str | None, typer.Option(help="Milvus Lite folder or server URI.")] = None,
    embedding_model: Annotated[str | None, typer.Option(help="minilm | openai:<model>.")] = None,
) -> None:
    """Build the vector (Milvus) and keyword indexes from CORPUS."""
    try:
        ctx = build_context({"index_dir": index_dir, "milvus_uri": milvus_uri,
                             "embedding_model": embedding_model}, [])
        if not corpus.is_file():
            raise InputError(f"corpus file {corpus} does not exist", "give a JSONL file path")
        manifest = _build_index(corpus, ctx)
    except FactDebateError as exc:
        _fail(exc)
        return
    out.print(f"indexed {manifest.get('passages')} passages into {ctx.index_path} "
              f"in {manifest.get('build_seconds', 0):.1f}s")


@app.command()
def bench(
    names: Annotated[list[str], typer.Argument(help="overhead | scaling | retrieval | embedded")],
    out: Annotated[Path, typer.Option(help="Folder for <bench>.json and work files.")] = Path(
        "bench-results"),
    data_dir: Annotated[Path | None, typer.Option(
        help="Benchmark data folder (default $FACTDEBATE_DATA_DIR).")] = None,
    latency: Annotated[float, typer.Option(help="Scripted-model latency per call, s.")] = 0.1,
    claims: Annotated[int | None, typer.Option(help="Claims per benchmark (its default).")] = None,
    workers: Annotated[int | None, typer.Option(
        help="Scaling: eval worker processes (default: one per core).")] = None,
    limit: Annotated[int, typer.Option(help="Retrieval: claims per gold set.")] = 300,
    pad_to: Annotated[int, typer.Option(help="Retrieval: passages for the latency run.")] = 100_000,
    markdown: Annotated[Path, typer.Option(help="Markdown file to regenerate.")] = Path(
        "BENCHMARKS.md"),
) -> None:
    """Run benchmarks; write OUT/<name>.json and regenerate their BENCHMARKS.md sections."""
    from factdebate.evaluation.bench import BENCHES, run_bench
    from factdebate.evaluation.bench_report import write_markdown

    try:
        for name in names:
            BENCHES.resolve(name)
        folder = data_dir or (Path(os.environ["FACTDEBATE_DATA_DIR"])
                              if os.environ.get("FACTDEBATE_DATA_DIR") else None)
        kwargs: dict[str, Any] = {"data_dir": folder, "latency": latency, "limit": limit,
                                  "pad_to": pad_to}
        if claims is not None:
            kwargs["claims"] = claims
        if workers is not None:
            kwargs["workers"] = workers
        command = "factdebate bench " + " ".join(sys.argv[2:])
        for name in names:
            result = run_bench(name, out, command, **kwargs)
            out_line = {k: v for k, v in result.items() if k in ("budget", "budget_met", "seconds")}
            err.print(f"{name}: {out_line}")
        write_markdown(out, markdown)
    except FactDebateError as exc:
        _fail(exc)


@ls_app.command("frameworks")
def ls_frameworks() -> None:
    """Registered frameworks, one per line."""
    from factdebate.run.frameworks import FRAMEWORKS

    for name in FRAMEWORKS.names():
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
def ls_context() -> None:
    """Every Context field with its default and description."""
    for name, info in context_fields().items():
        print(f"{name}={info['default']!r}\t{info['description']}")


from factdebate.cli.eval import register as _register_evaluation  # noqa: E402

_register_evaluation(app, ls_app)  # eval, compare, ls datasets, ls metrics
