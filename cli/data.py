"""``factdebate data list | fetch``: the data catalogue, and one command to download an entry.

``data fetch NAME`` writes into the data folder ``eval`` reads by default (``--data-dir`` /
``$FACTDEBATE_DATA_DIR`` when given, else ``$FACTDEBATE_HOME/data``; ``--to DIR`` chooses another),
with a progress bar on stderr. ``factdebate index NAME`` then finds a fetched knowledge source by
its name (:func:`catalogue_corpus`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from factdebate.cli.output import err, fail, out
from factdebate.core.errors import FactDebateError, InputError

data_app = typer.Typer(help="The datasets and knowledge sources factdebate uses: list, fetch.",
                       no_args_is_help=True)


def data_folder(explicit: str | Path | None, *, create: bool) -> Path:
    """``explicit``, else ``$FACTDEBATE_DATA_DIR``, else ``$FACTDEBATE_HOME/data`` (created when
    ``create``; otherwise it must exist, as ``eval`` requires)."""
    import os

    from factdebate.evaluation.datasets import DATA_DIR_ENV, default_data_dir, resolve_data_dir

    raw = explicit or os.environ.get(DATA_DIR_ENV)
    path = Path(raw).expanduser().absolute() if raw else default_data_dir().expanduser().absolute()
    if create and not path.exists():
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            from factdebate.core.errors import StorageError

            raise StorageError(f"cannot create the data folder {path}: {exc.strerror}",
                               "pass --to DIR, a folder you can write") from None
    return resolve_data_dir(path)


class _Bar:
    """A rich progress bar on stderr (bytes, speed, time left) fed by the downloader; shown while
    a transfer runs, on a terminal only (a log gets the result lines)."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TimeRemainingColumn(), console=err,
                                 transient=True, disable=not err.is_terminal)
        self.task: Any = None

    def start(self, description: str, total: int | None, completed: int) -> None:
        """A transfer (re)starts (a resumed one starts at ``completed``)."""
        if self.task is None:
            self.progress.start()
            self.task = self.progress.add_task(description, total=total, completed=completed)
        else:
            self.progress.reset(self.task, total=total, completed=completed)

    def stop(self) -> None:
        """The transfer is over (done or failed)."""
        self.progress.stop()

    def advance(self, count: int) -> None:
        """More bytes arrived."""
        self.progress.advance(self.task, count)


def _status(name: str, folder: Path | None, fetched: dict[str, Any]) -> str:
    from factdebate.evaluation.data_catalog import entry

    item = entry(name)
    if folder is None or item.target not in fetched:
        return "-"
    return "fetched" if (folder / item.target).is_file() else "-"


@data_app.command("list")
def data_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print the entries as a JSON list.")]
    = False,
) -> None:
    """Every dataset and knowledge source: version, licence, size, checksum, and whether it is
    fetched into the data folder."""
    from factdebate.evaluation.data_catalog import catalog, read_fetched

    try:
        entries = catalog()
        try:
            folder: Path | None = data_folder(None, create=False)
            fetched = read_fetched(folder) if folder else {}
        except FactDebateError:
            folder, fetched = None, {}
    except FactDebateError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps([{**e.as_json(), "fetched": _status(e.name, folder, fetched) == "fetched"}
                          for e in entries], indent=2))
        return
    from rich.table import Table

    table = Table(title=f"data folder: {folder or 'none yet (factdebate data fetch NAME)'}")
    for column in ("name and official URL", "kind", "version", "licence", "size", "checksum",
                   "eval / index", "fetched"):
        table.add_column(column, overflow="fold")
    for e in entries:
        use = (f"eval reads {e.reads}" if e.convert is not None else "no converter yet") \
            if e.kind == "dataset" else f"index --format {e.format}"
        table.add_row("\n".join([e.name, *e.urls]), e.kind, e.version, e.licence, e.size or "",
                      e.checksum or "",
                      use, _status(e.name, folder, fetched))
    out.print(table)


@data_app.command("fetch")
def data_fetch(
    names: Annotated[list[str], typer.Argument(metavar="NAME...",
                                               help="Names from factdebate data list.")],
    to: Annotated[str | None, typer.Option(
        "--to", help="Data folder to fetch into.",
        show_default="--data-dir, $FACTDEBATE_DATA_DIR, else $FACTDEBATE_HOME/data")] = None,
    data_dir: Annotated[str | None, typer.Option(
        "--data-dir", help="The data folder (as eval's --data-dir); --to wins.",
        show_default="$FACTDEBATE_DATA_DIR, else $FACTDEBATE_HOME/data")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite a file that is there but was not fetched by this command.")]
    = False,
) -> None:
    """Download each NAME into the data folder eval reads, resumable, checked against the
    publisher's checksum, recorded with its SHA-256 in the folder's fetched.json.

    $FACTDEBATE_DATA_MIRROR=URL fetches URL/<host>/<path> of each official URL instead;
    $FACTDEBATE_FETCH_TIMEOUT (seconds, default 60) and $FACTDEBATE_FETCH_RETRIES (default 4) bound
    a stalled or failing transfer. Hub files go through huggingface_hub (HF_ENDPOINT).
    """
    from factdebate.evaluation.data_catalog import entry

    try:
        items = [entry(name) for name in dict.fromkeys(names)]  # every name known before a byte
        folder = data_folder(to or data_dir, create=True)
        for item in items:
            _fetch_one(item, folder, force)
    except FactDebateError as exc:
        fail(exc)


def _fetch_one(item: Any, folder: Path, force: bool) -> None:
    from factdebate.evaluation.data_fetch import fetch

    bar = _Bar()
    try:
        record = fetch(item, folder, bar, force=force,
                       say=lambda line: err.print(line, highlight=False, markup=False))
    finally:
        bar.stop()
    out.print(f"{item.name}: {folder / item.target} (sha256 {record['sha256']}) from "
              f"{record['url']}", highlight=False, markup=False)
    if item.kind == "knowledge-source":
        out.print(f"next: factdebate index {item.name}", highlight=False, markup=False)
    elif item.convert is None:
        out.print(f"note: the official file is fetched, but eval --dataset {item.name} reads "
                  f"{item.reads}, which needs {item.missing}", highlight=False, markup=False)
    else:
        out.print(f"next: factdebate eval --dataset {item.name} --framework tool_mad --limit 20",
                  highlight=False, markup=False)


def catalogue_corpus(corpus: Path, format_: str | None, name: str | None,
                     index_dir: str | None) -> tuple[Path, str | None, str | None]:
    """What ``factdebate index CORPUS`` reads when CORPUS is no path but a catalogue knowledge
    source's name: the fetched file (or its unpacked folder), its ``--format``, and the index name
    (``$FACTDEBATE_HOME/indexes/NAME``) unless ``--name`` or ``--index-dir`` gave one. Anything
    else is returned as it came.

    Raises:
        InputError: The source is not fetched (the line names the command that fetches it), no
            reader imports its format yet, or ``--format`` names another format.
    """
    from factdebate.evaluation.data_catalog import entry, is_knowledge_source, read_fetched

    if corpus.exists() or not is_knowledge_source(str(corpus)):
        return corpus, format_, name
    item = entry(str(corpus))
    try:
        folder: Path | None = data_folder(None, create=False)
    except FactDebateError:
        folder = None
    if folder is None or item.target not in read_fetched(folder) \
            or not (folder / item.index_input).exists():
        raise InputError(f"the knowledge source {item.name} is not fetched"
                         + (f" into {folder}" if folder else ""),
                         f"run factdebate data fetch {item.name} first")
    from factdebate.tools.sources import FORMATS

    if item.format not in FORMATS:
        raise InputError(f"no reader imports {item.name}'s format {item.format} yet",
                         item.note or f"use one of: {', '.join(FORMATS)}")
    if format_ is not None and format_ != item.format:
        raise InputError(f"--format {format_} does not match {item.name}, a {item.format} dump",
                         "leave --format out")
    path = folder / item.index_input
    if path.is_dir() and item.format == "feverous-db":  # the unpacked zip: its one database
        found = sorted(path.rglob("*.db"))
        if len(found) != 1:
            raise InputError(f"{path} holds {len(found)} .db files, not FEVEROUS' one database",
                             f"fetch it again: factdebate data fetch {item.name} --force")
        path = found[0]
    return path, item.format, name or (None if index_dir else item.name)
