"""``factdebate check FILE|-``: check a whole text and report every sentence's verdict.

Extracts the text's check-worthy claims, debates each with ``--framework`` (Tool-MAD by default)
and prints the text with each sentence marked by its verdict and numbered citations below
(``--json``: one JSON object; ``--out report.html``: a self-contained HTML report). Progress is
shown per claim. The run is checkpointed under ``--thread-id``; ``--resume`` continues it and
debates only the claims that had not finished.

Limits (one line each, never a traceback): an empty text, a text over
``factdebate.nodes.check_text.state.MAX_TEXT_CHARS`` characters, a binary or non-UTF-8 file are refused;
a text without check-worthy claims is a result ("no check-worthy claims"); claims over
``--max-claims`` are reported as skipped with their number.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import typer

from factdebate.cli.output import err, fail, out, print_outcome
from factdebate.cli.search import INDEX_HELP
from factdebate.core.errors import FactDebateError, InputError
from factdebate.nodes.check_text.state import MAX_TEXT_CHARS, CheckTextContext

WIKIPEDIA_HELP = (
    "Search live Wikipedia ($FACTDEBATE_MEDIAWIKI_URL, English Wikipedia by default) instead of a "
    "local index: rag_backend=wikipedia, search_backend=wikipedia unless TAVILY_API_KEY is set; "
    "no index needed.")
"""``--wikipedia`` of ``check`` and ``verify``."""
CHECKS_FILE_BYTES = MAX_TEXT_CHARS * 4
"""A file larger than this cannot hold a text within the limit (4 bytes per character at most)."""


def read_text(source: str) -> str:
    """The text of FILE, or of stdin for ``-``: UTF-8, not binary, within the size limit."""
    from factdebate.nodes.check_text.split_text import clean_text

    where = "stdin" if source == "-" else source
    if source == "-":
        data = sys.stdin.buffer.read(CHECKS_FILE_BYTES + 1)
    else:
        path = Path(source)
        if not path.is_file():
            raise InputError(f"{source} is not a file", "give a text file path, or - for stdin")
        with path.open("rb") as handle:
            data = handle.read(CHECKS_FILE_BYTES + 1)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(f"{where} is binary (a NUL byte at offset {nul})",
                         "pass a UTF-8 text file")
    if len(data) > CHECKS_FILE_BYTES:
        raise InputError(f"{where} is over {CHECKS_FILE_BYTES} bytes, more than a text of "
                         f"{MAX_TEXT_CHARS} characters can take",
                         f"split it into parts of at most {MAX_TEXT_CHARS} characters")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                         f"{exc.start})", "convert it first, e.g. iconv -f latin1 -t utf-8") from exc
    return clean_text(text)


def check_context(overrides: dict[str, Any], sets: list[str],
                  verifier: dict[str, Any]) -> CheckTextContext:
    """The Context: ``--set`` fields of the text check go to it, any other to the verifier's."""
    from factdebate.run.setup import build_context

    own = {f.name for f in fields(CheckTextContext)}
    mine = [p for p in sets if p.partition("=")[0] in own]
    for pair in (p for p in sets if p.partition("=")[0] not in own):
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise InputError(f"--set {pair!r} is not field=value", "write --set field=value")
        verifier[name] = raw
    if verifier:
        overrides["verifier_settings"] = verifier
    ctx = build_context(overrides, mine, CheckTextContext)
    assert isinstance(ctx, CheckTextContext)
    return ctx


def check(
    source: Annotated[str, typer.Argument(metavar="FILE|-", help="Text file ('-' reads stdin).")],
    framework: Annotated[str, typer.Option(help="Framework that debates each claim.")] = "tool_mad",
    model: Annotated[str | None, typer.Option(help="Model spec of every role.")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Judge model spec.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL.")] = None,
    rounds: Annotated[int | None, typer.Option(help="Max debate rounds per claim.")] = None,
    max_claims: Annotated[int | None, typer.Option(help="Claims debated at most (default 20).")] = None,
    label_set: Annotated[str | None, typer.Option(help="fever | binary | averitec.")] = None,
    rag_backend: Annotated[str | None, typer.Option(
        help="milvus | keyword | hybrid | wikipedia.")] = None,
    search_backend: Annotated[str | None, typer.Option(
        help="auto|tavily|local_search|wikipedia.")] = None,
    index_dir: Annotated[str | None, typer.Option(help="Index folder.")] = None,
    index_name: Annotated[str | None, typer.Option("--index", help=INDEX_HELP)] = None,
    wikipedia: Annotated[bool, typer.Option("--wikipedia", help=WIKIPEDIA_HELP)] = False,
    set_: Annotated[list[str], typer.Option("--set", help="Context field=value (the text "
                    "check's, else the verifier's).")] = [],  # noqa: B006
    thread_id: Annotated[str | None, typer.Option(help="Name of this run's checkpoint thread.")] = None,
    resume: Annotated[bool, typer.Option(help="Resume --thread-id from its checkpoint.")] = False,
    checkpoint_db: Annotated[Path | None, typer.Option(help="SQLite checkpoint file.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    out_raw: Annotated[str | None, typer.Option("--out", help="Write a self-contained HTML "
                       "report, e.g. report.html.")] = None,
    review: Annotated[bool, typer.Option(
        "--review", help="A fact-checker's review of each claim's verdict before the text's is "
        "final: asked on the terminal, or given by --review-decision (for every claim); without "
        "either the check waits, resumable.")] = False,
    review_decision: Annotated[str | None, typer.Option(
        help="Reviewer's decision on each claim without asking: approve | edit | reject "
        "(implies --review).")] = None,
    review_label: Annotated[str | None, typer.Option(
        help="Label of an edit (one of the label set).")] = None,
    review_rationale: Annotated[str | None, typer.Option(help="Rationale of an edit.")] = None,
    reviewer: Annotated[str | None, typer.Option(help="Reviewer's name (default $USER).")] = None,
    review_note: Annotated[str | None, typer.Option(help="Reviewer's note.")] = None,
) -> None:
    """Check a whole text: extract its claims, debate each, mark every sentence with a verdict."""
    from factdebate.cli.flags import in_range, place
    from factdebate.cli.search import index_overrides

    try:
        from factdebate.cli.review import scripted_decision

        if resume and not thread_id:
            raise InputError("--resume needs --thread-id", "name the run to resume")
        scripted = scripted_decision(review_decision, review_label, reviewer, review_note,
                                     review_rationale)
        review = review or scripted is not None
        out_html = place("--out", out_raw, "file")  # "" would be the current folder
        index_values, explicit_index = index_overrides(index_name, index_dir)
        in_range("--rounds", rounds, 1)  # 0 was dropped (the verifier's default ran)
        if out_html is not None and out_html.is_dir():
            raise InputError(f"--out {out_html} is a folder", "give a file path, e.g. report.html")
        if out_html is not None and not out_html.parent.is_dir():
            raise InputError(f"--out {out_html}: folder {out_html.parent} does not exist",
                             "create it or write the report elsewhere")
        text = read_text(source)
        from factdebate.graphs.first_use import debates_read_local_index
        from factdebate.graphs.registry import FRAMEWORKS, context_class

        name = FRAMEWORKS.resolve(framework)
        backends: dict[str, Any] = {"rag_backend": rag_backend, "search_backend": search_backend}
        verifier: dict[str, Any] = {} if rounds is None else {"max_rounds": rounds}
        if wikipedia:
            from factdebate.tools.wikipedia_live import shortcut_settings

            backends = shortcut_settings(rag_backend, search_backend)
            wiki = backends.pop("wiki_backend")  # MERMAID's field: the verifier's, not the check's
            if "wiki_backend" in {f.name for f in fields(context_class(name))}:
                verifier["wiki_backend"] = wiki
        ctx = check_context(
            {"framework": name, "debater_model": model, "judge_model": judge_model,
             "model_base_url": base_url, "max_claims": max_claims, "label_set": label_set,
             "review": True if review else None, **backends, **index_values}, list(set_),
            verifier)
        searches = debates_read_local_index(ctx)  # the verifier's settings: graphs/first_use.py
        if searches:
            from factdebate.run.setup import check_index

            check_index(ctx, explicit_index=explicit_index)
        thread_id = thread_id or uuid.uuid4().hex
        waiting = resume and scripted is not None  # a resumed review: the decision resumes it
        result = _run(text, ctx, thread_id, resume, checkpoint_db,
                      scripted if waiting else None)
        if result.get("pending_review"):
            from factdebate.cli.review import complete_review

            result = complete_review(
                result, lambda value: _run(text, ctx, thread_id, True, checkpoint_db, value),
                scripted, err)
        if out_html is not None:
            from factdebate.evaluation.html_report import write_check_html

            write_check_html(result, out_html)
            err.print(f"report written to {out_html}", highlight=False)
    except FactDebateError as exc:
        fail(exc)
        return
    from factdebate.cli.check_report import print_check
    from factdebate.cli.search import index_line, searched_index

    if searches:  # the index the claims' debates searched: --json key "index", a last line
        result = {**result, "index": searched_index(ctx)}
    print_outcome(result, as_json, print_check)
    if searches and not as_json:
        out.print(index_line(result["index"]), highlight=False, markup=False, soft_wrap=True)
    _print_reviews(result, as_json)


def _print_reviews(result: dict[str, Any], as_json: bool) -> None:
    """Each claim's review line, or how to resume a check still waiting for one."""
    from factdebate.cli.review import print_waiting, review_line

    if result.get("pending_review"):
        print_waiting(err if as_json else out, result, sys.argv[1:], (), "check_text")
    elif not as_json:
        for claim in (result.get("check") or {}).get("claims") or []:
            if claim.get("review"):
                out.print(f"{claim.get('claim')}: {review_line(claim['review'])}",
                          highlight=False, markup=False, soft_wrap=True)


def _run(text: str, ctx: CheckTextContext, thread_id: str, resume: bool,
         checkpoint_db: Path | None, review_decision: Any = None) -> dict[str, Any]:
    """The text check through the one engine call, its claims' progress on stderr."""
    from factdebate.cli.check_report import CheckProgress
    from factdebate.run.engine import run_local

    with CheckProgress(err) as progress:
        return run_local("check_text", {"text": text}, ctx, thread_id=thread_id, resume=resume,
                         checkpoint_db=checkpoint_db, progress=progress, what="the check",
                         review_decision=review_decision,
                         config_extra={"run_name": "check_text:check",
                                       "metadata": {"verifier": ctx.framework}})
