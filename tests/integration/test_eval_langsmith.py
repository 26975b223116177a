"""LangSmith: eval runs carry their metadata to a tracing endpoint; ``--langsmith`` records the
sampled items as a dataset and the run as an experiment.

The endpoint is a real HTTP server on loopback that records every request and answers like the
LangSmith API as far as the client needs (ids and timestamps echoed back). The eval runs in a
subprocess with ``LANGSMITH_TRACING=true`` pointed at it.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FACTDEBATE = Path(sys.executable).parent / "factdebate"

Request = tuple[str, str, bytes]


class CaptureHandler(BaseHTTPRequestHandler):
    """Records requests in ``server.captured``; POSTs get their JSON body back plus ids."""

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self.server.captured.append(("GET", self.path, b""))  # type: ignore[attr-defined]
        # /info: no batch config (plain ingestion); /datasets?name=: no such dataset yet
        self._reply({"version": "capture"} if self.path.startswith("/info") else [])

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.captured.append(("POST", self.path, body))  # type: ignore[attr-defined]
        obj: Any = json.loads(body) if body[:1] in (b"{", b"[") else {}
        if isinstance(obj, dict):
            now = datetime.datetime.now(datetime.UTC).isoformat()
            obj = {"id": str(uuid.uuid4()), "created_at": now, "modified_at": now,
                   "start_time": now, "tenant_id": str(uuid.uuid4()), **obj}
        self._reply(obj)

    do_PATCH = do_POST


@pytest.fixture
def capture() -> Iterator[tuple[str, list[Request]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CaptureHandler)
    server.captured = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", server.captured  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def posted_runs(captured: list[Request]) -> dict[str, dict[str, Any]]:
    """Run id -> run (with its ``extra``) from multipart or batch ingestion requests."""
    runs: dict[str, dict[str, Any]] = {}
    for method, path, body in captured:
        if method == "POST" and path.startswith("/runs/multipart"):
            boundary = body.split(b"\r\n", 1)[0]
            for part in body.split(boundary):
                head, _, content = part.partition(b"\r\n\r\n")
                if b'name="post.' not in head:
                    continue
                name = head.split(b'name="', 1)[1].split(b'"', 1)[0].decode()
                _, run_id, *field = name.split(".")
                value = json.loads(content.rstrip(b"\r\n-"))
                run = runs.setdefault(run_id, {"id": run_id})
                if field:
                    run[field[0]] = value
                else:
                    run.update(value)
        elif method == "POST" and path.startswith("/runs/batch"):
            for run in json.loads(body).get("post", []):
                runs[run["id"]] = run
    return runs


def run_eval(out: Path, endpoint: str, index: Path, *extra: str) -> list[dict[str, Any]]:
    env = {**os.environ, "LANGSMITH_ENDPOINT": endpoint, "LANGSMITH_API_KEY": "fake",
           "LANGSMITH_TRACING": "true", "FACTDEBATE_HOME": str(out.parent / "home")}
    done = subprocess.run(
        [str(FACTDEBATE), "eval", "--framework", "tool_mad", "--dataset", "fever", "--limit", "2",
         "--model", "scripted:agree", "--out", str(out), "--set", "rag_backend=keyword",
         "--set", f"index_dir={index}", "--set", "scoring_mode=consistency", *extra],
        capture_output=True, text=True, env=env, timeout=180, cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_item_runs_reach_the_endpoint_with_eval_metadata(capture, wiki_index, tmp_path):
    endpoint, captured = capture
    rows = run_eval(tmp_path / "out", endpoint, wiki_index)
    record = json.loads((tmp_path / "out" / "run.json").read_text())
    runs = posted_runs(captured)
    assert ("GET", "/info", b"") in captured
    for row in rows:
        root = runs[row["trace_id"]]  # the row's trace id is the item's root run
        assert root.get("parent_run_id") is None
        meta = root["extra"]["metadata"]
        assert meta["framework"] == "tool_mad" and meta["dataset"] == "fever"
        assert meta["item_id"] == row["item_id"] and meta["prompt_version"] == "tool_mad-3"
        assert meta["eval_run_id"] == record["run_id"]
        children = [r for r in runs.values() if r.get("trace_id") == row["trace_id"]]
        assert len(children) > 5  # the graph's nodes and model calls are traced under it


def test_langsmith_flag_records_dataset_and_experiment(capture, wiki_index, tmp_path):
    endpoint, captured = capture
    # cite=wrong: every reply also cites an id it was never shown (dropped and flagged)
    rows = run_eval(tmp_path / "out", endpoint, wiki_index, "--langsmith",
                    "--model", "scripted:agree?cite=wrong")
    posts = {path.split("?")[0]: body for method, path, body in captured if method == "POST"}
    dataset = json.loads(posts["/datasets"])
    assert dataset["name"] == "factdebate-fever-fever-1.0-paper_dev"
    examples = json.loads(posts["/examples/bulk"])
    assert sorted(e["metadata"]["item_id"] for e in examples) == sorted(r["item_id"] for r in rows)
    by_item = {e["metadata"]["item_id"]: e for e in examples}
    session = json.loads(posts["/sessions"])
    assert session["name"] == rows[0]["run_id"] and session["reference_dataset_id"]
    runs = posted_runs(captured)
    feedback = [json.loads(b) for m, p, b in captured if m == "POST" and p.startswith("/feedback")]
    for key in ("correct", "cited_evidence_ids", "citation_flags"):
        assert sorted(f["run_id"] for f in feedback if f["key"] == key) == sorted(
            r["trace_id"] for r in rows), key
    for row in rows:
        root = runs[row["trace_id"]]
        assert root["reference_example_id"] == by_item[row["item_id"]]["id"]
        assert root["session_name"] == row["run_id"]
        mine = {f["key"]: f for f in feedback if f["run_id"] == row["trace_id"]}
        assert mine["correct"]["score"] == float(row["prediction"]["label"] == row["gold"]["label"])
        # issue #22: the passages the verdict cites and the citation flags, per item
        cited = mine["cited_evidence_ids"]
        assert row["evidence"] and cited["score"] == len(row["evidence"])
        assert cited["value"] == ", ".join(e["id"] for e in row["evidence"])
        flags = [f for f in row["flags"] if f.startswith("citation: ")]
        assert flags and mine["citation_flags"]["score"] == len(flags)
        assert "cited unshown" in mine["citation_flags"]["comment"]
