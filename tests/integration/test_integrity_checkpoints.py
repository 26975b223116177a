"""A checkpoint file is read as data, never as code.

LangGraph's default checkpoint deserializer (``JsonPlusSerializer``) imports and calls whatever a
msgpack extension value names: a checkpoint file from elsewhere (a run folder someone sent, the
evaluation browser's ``FACTDEBATE_RUNS_DIR``) that names ``os.system`` runs a command in the
process that opens it. These tests plant such values into real checkpoint files written by real
runs (the ``factdebate`` CLI in subprocesses) and open them the ways the project does: ``verify
--resume``, ``check --resume``, ``eval --resume`` (whose reports read every item's checkpoint),
the HTML report, and the saver every one of them uses. The command the planted value names
creates a marker file: it must never appear, and each reader must stop with one line naming the
file ("unsupported data in FILE", exit 3).
"""

from __future__ import annotations

import asyncio
import collections
import decimal
import functools
import json
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import ormsgpack
import pytest

from tests.integration.cli_process import one_error_line, run_cli

CONSTRUCTOR_SINGLE_ARG, CONSTRUCTOR_POS_ARGS, CONSTRUCTOR_KW_ARGS, METHOD_SINGLE_ARG = 0, 1, 2, 3
PYDANTIC_V2 = 5


def _ext(code: int, *fields: object) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(list(fields)))


def _touch(marker: Path) -> str:
    return f"touch {marker}"


PAYLOADS: dict[str, Callable[[Path], object]] = {
    # what LangGraph writes for an Enum / a set: module, name, one argument
    "os.system (one argument)": lambda m: _ext(CONSTRUCTOR_SINGLE_ARG, "os", "system", _touch(m)),
    # what it writes for a Path or a Send: module, name, positional arguments
    "os.system (positional)": lambda m: _ext(CONSTRUCTOR_POS_ARGS, "os", "system", [_touch(m)]),
    # what it writes for a dataclass: module, name, keyword arguments
    "subprocess.run (keywords)": lambda m: _ext(
        CONSTRUCTOR_KW_ARGS, "subprocess", "run", {"args": ["touch", str(m)]}),
    # hidden inside a type that is allowed (a Send's argument): every level is checked
    "nested in an allowed Send": lambda m: _ext(
        CONSTRUCTOR_POS_ARGS, "langgraph.types", "Send",
        ["node", _ext(CONSTRUCTOR_SINGLE_ARG, "os", "system", _touch(m))]),
    # a method call on an imported object
    "os.system via a method": lambda m: _ext(METHOD_SINGLE_ARG, "os", "path", _touch(m), "exists"),
    "pydantic-shaped os.system": lambda m: _ext(PYDANTIC_V2, "os", "system", {"x": 1}, None),
}


def _channel_values_with(blob: bytes, value: object) -> bytes:
    checkpoint = ormsgpack.unpackb(blob, ext_hook=lambda code, data: ormsgpack.Ext(code, data),
                                   option=ormsgpack.OPT_NON_STR_KEYS)
    checkpoint["channel_values"]["planted"] = value
    return ormsgpack.packb(checkpoint, option=ormsgpack.OPT_NON_STR_KEYS)


def plant(db: Path, value: object, *, kind: str = "msgpack", thread: str | None = None) -> int:
    """Put ``value`` into every checkpoint of ``db`` (of ``thread`` only if given), as a channel
    value the graph does not even have: reading the checkpoint is enough to decode it."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT rowid, thread_id, checkpoint FROM checkpoints").fetchall()
        changed = 0
        for rowid, thread_id, blob in rows:
            if thread is not None and thread_id != thread:
                continue
            if kind == "msgpack":
                new: bytes = _channel_values_with(blob, value)
            elif kind == "json":
                new = json.dumps(value).encode()
            else:
                new = value if isinstance(value, bytes) else str(value).encode()
            conn.execute("UPDATE checkpoints SET type = ?, checkpoint = ? WHERE rowid = ?",
                         (kind, new, rowid))
            changed += 1
    assert changed, f"no checkpoint planted in {db}"
    return changed


def _cli(args: list[str], home: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return run_cli(args, home, timeout=timeout,
                   unset=("LANGSMITH_TRACING", "LANGGRAPH_STRICT_MSGPACK"))


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real finished ``verify`` thread ``t1`` (framework standard): (home, checkpoint file)."""
    work = tmp_path_factory.mktemp("verified")
    db = work / "ck.sqlite"
    done = _cli(["verify", "Paris is in France", "--framework", "standard", "--model",
                 "scripted:agree", "--thread-id", "t1", "--checkpoint-db", str(db), "--json"],
                work / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    return work / "home", db


@pytest.fixture
def verified_copy(verified: tuple[Path, Path], tmp_path: Path) -> Path:
    db = tmp_path / "ck.sqlite"
    with sqlite3.connect(verified[1]) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    return db


async def _read_latest(db: Path) -> object:
    from factdebate.run.claims import open_sqlite_saver

    async with open_sqlite_saver(db) as saver:
        return await saver.aget_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})


# -- the saver every CLI path opens (verify, check, eval, bench) ---------------------------------
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_planted_callables_are_refused_and_never_run(verified_copy, tmp_path, payload):
    from factdebate.core.errors import UnsupportedDataError

    marker = tmp_path / "marker"
    plant(verified_copy, PAYLOADS[payload](marker))
    with pytest.raises(UnsupportedDataError) as caught:
        asyncio.run(_read_latest(verified_copy))
    assert not marker.exists(), f"{payload}: the planted command ran"
    assert f"unsupported data in {verified_copy}" in str(caught.value)
    assert caught.value.exit_code == 3


@pytest.mark.parametrize("kind,value,named", [
    ("json", {"lc": 2, "type": "constructor", "id": ["os", "system"], "args": ["true"]},
     "os.system"),
    ("json", {"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]}, "secret"),
    ("pickle", b"cos\nsystem\n(S'true'\ntR.", "pickle"),
    ("msgpack", b"\xc1\xc1 not msgpack", "unreadable"),
    ("exotic", b"{}", "exotic"),
])
def test_other_foreign_encodings_are_one_error(verified_copy, kind, value, named):
    from factdebate.core.errors import UnsupportedDataError

    with sqlite3.connect(verified_copy) as conn:
        conn.execute("UPDATE checkpoints SET type = ?, checkpoint = ?",
                     (kind, value if isinstance(value, bytes) else json.dumps(value).encode()))
    with pytest.raises(UnsupportedDataError, match=f"unsupported data in {verified_copy}.*{named}"):
        asyncio.run(_read_latest(verified_copy))


def test_what_real_runs_write_is_read_back(verified_copy):
    saved = asyncio.run(_read_latest(verified_copy))
    assert saved is not None
    assert saved.checkpoint["channel_values"]["claim"] == "Paris is in France"


# -- the CLI commands, as real processes ---------------------------------------------------------
def test_verify_resume_on_a_planted_checkpoint_runs_nothing(verified, verified_copy, tmp_path):
    marker = tmp_path / "marker"
    plant(verified_copy, PAYLOADS["os.system (one argument)"](marker))
    done = _cli(["verify", "Paris is in France", "--framework", "standard", "--model",
                 "scripted:agree", "--thread-id", "t1", "--checkpoint-db", str(verified_copy),
                 "--resume"], verified[0])
    assert not marker.exists()
    line = one_error_line(done)
    assert done.returncode == 3 and f"unsupported data in {verified_copy}" in line, line


def test_check_resume_on_a_planted_checkpoint_runs_nothing(verified, verified_copy, tmp_path):
    marker = tmp_path / "marker"
    plant(verified_copy, PAYLOADS["os.system (positional)"](marker))
    text = tmp_path / "text.txt"
    text.write_text("Paris is in France.", encoding="utf-8")
    done = _cli(["check", str(text), "--framework", "standard", "--model", "scripted:agree",
                 "--thread-id", "t1", "--checkpoint-db", str(verified_copy), "--resume"],
                verified[0])
    assert not marker.exists()
    line = one_error_line(done)
    assert done.returncode == 3 and f"unsupported data in {verified_copy}" in line, line


def _eval_args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "--framework", "standard", "--dataset", str(data), "--model", "scripted:agree",
            "--out", str(out), "--concurrency", "2", *extra]


def test_eval_resume_and_reports_of_a_received_run_folder_run_nothing(eval_run, tmp_path):
    data, finished, home = eval_run  # a finished 2-item run, received as a copy
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    marker = tmp_path / "marker"
    plant(out / "checkpoints.sqlite", PAYLOADS["subprocess.run (keywords)"](marker))
    # every item finished: --resume only rewrites the reports, which read each item's checkpoint
    done = _cli([*_eval_args(data, out), "--resume"], home)
    assert not marker.exists()
    line = one_error_line(done)
    assert done.returncode == 3, done.stderr[-2000:]
    assert f"unsupported data in {out / 'checkpoints.sqlite'}" in line, line
    # an unfinished item: --resume continues its thread from the planted checkpoint
    rows = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(rows[0] + "\n")
    done = _cli([*_eval_args(data, out), "--resume"], home)
    assert not marker.exists()
    assert done.returncode == 3 and "unsupported data in" in one_error_line(done)
    from factdebate.core.errors import UnsupportedDataError
    from factdebate.evaluation.html_report import write_eval_html

    with pytest.raises(UnsupportedDataError, match="unsupported data in"):
        write_eval_html(out)
    assert not marker.exists()


# -- what the project itself writes stays readable ----------------------------------------------
async def _every_framework(db: Path, index: Path) -> list[str]:
    from factdebate.graphs.registry import FRAMEWORKS, context_class
    from factdebate.run.claims import open_sqlite_saver, open_sqlite_store
    from factdebate.run.engine import run_graph
    from factdebate.run.setup import build_context

    names = list(FRAMEWORKS.names())
    async with open_sqlite_saver(db) as saver, open_sqlite_store(db.with_name("mem.sqlite")) as store:
        for name in names:
            ctx = build_context({"debater_model": "scripted:agree", "index_dir": str(index),
                                 "rag_backend": "keyword"}, [], context_class(name))
            item = {"claim": "The Eiffel Tower stands in Paris.",
                    "documents": [{"title": "Eiffel Tower", "text": "It stands in Paris."}]}
            await run_graph(name, item, ctx, checkpointer=saver, thread_id=name, store=store)
    return names


def test_every_framework_writes_only_what_the_strict_reader_reads(tmp_path, monkeypatch):
    """Every checkpoint and write of a real run of each registered framework decodes with the
    strict serializer; if a state starts holding a new object type, this names it (add it to
    ``PROJECT_TYPES`` in core/checkpoint_serde.py)."""
    from servers import tiny_index, warm_home

    from factdebate.core.checkpoint_serde import CheckpointSerializer, final_values

    # MiniLM's cached ONNX graph in the home: the index build does not export it first
    monkeypatch.setenv("FACTDEBATE_HOME", str(warm_home(tmp_path / "home")))
    db = tmp_path / "all.sqlite"
    names = asyncio.run(_every_framework(db, tiny_index(tmp_path)))
    serde = CheckpointSerializer(db)
    with sqlite3.connect(db) as conn:
        threads = {t for (t,) in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
        blobs = conn.execute("SELECT type, checkpoint FROM checkpoints UNION ALL "
                             "SELECT type, value FROM writes").fetchall()
    assert threads == set(names) and len(names) >= 18
    for kind, blob in blobs:
        serde.loads_typed((kind, blob))  # raises UnsupportedDataError naming a foreign type
    for name in names:  # the final state, checked as the reports and the browser read it
        assert final_values(db, name), name


# -- crafted files that are not checkpoints, refused tidily -----------------------
def _whole(kind: str, blob: bytes) -> Callable[[Path], None]:
    """Every checkpoint row of the file replaced by ``blob`` stored as ``kind``."""
    def craft(db: Path) -> None:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE checkpoints SET type = ?, checkpoint = ?", (kind, blob))
    return craft


def _typed(value: object) -> Callable[[Path], None]:
    """Every checkpoint replaced by ``value`` as LangGraph's own serializer writes it."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return _whole(*JsonPlusSerializer().dumps_typed(value))


def _in_turns(value: object) -> Callable[[Path], None]:
    """The state's ``turns`` (what the report and the browser show) replaced by ``value``."""
    def craft(db: Path) -> None:
        with sqlite3.connect(db) as conn:
            for rowid, blob in conn.execute("SELECT rowid, checkpoint FROM checkpoints").fetchall():
                checkpoint = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext,
                                               option=ormsgpack.OPT_NON_STR_KEYS)
                checkpoint["channel_values"]["turns"] = value
                conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?",
                             (ormsgpack.packb(checkpoint, option=ormsgpack.OPT_NON_STR_KEYS), rowid))
    return craft


def _new_file(setup: str | None) -> Callable[[Path], None]:
    """The file replaced by an empty one (``setup`` None) or a database made by ``setup``."""
    def craft(db: Path) -> None:
        for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            path.unlink(missing_ok=True)
        db.write_bytes(b"")
        if setup:
            with sqlite3.connect(db) as conn:
                conn.executescript(setup)
    return craft


def _deep_metadata(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE checkpoints SET metadata = ?", ("[" * 100_000 + "]" * 100_000,))


DEEP = "[" * 100_000 + "]" * 100_000
CRAFTED: dict[str, tuple[Callable[[Path], None], str]] = {
    # name: (how the file is crafted, what the error names)
    "bytes": (_whole("bytes", b"\x00\x01 not a checkpoint"), "a checkpoint that is bytes"),
    "list": (_whole("msgpack", ormsgpack.packb([1, 2])), "a checkpoint that is list"),
    "Decimal": (_typed(decimal.Decimal("1.5")), "a checkpoint that is Decimal"),
    "deque": (_typed(collections.deque([1])), "a checkpoint that is deque"),
    "deep JSON": (_whole("json", DEEP.encode()), "JSON nested too deeply"),
    "deep metadata": (_deep_metadata, "metadata nested too deeply"),
    "LangChain lc object": (_whole("json", json.dumps({
        "lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "HumanMessage"],
        "kwargs": {"content": None}}).encode()), "a value that does not load (ValidationError)"),
    "channel_values a list": (_whole("msgpack", ormsgpack.packb({
        "v": 4, "id": "x", "channel_values": [1], "channel_versions": {}, "versions_seen": {}})),
        "checkpoint channel_values that are list"),
    "turns as bytes": (_in_turns(b"\x00"), "state.turns: bytes"),
    "turns as a Decimal": (_in_turns(ormsgpack.Ext(0, ormsgpack.packb(
        ["decimal", "Decimal", "1.5"]))), "state.turns: Decimal"),
    "turns as a deque": (_in_turns(ormsgpack.Ext(1, ormsgpack.packb(
        ["collections", "deque", [[1]]]))), "state.turns: deque"),
    "turns of numbers": (_in_turns([1, 2]), "state.turns[0]: int, not dict"),
    "turns nested deep": (_in_turns(functools.reduce(lambda a, _: [a], range(100), [])),
                          "nested more than 64 levels deep"),
    "other columns": (_new_file("CREATE TABLE checkpoints (x); CREATE TABLE writes (y);"),
                      "no LangGraph checkpoint"),
}
BROWSER_ONLY: dict[str, tuple[Callable[[Path], None], str]] = {
    # files that are no checkpoint database at all: eval --resume refuses them before opening
    # (test_eval_resume_refuses_a_file_that_is_no_checkpoint_database), the browser on reading
    "empty file": (_new_file(None), "no LangGraph checkpoint"),
    "other tables": (_new_file("CREATE TABLE notes (text);"), "no LangGraph checkpoint"),
}
NOT_A_CHECKPOINT_DB: dict[str, tuple[Callable[[Path], None], str]] = {
    "empty file": (_new_file(None), "an empty file"),
    "other tables": (_new_file("CREATE TABLE notes (text); INSERT INTO notes VALUES ('mine');"),
                     "no LangGraph checkpoints table"),
    "checkpoints table only": (_new_file(
        "CREATE TABLE checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,"
        " type, checkpoint, metadata);"), "no LangGraph writes table"),
    "columns missing": (_new_file("CREATE TABLE checkpoints (thread_id, checkpoint);"
                                  "CREATE TABLE writes (thread_id);"),
                        "a checkpoints table without"),
}


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A finished 2-item ``eval`` run: (data file, run folder, home)."""
    work = tmp_path_factory.mktemp("eval_run")
    data, out, home = work / "mini.jsonl", work / "out", work / "home"
    data.write_text("".join(json.dumps({"id": i, "claim": c, "label": "SUPPORTS"}) + "\n" for i, c in
                            [("a", "Paris is in France."), ("b", "The Moon orbits the Earth.")]))
    done = _cli(_eval_args(data, out), home)
    assert done.returncode == 0, done.stderr[-2000:]
    return data, out, home


@pytest.mark.parametrize("shape", list(CRAFTED))
def test_eval_resume_on_a_crafted_checkpoint_is_one_error_exit_3(eval_run, tmp_path, shape):
    """Every item finished: ``--resume`` writes the reports, which read each item's checkpoint."""
    data, finished, home = eval_run
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    craft, named = CRAFTED[shape]
    craft(out / "checkpoints.sqlite")
    done = _cli([*_eval_args(data, out), "--resume"], home)
    line = " ".join(one_error_line(done).split())
    assert done.returncode == 3, done.stderr[-2000:]
    assert f"unsupported data in {out / 'checkpoints.sqlite'} (" in line and named in line, line


@pytest.mark.parametrize("shape", ["list", "other columns", "deep metadata"])
def test_eval_resume_of_an_unfinished_item_on_a_crafted_checkpoint_keeps_no_error_row(
        eval_run, tmp_path, shape):
    """An unfinished item resumes its thread from the crafted checkpoint: the run stops with the
    one line, and no error row is kept for a later ``--resume`` to trust."""
    data, finished, home = eval_run
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    first = (out / "results.jsonl").read_text().splitlines()[0]
    (out / "results.jsonl").write_text(first + "\n")
    craft, named = CRAFTED[shape]
    craft(out / "checkpoints.sqlite")
    done = _cli([*_eval_args(data, out), "--resume"], home)
    line = " ".join(one_error_line(done).split())
    assert done.returncode == 3 and "unsupported data in" in line and named in line, line
    assert (out / "results.jsonl").read_text() == first + "\n"


@pytest.mark.parametrize("shape", list(NOT_A_CHECKPOINT_DB))
def test_eval_resume_refuses_a_file_that_is_no_checkpoint_database(eval_run, tmp_path, shape):
    """An empty ``checkpoints.sqlite`` or a database of something else is refused
    before anything is written to it (LangGraph's setup would add its tables and the finished
    items would have no transcripts); ``--repair`` sets it aside. Half the shapes with every item
    finished (the reports read each transcript), half with one item to run."""
    finished = list(NOT_A_CHECKPOINT_DB).index(shape) % 2 == 0
    data, sound, home = eval_run
    out = tmp_path / "out"
    shutil.copytree(sound, out)
    rows = (out / "results.jsonl").read_text()
    if not finished:
        rows = rows.splitlines()[0] + "\n"
        (out / "results.jsonl").write_text(rows)
    craft, named = NOT_A_CHECKPOINT_DB[shape]
    db = out / "checkpoints.sqlite"
    craft(db)
    before = db.read_bytes()
    done = _cli([*_eval_args(data, out), "--resume"], home)
    line = " ".join(one_error_line(done).split())
    assert done.returncode == 3, done.stderr[-2000:]
    assert f"unsupported data in {db} (not a checkpoint database: {named}" in line, line
    assert "--resume --repair" in line and "another --out" in line, line
    assert db.read_bytes() == before  # not a byte written: no tables added
    assert not db.with_name(db.name + "-wal").exists()
    assert (out / "results.jsonl").read_text() == rows
    done = _cli([*_eval_args(data, out), "--resume", "--repair"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [p.name for p in out.glob("checkpoints.sqlite.damaged-*")], list(out.iterdir())
    assert len((out / "results.jsonl").read_text().splitlines()) == 2


def test_a_fresh_eval_run_creates_its_checkpoint_database(eval_run, tmp_path):
    data, _, home = eval_run
    out = tmp_path / "new"
    done = _cli(_eval_args(data, out), home)
    assert done.returncode == 0, done.stderr[-2000:]
    from factdebate.core.checkpoint_serde import final_values

    assert final_values(out / "checkpoints.sqlite", next(
        json.loads(r)["thread_id"] for r in (out / "results.jsonl").read_text().splitlines()))


# -- the web page's evaluation browser, on a real server -----------------------------------------
def test_the_evals_browser_reads_a_planted_checkpoint_as_data(tmp_path):
    """``GET /app/api/evals/transcript`` opens ``checkpoints.sqlite`` of a run folder under
    ``FACTDEBATE_RUNS_DIR`` in the server process: a readable 422, and nothing runs there."""
    import httpx
    from servers import start_langgraph_dev, stop_server, tiny_index, warm_home

    key = "alice-key-0123456789"
    runs, home = tmp_path / "runs", warm_home(tmp_path / "home")  # the server exports no graph
    data = tmp_path / "mini.jsonl"
    data.write_text(json.dumps({"id": "a", "claim": "Paris is in France.", "label": "SUPPORTS"})
                    + "\n")
    assert _cli(_eval_args(data, runs / "received"), home).returncode == 0
    shutil.copytree(runs / "received", runs / "sound")  # the same run, never planted
    marker = tmp_path / "marker"
    plant(runs / "received" / "checkpoints.sqlite", PAYLOADS["os.system (one argument)"](marker))
    crafted = {**CRAFTED, **BROWSER_ONLY}
    for n, (craft, _) in enumerate(crafted.values()):
        shutil.copytree(runs / "sound", runs / f"crafted{n}")
        craft(runs / f"crafted{n}" / "checkpoints.sqlite")
    shutil.copytree(runs / "sound", runs / "large")
    plant(runs / "large" / "checkpoints.sqlite", "x" * 3_000_000)  # over the 2 MB cap set below
    with (runs / "sound" / "results.jsonl").open("a") as fh:  # a row of an item not in the run
        row = json.loads((runs / "sound" / "results.jsonl").read_text().splitlines()[0])
        fh.write(json.dumps(dict(row, item_id="mini-stranger")) + "\n")
    proc, url = start_langgraph_dev(tmp_path, {
        "FACTDEBATE_HOME": str(home), "FACTDEBATE_INDEX_DIR": str(tiny_index(tmp_path)),
        "FACTDEBATE_RUNS_DIR": str(runs), "FACTDEBATE_API_KEYS": f"alice:{key}",
        "FACTDEBATE_EVALS_MAX_BYTES": "2000000"})
    try:
        got = httpx.get(f"{url}/app/api/evals/transcript",
                        params={"run": "received", "item": "mini-a"},
                        headers={"x-api-key": key}, timeout=30)
        assert not marker.exists(), "the server ran the planted command"
        assert got.status_code == 422, got.text
        detail = got.json()["detail"]
        assert detail.startswith("unsupported data in received/checkpoints.sqlite (a value naming "
                                 "os.system)"), detail
        assert str(tmp_path) not in detail  # no server path in the message
        got = httpx.get(f"{url}/app/api/evals/transcript", params={"run": "sound", "item": "mini-a"},
                        headers={"x-api-key": key}, timeout=30)
        assert got.status_code == 200 and got.json()["state"]["claim"] == "Paris is in France."
        for n, (shape, (_, named)) in enumerate(crafted.items()):
            got = httpx.get(f"{url}/app/api/evals/transcript",
                            params={"run": f"crafted{n}", "item": "mini-a"},
                            headers={"x-api-key": key}, timeout=30)
            assert got.status_code == 422, (shape, got.status_code, got.text[:300])
            detail = got.json()["detail"]
            assert detail.startswith(f"unsupported data in crafted{n}/checkpoints.sqlite ("), \
                (shape, detail)
            assert named in detail and str(tmp_path) not in detail, (shape, detail)
        got = httpx.get(f"{url}/app/api/evals/transcript", params={"run": "large", "item": "mini-a"},
                        headers={"x-api-key": key}, timeout=30)
        assert got.status_code == 422 and len(got.content) < 2000, got.text[:300]
        assert "more than the 2,000,000 this server serves" in got.json()["detail"]
        assert "FACTDEBATE_EVALS_MAX_BYTES" in got.json()["detail"]
        got = httpx.get(f"{url}/app/api/evals/results", params={"run": "sound"},
                        headers={"x-api-key": key}, timeout=30)
        assert got.status_code == 200, got.text[:300]
        assert [r["item_id"] for r in got.json()["rows"]] == ["mini-a"]
        assert got.json()["strays"] == 1
    finally:
        stop_server(proc)
