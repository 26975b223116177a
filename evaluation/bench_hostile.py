"""``bench hostile``: every class of hostile outside input replayed against the installed CLI.

Each case writes its input (a zip holding one 1 GiB line, a FEVEROUS database with a 300 MB cell,
a JSONL corpus with a 300 MB line, JSON nested 100,000 deep, a provider that answers NaN vectors
or 300 MB, a wiki that answers a 300 MB extract, a gzip bomb or a redirect to another port) and
runs one ``factdebate`` command on it as a child process on a fresh ``FACTDEBATE_HOME``. Measured
per case: the child's peak RSS (``wait4``), wall time, exit code and the output line that matters;
each is judged against the case's expectation and the limits of ``core/input_limits`` (peak RSS
under :data:`RSS_BUDGET_MB` for every case, the documented exit code and message). The stand-in
servers run in this process on loopback. Nothing here needs the network.

``python -m factdebate.evaluation.bench_hostile --out DIR [--case NAME ...] [--markdown FILE]``;
the exit code is 1 when a case misses its expectation.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

RSS_BUDGET_MB = 500
"""Peak resident memory every case's command stays under."""
BIG = 300 << 20
"""The size of a hostile record, cell or reply (the line in the zip case is 1 GiB)."""
FACTDEBATE = Path(sys.executable).parent / "factdebate"


@dataclass
class Case:
    """One hostile input and what must happen."""

    name: str
    what: str
    exit_code: int
    expect: str
    """A text the command's output (stdout + stderr) must hold."""
    prepare: Callable[[Path, ExitStack], tuple[list[str], dict[str, str]]]
    """Writes the input under the folder, starts its servers; returns (args, environment)."""
    after: Callable[[], str] | None = None
    """A further check once the command ended ('' = fine, else what went wrong)."""
    warm: bool = False
    """Runs on a home whose demo index is built already (building it is not the case's cost)."""


@dataclass
class Result:
    """One case as measured."""

    name: str
    what: str
    exit_code: int
    expected_exit: int
    peak_rss_mb: float
    seconds: float
    line: str
    met: bool
    why: list[str] = field(default_factory=list)


# --- stand-in servers -------------------------------------------------------------------------
@contextmanager
def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    """A stand-in's handler base: no request log; :meth:`reply` sends a whole body with its
    length, :meth:`stream` a large one a MiB at a time; a client that stops reading (at its
    limit) ends the write quietly. The tests' loopback stand-ins use it too."""

    def log_message(self, *args: Any) -> None:
        """Silent."""

    def reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        """``status`` with ``headers`` and ``body`` (``Content-Length`` set)."""
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def stream(self, head: bytes, size: int, tail: bytes, *, length: bool = True,
               content_type: str = "application/json") -> None:
        """200 with ``head``, ``size`` bytes of ``a`` (whole MiBs) and ``tail``; ``length``:
        announce the total in ``Content-Length`` (else the body ends with the connection)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if length:
            self.send_header("Content-Length", str(len(head) + size + len(tail)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(head)
            chunk = b"a" * (1 << 20)
            for _ in range(size >> 20):
                self.wfile.write(chunk)
            self.wfile.write(tail)


def _gzip_of_spaces(size: int) -> bytes:
    """A gzip stream of ``size`` spaces, made a MiB at a time (about a thousandth of the size)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * (1 << 20)
    parts = [packer.compress(chunk) for _ in range(size >> 20)]
    return b"".join([*parts, packer.flush()])


def _wiki(mode: str, elsewhere: str = "") -> type[BaseHTTPRequestHandler]:
    """A MediaWiki Action API stand-in whose page fetch is hostile (``mode``)."""
    bomb = _gzip_of_spaces(1 << 30) if mode == "bomb" else b""

    class Wiki(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            params = {k: v[-1] for k, v in parse_qs(urlparse(self.path).query).items()}
            if params.get("list") == "search":
                body = {"batchcomplete": True, "query": {"search": [{"title": "Hostile page"}]}}
                return self.reply(200, json.dumps(body).encode(),
                                   {"Content-Type": "application/json"})
            if mode == "extract":
                head = b'{"query": {"pages": [{"title": "Hostile page", "extract": "'
                return self.stream(head, BIG, b'"}]}}')
            if mode == "bomb":
                return self.reply(200, bomb, {"Content-Type": "application/json",
                                               "Content-Encoding": "gzip"})
            return self.reply(302, b"", {"Location": f"{elsewhere}/w/api.php?{urlparse(self.path).query}"})

    return Wiki


class _Counting(QuietHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        _Counting.hits.append(self.path)
        self.reply(200, b"{}")


def _provider(mode: str) -> type[BaseHTTPRequestHandler]:
    """An OpenAI-compatible stand-in: NaN embeddings, or a 300 MB chat completion."""

    class Provider(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path.endswith("/embeddings"):
                inputs = body.get("input") or []
                data = [{"object": "embedding", "index": i, "embedding": [float("nan")] * 8}
                        for i in range(len(inputs))]
                reply = {"object": "list", "model": "e", "data": data,
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}}
                return self.reply(200, json.dumps(reply).encode(),
                                   {"Content-Type": "application/json"})
            return self.stream(b'{"id": "c", "object": "chat.completion", "pad": "', BIG, b'"}')

    return Provider


# --- the cases ----------------------------------------------------------------------------------
DEEP = "[" * 100_000 + "]" * 100_000


def _zip_1gib_line(folder: Path, _: ExitStack) -> tuple[list[str], dict[str, str]]:
    path = folder / "wiki-pages.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf, \
            zf.open("wiki-pages/wiki-001.jsonl", "w", force_zip64=True) as f:
        f.write(json.dumps({"id": "Good", "text": "", "lines": "0\tA good page .\n1\t"}).encode()
                + b"\n" + b'{"id": "Huge", "text": "", "lines": "0\\t')
        chunk = b"a" * (1 << 20)
        for _ in range(1024):
            f.write(chunk)
        f.write(b'"}\n' + json.dumps({"id": "After", "lines": "0\tAfter it .\n1\t"}).encode()
                + b"\n")
    return ["index", str(path), "--format", "fever-wiki", "--keyword-only",
            "--index-dir", str(folder / "index")], {}


def _feverous_cell(folder: Path, _: ExitStack) -> tuple[list[str], dict[str, str]]:
    path = folder / "feverous_wikiv1.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE wiki (id TEXT, data TEXT)")
        good = {"title": "Good", "order": ["sentence_0"], "sentence_0": "A good page."}
        db.execute("INSERT INTO wiki VALUES (?, ?)", ("Good", json.dumps(good)))
        db.execute("INSERT INTO wiki VALUES ('Huge', '{\"title\": \"Huge\", \"order\": "
                   "[\"sentence_0\"], \"sentence_0\": \"' || replace(hex(zeroblob(?)), '00', 'a') "
                   "|| '\"}')", (BIG,))
        db.execute("INSERT INTO wiki VALUES (?, ?)", ("After", json.dumps({**good, "title": "After"})))
    db.close()
    return ["index", str(path), "--format", "feverous-db", "--keyword-only",
            "--index-dir", str(folder / "index")], {}


def _corpus_line(folder: Path, _: ExitStack) -> tuple[list[str], dict[str, str]]:
    path = folder / "corpus.jsonl"
    with path.open("wb") as f:
        f.write(json.dumps({"doc_id": "a", "title": "A", "text": "a"}).encode() + b"\n")
        f.write(b'{"doc_id": "b", "title": "B", "text": "')
        chunk = b"b" * (1 << 20)
        for _ in range(BIG >> 20):
            f.write(chunk)
        f.write(b'"}\n')
    return ["index", str(path), "--index-dir", str(folder / "index")], {}


def _deep_dataset(folder: Path, _: ExitStack) -> tuple[list[str], dict[str, str]]:
    path = folder / "claims.jsonl"
    path.write_text(json.dumps({"id": "c1", "claim": "x", "label": "SUPPORTS"}) + "\n" + DEEP + "\n")
    return ["eval", "--framework", "tool_mad", "--dataset", str(path), "--model", "scripted:agree",
            "--demo-index", "--out", str(folder / "run")], {}


def _deep_dump(folder: Path, _: ExitStack) -> tuple[list[str], dict[str, str]]:
    (folder / "wiki-pages").mkdir()
    (folder / "wiki-pages" / "wiki-001.jsonl").write_text(DEEP + "\n")
    return ["index", str(folder / "wiki-pages"), "--format", "fever-wiki", "--keyword-only",
            "--index-dir", str(folder / "index")], {}


def _nan_vectors(folder: Path, stack: ExitStack) -> tuple[list[str], dict[str, str]]:
    url = stack.enter_context(_serve(_provider("nan")))
    path = folder / "corpus.jsonl"
    path.write_text("".join(json.dumps({"doc_id": f"d{i}", "title": f"T{i}", "text": f"text {i}"})
                            + "\n" for i in range(4)))
    return ["index", str(path), "--index-dir", str(folder / "index"), "--embedding-model",
            "openai:e"], {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-bench-not-a-key"}


def _provider_reply(folder: Path, stack: ExitStack) -> tuple[list[str], dict[str, str]]:
    url = stack.enter_context(_serve(_provider("huge")))
    return ["verify", "The Eiffel Tower is in Paris.", "--model", "openai:m", "--base-url",
            f"{url}/v1", "--rag-backend", "keyword", "--search-backend", "local_search",
            "--scoring", "none"], {"OPENAI_API_KEY": "sk-bench-not-a-key"}


def _live_wiki(mode: str) -> Callable[[Path, ExitStack], tuple[list[str], dict[str, str]]]:
    def prepare(folder: Path, stack: ExitStack) -> tuple[list[str], dict[str, str]]:
        elsewhere = ""
        if mode == "redirect":
            _Counting.hits = []
            elsewhere = stack.enter_context(_serve(_Counting))
        url = stack.enter_context(_serve(_wiki(mode, elsewhere)))
        return ["verify", "The hostile page is hostile.", "--model", "scripted:agree",
                "--wikipedia", "--scoring", "none", "--rounds", "1"], {
                    "FACTDEBATE_MEDIAWIKI_URL": f"{url}/w/api.php",
                    "FACTDEBATE_WIKIPEDIA_CACHE_TTL_S": "0", "FACTDEBATE_MEDIAWIKI_RATE": "0"}

    return prepare


def _nothing_elsewhere() -> str:
    return "" if not _Counting.hits else f"the other listener received {len(_Counting.hits)} requests"


CASES = [
    Case("dump-1gib-line", "a 1 MB zip of FEVER wiki-pages holding one 1 GiB line", 0,
         "skipped 1 pages", _zip_1gib_line),
    Case("feverous-300mb-cell", "a FEVEROUS database with one 300 MB data cell", 0,
         "skipped 1 pages", _feverous_cell),
    Case("corpus-300mb-line", "a JSONL corpus with one 300 MB line", 2,
         "over the limit", _corpus_line),
    Case("dataset-deep-json", "an eval dataset line nested 100,000 deep", 2,
         "nested deeper", _deep_dataset, warm=True),
    Case("dump-deep-json", "a dump whose first line is nested 100,000 deep", 2,
         "nested deeper", _deep_dump),
    Case("nan-vectors", "an embedding provider answering NaN vectors", 2,
         "NaN or infinite", _nan_vectors),
    Case("provider-300mb-reply", "a model server answering a 300 MB completion", 3,
         "reply was too large", _provider_reply, warm=True),
    Case("wiki-300mb-extract", "live Wikipedia answering a 300 MB extract", 0,
         "ReplyTooLarge", _live_wiki("extract")),
    Case("wiki-gzip-bomb", "live Wikipedia answering a gzip bomb (1 GiB of spaces in ~1 MB)", 0,
         "ReplyTooLarge", _live_wiki("bomb")),
    Case("wiki-redirect-elsewhere", "live Wikipedia redirecting to a listener on another port", 0,
         "RedirectRefused", _live_wiki("redirect"), _nothing_elsewhere),
]


# --- running --------------------------------------------------------------------------------------
_MEASURE = """
import json, resource, subprocess, sys
code = subprocess.run(sys.argv[2:], check=False).returncode
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    json.dump({"exit": code, "maxrss_kb": usage.ru_maxrss}, f)
"""
"""A small wrapper process that runs the command and records its peak RSS: the child of a fork
starts with its parent's memory counted, and this bench's own process may be large, the
wrapper's is not."""

WARM_UP = ["verify", "The Eiffel Tower is in Paris.", "--model", "scripted:agree", "--rag-backend",
           "keyword", "--search-backend", "local_search", "--scoring", "none"]
"""Builds the demo index into the warm home (not measured)."""


def warm_home(root: Path) -> Path:
    """A ``FACTDEBATE_HOME`` with the demo index built (once per ``root``)."""
    home = root / "warm-home"
    if not (home / "index" / "manifest.json").is_file():
        env = {**os.environ, "FACTDEBATE_HOME": str(home)}
        subprocess.run([str(FACTDEBATE), *WARM_UP], env=env, capture_output=True, check=True)
    return home


def run_case(case: Case, root: Path) -> Result:
    """Prepare ``case`` under ``root``, run its command, measure and judge it."""
    folder = root / case.name
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        args, env = case.prepare(folder, stack)
        full = {k: v for k, v in os.environ.items()
                if k not in ("LANGSMITH_TRACING", "FACTDEBATE_DATA_DIR", "FACTDEBATE_INDEX_DIR")}
        home = warm_home(root) if case.warm else folder / "home"
        full.update({"FACTDEBATE_HOME": str(home), **env})
        started = time.perf_counter()
        with open(folder / "output.txt", "wb") as out:
            done = subprocess.run([sys.executable, "-c", _MEASURE, str(folder / "rusage.json"),
                                   str(FACTDEBATE), *args], stdout=out, stderr=subprocess.STDOUT,
                                  env=full, check=False)
        seconds = time.perf_counter() - started
        extra = case.after() if case.after else ""
    measured = json.loads((folder / "rusage.json").read_text())
    returncode, rss = measured["exit"], measured["maxrss_kb"] / 1024
    del done
    for leftover in folder.iterdir():  # the hostile inputs are large: keep only what was said
        if leftover.name not in ("output.txt", "rusage.json"):
            shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    text = (folder / "output.txt").read_text(errors="replace")
    why = []
    if returncode != case.exit_code:
        why.append(f"exit {returncode}, expected {case.exit_code}")
    if case.expect.lower() not in text.lower():
        why.append(f"output lacks {case.expect!r}")
    if rss >= RSS_BUDGET_MB:
        why.append(f"peak RSS {rss:.0f} MB >= {RSS_BUDGET_MB} MB")
    if "Traceback" in text:
        why.append("a traceback in the output")
    if extra:
        why.append(extra)
    line = next((ln for ln in text.splitlines() if case.expect.lower() in ln.lower()),
                text.strip().splitlines()[-1] if text.strip() else "")
    return Result(case.name, case.what, returncode, case.exit_code, round(rss, 1),
                  round(seconds, 2), line[:300], not why, why)


def markdown(results: list[Result]) -> str:
    """The results as a table for BENCHMARKS.md."""
    rows = ["| case | input | exit (expected) | peak RSS MB | seconds | met | line |",
            "|---|---|---|---|---|---|---|"]
    for r in results:
        line = r.line.replace("|", "\\|")
        rows.append(f"| {r.name} | {r.what} | {r.exit_code} ({r.expected_exit}) | "
                    f"{r.peak_rss_mb} | {r.seconds} | {'yes' if r.met else 'NO: ' + '; '.join(r.why)} "
                    f"| {line} |")
    return "\n".join(rows) + "\n"


def run_hostile(out: Path, names: list[str] | None = None) -> dict[str, Any]:
    """Run the cases ``names`` (all when None) under ``out``; the record with one budget per case
    (``evaluation/bench_budgets``: met when the case's exit code, message and RSS are as
    documented)."""
    from factdebate.evaluation.bench_budgets import budget

    unknown = set(names or []) - {c.name for c in CASES}
    if unknown:
        from factdebate.core.errors import InputError

        raise InputError(f"unknown hostile case(s): {', '.join(sorted(unknown))}",
                         f"use: {', '.join(c.name for c in CASES)}")
    results = []
    for case in [c for c in CASES if not names or c.name in names]:
        result = run_case(case, out / "cases")
        results.append(result)
        print(f"{case.name}: exit {result.exit_code}, peak RSS {result.peak_rss_mb} MB, "
              f"{result.seconds} s, {'met' if result.met else 'MISSED: ' + '; '.join(result.why)}",
              file=sys.stderr, flush=True)
    budgets = [budget(r.name, f"{r.what}: exit {r.expected_exit}, the documented message, peak "
                      f"RSS under {RSS_BUDGET_MB} MB", f"exit {r.exit_code}, {r.peak_rss_mb} MB",
                      met=r.met) for r in results]
    return {"budget": f"every hostile input ends as documented (exit code, message) with peak RSS "
                      f"under {RSS_BUDGET_MB} MB", "budget_met": all(r.met for r in results),
            "rss_budget_mb": RSS_BUDGET_MB, "cases": [asdict(r) for r in results],
            "table": markdown(results), "budgets": budgets, "commit": _commit()}


def main(argv: list[str] | None = None) -> int:
    """Run the cases; write ``hostile.json`` (and the table); 1 when a case missed."""
    parser = argparse.ArgumentParser(prog="bench_hostile", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--case", action="append", default=[],
                        help=f"only these cases ({', '.join(c.name for c in CASES)})")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    out.mkdir(parents=True, exist_ok=True)
    record = run_hostile(out, args.case or None)
    (out / "hostile.json").write_text(json.dumps(record, indent=2))
    if args.markdown:
        args.markdown.write_text(record["table"])
    print(record["table"])
    return 0 if all(c["met"] for c in record["cases"]) else 1


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[1], check=False).stdout.strip()
    except OSError:
        return ""


if __name__ == "__main__":
    sys.exit(main())
