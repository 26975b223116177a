"""``factdebate export reviewed | claimreview``: what reviewers decided, as a dataset or as
publishable fact-check markup.

* ``export reviewed RUN_DIR --out FILE``: the reviewed claims of an eval run folder as a dataset
  file whose gold labels are the reviewers' (``evaluation/reviewed.py``); ``factdebate eval
  --dataset FILE`` then measures agreement with the reviewers.
* ``export claimreview THREAD|RUN_DIR --org NAME --url URL``: schema.org ``ClaimReview`` JSON-LD
  of every verdict a reviewer approved or edited (``evaluation/claimreview.py``); a thread is read
  from a LangGraph server (``--server``) or from the local checkpoint file ``verify`` wrote.

Both say on stderr how many verdicts they left out and why.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from factdebate.cli.output import err, fail
from factdebate.core.errors import FactDebateError, InputError

export_app = typer.Typer(help="Reviewed verdicts as a dataset, or as ClaimReview markup.",
                         no_args_is_help=True)


def _say(line: str) -> None:
    err.print(line, highlight=False, markup=False, soft_wrap=True)


@export_app.command("reviewed")
def export_reviewed_command(
    run_dir: Annotated[Path, typer.Argument(help="An eval run folder (its results.jsonl).")],
    out_file: Annotated[Path, typer.Option(
        "--out", help="Dataset file to write (JSON lines, the shared record schema).",
        show_default="required")],
    server: Annotated[str | None, typer.Option(
        help="LangGraph server of an 'eval --server' run: the reviewed threads are read there "
        "(API key: $FACTDEBATE_API_KEY).", show_default="the run's checkpoint file")] = None,
) -> None:
    """Write the reviewed claims of RUN_DIR as a dataset whose gold labels are the reviewers'.

    Rows a reviewer approved or edited are kept; rejected, unreviewed and error rows are left
    out and counted. Then 'factdebate eval --dataset FILE' measures agreement with reviewers.
    """
    from factdebate.evaluation.reviewed import export_reviewed

    try:
        chosen = export_reviewed(run_dir, out_file, server)
    except FactDebateError as exc:
        fail(exc)
        return
    _say(f"wrote {len(chosen.kept)} reviewed claim(s) of {chosen.rows} row(s) to {out_file} "
         f"({chosen.left_out_line()})")


@export_app.command("claimreview")
def export_claimreview_command(
    source: Annotated[str, typer.Argument(
        help="A thread id (with --server or the checkpoint file), or an eval run folder.")],
    org: Annotated[str | None, typer.Option(
        help="Name of the organisation publishing the reviews (ClaimReview author).",
        show_default="required")] = None,
    url: Annotated[str | None, typer.Option(
        help="URL of the page the reviews are published on.", show_default="required")] = None,
    appearance: Annotated[list[str], typer.Option(
        help="URL where the claim appeared (repeatable; the first is its first appearance).",
        show_default="none")] = [],  # noqa: B006
    claim_author: Annotated[str | None, typer.Option(
        help="Who made the claim (itemReviewed author).", show_default="not named")] = None,
    server: Annotated[str | None, typer.Option(
        help="LangGraph server holding THREAD, or the threads of an 'eval --server' RUN_DIR "
        "(API key: $FACTDEBATE_API_KEY).",
        show_default="the local checkpoint file")] = None,
    checkpoint_db: Annotated[Path | None, typer.Option(
        help="SQLite checkpoint file holding THREAD.",
        show_default="$FACTDEBATE_HOME/checkpoints.sqlite")] = None,
    out_file: Annotated[Path | None, typer.Option(
        "--out", help="JSON-LD file to write.", show_default="stdout")] = None,
    unreviewed: Annotated[bool, typer.Option(
        "--unreviewed", help="Also export verdicts no reviewer decided, marked as unreviewed "
        "machine verdicts in the markup (never rejected ones).")] = False,
) -> None:
    """Write schema.org ClaimReview JSON-LD of the reviewed verdicts of THREAD or RUN_DIR.

    Only verdicts a reviewer approved or edited are published; unreviewed and rejected ones are
    left out and counted; --unreviewed exports the unreviewed ones too, marked as such in the
    markup. Ratings: SUPPORTS True (5), REFUTES False (1), NOT ENOUGH INFO
    Unproven (3), CONFLICTING Mixed (3), on a 1-5 scale.
    """
    from factdebate.evaluation import claimreview as cr

    try:
        pub = cr.publisher(org, url, appearance, claim_author)
        verdicts = _verdicts(source, server, checkpoint_db)
        reviews, chosen = cr.claim_reviews(verdicts, pub, unreviewed=unreviewed)
        text = cr.dumps(reviews)
        if out_file is None:
            sys.stdout.write(text)
        else:
            from factdebate.evaluation.reviewed import write_text_atomic

            write_text_atomic(out_file, text)
    except FactDebateError as exc:
        fail(exc)
        return
    where = f" to {out_file}" if out_file else ""
    machine = sum(1 for r in reviews if r.get("reviewBody") == cr.UNREVIEWED_NOTE)
    if machine:
        _say(f"warning: {machine} of the ClaimReview(s) are UNREVIEWED machine verdicts "
             "(--unreviewed); their markup says so (reviewBody)")
    rule = ("a rejected verdict is never published" if unreviewed else
            "a verdict is published only once a reviewer approved or edited it")
    _say(f"wrote {len(reviews)} ClaimReview(s) of {chosen.rows} verdict(s){where} "
         f"({chosen.left_out_line()}; {rule})")


def _verdicts(source: str, server: str | None, checkpoint_db: Path | None) -> list:
    from factdebate.evaluation import claimreview as cr

    path = Path(source)
    if path.is_dir():
        if checkpoint_db:
            raise InputError(f"{source} is a run folder, which holds its own checkpoint file; "
                             "--checkpoint-db names the file of a thread",
                             "drop --checkpoint-db, or name a thread id")
        from factdebate.evaluation.reviewed import read_run_rows

        record, rows = read_run_rows(path, server)
        return cr.verdicts_of_rows(rows, str(record.get("task") or "fever"))
    if not source.strip():
        raise InputError("export claimreview needs a thread id or a run folder",
                         "name the --thread-id of a reviewed run, or an eval --out folder")
    from factdebate.run.claims import default_checkpoint_db, run_async

    if server:
        values = run_async(cr.thread_values_server(
            source, server, os.environ.get("FACTDEBATE_API_KEY")
            or os.environ.get("LANGGRAPH_API_KEY")))
    else:
        values = run_async(cr.thread_values_local(source, checkpoint_db or default_checkpoint_db()))
    if not values:
        raise InputError(f"thread {source!r} has no state", "name a thread that ran")
    return cr.verdicts_of_state(values, source)
