"""``factdebate data fetch`` against a real loopback mirror (``FACTDEBATE_DATA_MIRROR``): a fetch
lands where ``eval`` reads without ``--data-dir``, a transfer cut mid-body resumes with ``Range``,
a server that ignores ``Range`` restarts the file, a wrong checksum and a 404 are one line each,
a slow drip times out, and a Hugging Face Hub stand-in (``HF_ENDPOINT``) serves the knowledge store
that ``factdebate index NAME`` then imports. Every file served is generated here."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.integration.cli_process import one_error_line, run_cli
from tests.integration.loopback import serve_http

UNSET = ("LANGSMITH_TRACING", "FACTDEBATE_DATA_DIR", "FACTDEBATE_DATA_MIRROR", "HF_HUB_OFFLINE",
         "HF_ENDPOINT", "FACTDEBATE_FETCH_TIMEOUT", "FACTDEBATE_FETCH_RETRIES")
COMMIT = "0123456789abcdef0123456789abcdef01234567"
HOVER = "/raw.githubusercontent.com/hover-nlp/hover/39b84697f196308f398a251a7aea9b82ae0f0562/" \
        "data/hover/hover_dev_release_v1.1.json"
FEVER = "/fever.ai/download/fever/paper_dev.jsonl"
MEDQA = "/raw.githubusercontent.com/xk-huang/medagents-benchmark/" \
        "56ca11eb1ef89f6bb7fad6284008bf39e08785b0/data/medqa/test.jsonl"
PUBMEDQA = "/raw.githubusercontent.com/pubmedqa/pubmedqa/1cbae8e92f72f20c8d3747cbb3bf5bc53554d997/" \
           "data/ori_pqal.json"
HOTPOT = "/nlp.stanford.edu/projects/hotpotqa/" \
         "enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2"
HUB_FILE = "/chenxwh/AVeriTeC/resolve/main/data_store/knowledge_store/dev_knowledge_store.zip"


class Mirror(BaseHTTPRequestHandler):
    """Serves ``files`` by path; ``modes[path]``: ``range`` (default), ``cut`` (the first answer
    stops half-way), ``norange`` (ignores Range, first answer cut), ``drip`` (a byte at a time)."""

    files: dict[str, bytes] = {}
    modes: dict[str, str] = {}
    seen: dict[str, list[str | None]] = {}

    def log_message(self, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        path = unquote(self.path.split("?")[0])
        data, mode = self.files.get(path), self.modes.get(path, "range")
        if body:
            self.seen.setdefault(path, []).append(self.headers.get("Range"))
        if data is None:
            self.send_error(404)
            return
        start = 0
        if self.headers.get("Range") and mode != "norange":
            start = int(self.headers["Range"].split("=")[1].split("-")[0])
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("X-Repo-Commit", COMMIT)
        self.end_headers()
        if not body:
            return
        rest = data[start:]
        if mode in ("cut", "norange") and len(self.seen[path]) == 1:
            self.wfile.write(rest[:len(rest) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if mode == "drip":
            try:
                for i in range(len(rest)):
                    self.wfile.write(rest[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
            return
        self.wfile.write(rest)


@pytest.fixture
def mirror() -> Iterator[type[Mirror]]:
    """A fresh mirror per test; the handler class carries its files, modes and requests seen."""
    handler = type("TestMirror", (Mirror,), {"files": {}, "modes": {}, "seen": {}})
    with serve_http(handler) as host:
        handler.url = f"http://{host}"  # type: ignore[attr-defined]
        yield handler


def fetch(args: list[str], home: Path, mirror: type[Mirror], **env: str):
    return run_cli(["data", "fetch", *args], home, unset=UNSET, timeout=120,
                   env={"FACTDEBATE_DATA_MIRROR": mirror.url, "FACTDEBATE_FETCH_RETRIES": "2",
                        **env})


def hover_release() -> bytes:
    claims = [("SUPPORTED", "Alpha Town lies on the Beta River."),
              ("NOT_SUPPORTED", "Gamma Hill is taller than Delta Peak."),
              ("SUPPORTED", "The Epsilon Bridge opened in 1901."),
              ("NOT_SUPPORTED", "Zeta Lake freezes every July.")]
    records = [{"uid": f"u{i}", "claim": text, "label": label, "num_hops": 2, "hpqa_id": f"h{i}",
                "supporting_facts": [[f"Page {i}", 0], [f"Other {i}", 1]]}
               for i, (label, text) in enumerate(claims)]
    return json.dumps(records).encode()


def test_fetch_lands_where_eval_reads_and_run_json_names_it(tmp_path, mirror):
    mirror.files[HOVER] = hover_release()
    home = tmp_path / "home"
    done = fetch(["hover"], home, mirror)
    assert done.returncode == 0, done.stderr[-2000:]
    data = home / "data"
    official = data / "hover/official/hover_dev_release_v1.1.json"
    assert official.read_bytes() == mirror.files[HOVER]
    record = json.loads((data / "fetched.json").read_text())["files"]
    assert record["hover/official/hover_dev_release_v1.1.json"]["sha256"] == \
        hashlib.sha256(mirror.files[HOVER]).hexdigest()
    assert record["hover/dev.jsonl"]["converted_from"] == "hover/official/hover_dev_release_v1.1.json"
    assert len((data / "hover/dev.jsonl").read_text().splitlines()) == 4

    out = tmp_path / "run"
    done = run_cli(["eval", "--framework", "standard", "--dataset", "hover", "--model",
                    "scripted:disagree", "--limit", "2", "--out", str(out)], home, unset=UNSET)
    assert done.returncode == 0, done.stderr[-2000:]
    run = json.loads((out / "run.json").read_text())
    assert run["data_file"] == str((data / "hover/dev.jsonl").resolve())
    [entry] = run["data_files"]
    assert entry["sha256"] == record["hover/dev.jsonl"]["sha256"] == run["data_sha256"]
    assert entry["fetched_from"] == f"{mirror.url}{HOVER}"
    assert entry["converted_from"] == "hover/official/hover_dev_release_v1.1.json"

    (data / "hover/dev.jsonl").unlink()  # the converted file lost: written again, no download
    again = fetch(["hover"], home, mirror)
    assert again.returncode == 0 and "already fetched" in again.stderr
    assert len(mirror.seen[HOVER]) == 1 and (data / "hover/dev.jsonl").is_file()

    listed = run_cli(["data", "list", "--json"], home, unset=UNSET)
    entries = {e["name"]: e for e in json.loads(listed.stdout)}
    assert entries["hover"]["fetched"] and not entries["fever"]["fetched"]
    assert entries["hover-wiki"]["urls"] == [f"https:/{HOTPOT}"]


def test_a_transfer_cut_mid_body_resumes_with_range(tmp_path, mirror):
    body = b"".join(json.dumps({"id": i, "label": "SUPPORTS", "claim": f"claim {i}",
                                "verifiable": "VERIFIABLE", "evidence": [[[1, 2, f"P{i}", 0]]]}
                               ).encode() + b"\n" for i in range(3000))
    mirror.files[FEVER], mirror.modes[FEVER] = body, "cut"
    done = fetch(["fever"], tmp_path / "home", mirror)
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = mirror.seen[FEVER]
    resumed_at = int(second.removeprefix("bytes=").rstrip("-"))
    assert first is None and 0 < resumed_at <= len(body) // 2  # what arrived before the cut
    target = tmp_path / "home/data/fever/paper_dev.jsonl"
    assert hashlib.sha256(target.read_bytes()).hexdigest() == hashlib.sha256(body).hexdigest()
    assert not target.with_name("paper_dev.jsonl.part").exists()


def test_a_server_that_ignores_range_restarts_the_file(tmp_path, mirror):
    body = b"".join(json.dumps({"question": f"q{i}?", "options": {"A": "a", "B": "b"},
                                "answer_idx": "A", "answer": "a"}).encode() + b"\n"
                    for i in range(2000))
    mirror.files[MEDQA], mirror.modes[MEDQA] = body, "norange"
    done = fetch(["medqa"], tmp_path / "home", mirror)
    assert done.returncode == 0, done.stderr[-2000:]
    assert mirror.seen[MEDQA][1] is not None  # it asked for the rest, got the whole file
    official = tmp_path / "home/data/medqa/official/test.jsonl"
    assert official.read_bytes() == body
    first = json.loads((tmp_path / "home/data/medqa/test.jsonl").read_text().splitlines()[0])
    assert first["_key"] == "0" and first["answer_idx"] == "A"


def test_a_wrong_checksum_is_refused_and_nothing_is_kept(tmp_path, mirror):
    mirror.files[HOTPOT] = b"not the HotpotQA abstracts" * 100
    done = fetch(["hover-wiki"], tmp_path / "home", mirror)
    line = one_error_line(done)
    assert done.returncode != 0
    assert "md5" in line and "01edf64cd120ecc03a2745352779514c" in line and HOTPOT in line
    folder = tmp_path / "home/data/sources/hover-wiki"
    assert list(folder.iterdir()) == []
    assert not (tmp_path / "home/data/fetched.json").exists()


def test_a_404_is_one_line_naming_the_url(tmp_path, mirror):
    done = fetch(["ramdocs"], tmp_path / "home", mirror)
    line = one_error_line(done)
    assert done.returncode != 0 and "404" in line
    assert f"{mirror.url}/raw.githubusercontent.com/taaha/RAMDocs/" in line
    assert not list((tmp_path / "home/data/ramdocs/official").iterdir())


def test_a_slow_drip_times_out(tmp_path, mirror):
    mirror.files[PUBMEDQA], mirror.modes[PUBMEDQA] = b"{}" * 5000, "drip"
    began = time.monotonic()
    done = fetch(["pubmedqa"], tmp_path / "home", mirror, FACTDEBATE_FETCH_TIMEOUT="1",
                 FACTDEBATE_FETCH_RETRIES="0")
    line = one_error_line(done)
    assert done.returncode != 0 and "stalled" in line and "pubmedqa" in line
    assert time.monotonic() - began < 30
    assert (tmp_path / "home/data/pubmedqa/official/ori_pqal.json.part").exists()  # to resume


def knowledge_store() -> bytes:
    rows = [{"claim_id": 0, "type": "search", "query": "q", "url": f"https://example.org/{n}",
             "url2text": [f"Example page {n} says the bridge opened in 190{n}.", "More text."]}
            for n in range(3)]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("output_dev/0.json", "".join(json.dumps(r) + "\n" for r in rows))
    return buffer.getvalue()


def test_the_hub_stand_in_serves_the_store_and_index_imports_it_by_name(tmp_path, mirror):
    home = tmp_path / "home"
    missing = run_cli(["index", "averitec-store", "--keyword-only"], home, unset=UNSET)
    assert "factdebate data fetch averitec-store" in one_error_line(missing)

    mirror.files[HUB_FILE] = knowledge_store()
    done = run_cli(["data", "fetch", "averitec-store"], home, unset=UNSET, timeout=120,
                   env={"HF_ENDPOINT": mirror.url})
    assert done.returncode == 0, done.stderr[-2000:]
    assert mirror.seen[HUB_FILE]  # came through huggingface_hub from the stand-in
    data = home / "data"
    assert zipfile.is_zipfile(data / "sources/averitec-store/dev_knowledge_store.zip")
    record = json.loads((data / "fetched.json").read_text())["files"]
    assert record["sources/averitec-store/dev_knowledge_store.zip"]["sha256"] == \
        hashlib.sha256(mirror.files[HUB_FILE]).hexdigest()

    built = run_cli(["index", "averitec-store", "--keyword-only"], home, unset=UNSET)
    assert built.returncode == 0, built.stderr[-2000:]
    assert "indexed 3 passages" in built.stdout
    assert str(home / "indexes" / "averitec-store") in built.stdout


FEVEROUS_DB = "/fever.ai/download/feverous/feverous-wiki-pages-db.zip"


def test_the_feverous_zip_is_unpacked_once_and_indexed_by_name(tmp_path, mirror):
    from tests.fixtures.sources.make import feverous_zip

    mirror.files[FEVEROUS_DB] = feverous_zip(tmp_path / "made").read_bytes()
    home = tmp_path / "home"
    done = fetch(["feverous-db"], home, mirror)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list((home / "data/sources/feverous-db/unpacked").rglob("*.db"))
    built = run_cli(["index", "feverous-db", "--keyword-only"], home, unset=UNSET)
    assert built.returncode == 0, built.stderr[-2000:]
    assert f"into {home / 'indexes' / 'feverous-db'}" in built.stdout
