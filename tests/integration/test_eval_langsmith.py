"""LangSmith: eval runs carry their metadata to a tracing endpoint; ``--langsmith`` records the
sampled items as a dataset and the run as an experiment.

The endpoint is a real HTTP server on loopback that records every request and keeps datasets,
examples, projects and feedback as the LangSmith API does (``langsmith_capture``). The eval runs
in a subprocess with ``LANGSMITH_TRACING=true`` pointed at it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from factdebate.evaluation.evidence_metrics import item_value
from tests.integration.langsmith_capture import LangSmithState, langsmith_capture, posted_runs
from tests.integration.servers import warm_home

REPO = Path(__file__).resolve().parents[2]
FACTDEBATE = Path(sys.executable).parent / "factdebate"

@pytest.fixture
def capture() -> Iterator[tuple[str, LangSmithState]]:
    with langsmith_capture() as (endpoint, state):
        yield endpoint, state


def eval_process(out: Path, endpoint: str, index: Path, *extra: str, limit: int = 2,
                 dataset: str = "fever") -> subprocess.CompletedProcess[str]:
    # a warm home: the eval does not export MiniLM's ONNX graph first (~1 s)
    env = {**os.environ, "LANGSMITH_ENDPOINT": endpoint, "LANGSMITH_API_KEY": "fake",
           "LANGSMITH_TRACING": "true", "FACTDEBATE_HOME": str(warm_home(out.parent / "home"))}
    return subprocess.run(
        [str(FACTDEBATE), "eval", "--framework", "tool_mad", "--dataset", dataset, "--limit",
         str(limit), "--model", "scripted:agree", "--out", str(out), "--set",
         "rag_backend=keyword", "--set", f"index_dir={index}", "--set",
         "scoring_mode=consistency", *extra],
        capture_output=True, text=True, env=env, timeout=180, cwd=REPO,
    )


def run_eval(out: Path, endpoint: str, index: Path, *extra: str, limit: int = 2,
             dataset: str = "fever") -> list[dict[str, Any]]:
    done = eval_process(out, endpoint, index, *extra, limit=limit, dataset=dataset)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def experiment(record: dict[str, Any], dataset: str = "fever") -> str:
    """The experiment name of an eval run: framework, dataset name, data hash, run suffix."""
    return (f"tool_mad-{dataset}-{record['data_sha256'][:8]}-"
            f"{record['run_id'].rsplit('-', 1)[-1]}")


def test_item_runs_reach_the_endpoint_with_eval_metadata(capture, wiki_index, tmp_path):
    endpoint, state = capture
    captured = state.captured
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
        assert meta["git_sha"] == record["git_sha"]  # as on a server run's trace
        children = [r for r in runs.values() if r.get("trace_id") == row["trace_id"]]
        assert len(children) > 5  # the graph's nodes and model calls are traced under it


def test_langsmith_flag_records_dataset_and_experiment(capture, wiki_index, tmp_path):
    endpoint, state = capture
    # cite=wrong: every reply also cites an id it was never shown (dropped and flagged)
    rows = run_eval(tmp_path / "out", endpoint, wiki_index, "--langsmith",
                    "--model", "scripted:agree?cite=wrong")
    record = json.loads((tmp_path / "out" / "run.json").read_text())
    [dataset] = state.datasets.values()
    assert dataset["name"] == ("factdebate-fever-fever-1.0-paper_dev-"
                               f"{record['data_sha256'][:12]}")
    assert dataset["metadata"]["data_sha256"] == record["data_sha256"]
    examples = state.examples_of(dataset["id"])
    assert sorted(e["metadata"]["item_id"] for e in examples) == sorted(r["item_id"] for r in rows)
    by_item = {e["metadata"]["item_id"]: e for e in examples}
    [project] = state.projects.values()
    assert project["name"] == experiment(record)
    assert project["reference_dataset_id"] == dataset["id"]
    assert project["start_time"] and project["end_time"]  # the experiment was closed
    meta = project["extra"]["metadata"]
    assert meta["framework"] == "tool_mad" and meta["prompt_version"] == record["prompt_version"]
    assert meta["model_debater"] == "scripted:agree?cite=wrong"
    assert meta["git_sha"] == record["git_sha"] and meta["data_sha256"] == record["data_sha256"]
    assert meta["index"] == record["index"] and meta["index"]["passages"]
    runs = state.runs()
    feedback = state.feedback
    scored = 0
    for key in ("correct", "cited_evidence_ids", "citation_flags"):
        assert sorted(f["run_id"] for f in feedback if f["key"] == key) == sorted(
            r["trace_id"] for r in rows), key
    for row in rows:
        root = runs[row["trace_id"]]
        assert root["reference_example_id"] == by_item[row["item_id"]]["id"]
        assert root["session_name"] == experiment(record)
        mine = {f["key"]: f for f in feedback if f["run_id"] == row["trace_id"]}
        assert mine["correct"]["score"] == float(row["prediction"]["label"] == row["gold"]["label"])
        # the passages the verdict cites and the citation flags, per item
        cited = mine["cited_evidence_ids"]
        assert row["evidence"] and cited["score"] == len(row["evidence"])
        assert cited["value"] == ", ".join(e["id"] for e in row["evidence"])
        flags = [f for f in row["flags"] if f.startswith("citation: ")]
        assert flags and mine["citation_flags"]["score"] == len(flags)
        assert "cited unshown" in mine["citation_flags"]["comment"]
        # the evidence metrics the item's gold evidence defines, as the reports compute them
        expected = {k: item_value(k)(row) for k in ("evidence_f1", "fever_score")}
        expected = {k: v for k, v in expected.items() if v is not None}
        assert {k: mine[k]["score"] for k in ("evidence_f1", "fever_score") if k in mine} == expected
        scored += len(expected)
    assert scored >= 2  # at least one item has gold evidence: the metrics were sent


@pytest.mark.slow  # two evaluations against the capture server: the slow tier (CI runs it)
def test_a_larger_run_adds_its_new_items_to_the_dataset(capture, wiki_index, tmp_path):
    """``--limit 2`` then ``--limit 4`` (new runs on one data file): one dataset of 4 examples,
    each run of either experiment linked to an example the dataset holds, both experiments
    closed."""
    endpoint, state = capture
    first = run_eval(tmp_path / "two", endpoint, wiki_index, "--langsmith", limit=2)
    second = run_eval(tmp_path / "four", endpoint, wiki_index, "--langsmith", limit=4)
    assert {r["item_id"] for r in first} < {r["item_id"] for r in second}  # prefix-stable sample
    [dataset] = state.datasets.values()
    examples = state.examples_of(dataset["id"])
    assert sorted(e["metadata"]["item_id"] for e in examples) == sorted(
        r["item_id"] for r in second)
    held = {e["id"] for e in examples}
    runs = state.runs()
    by_name = {p["name"]: p for p in state.projects.values()}
    for rows, out in ((first, "two"), (second, "four")):
        project = by_name[experiment(json.loads((tmp_path / out / "run.json").read_text()))]
        assert project["reference_dataset_id"] == dataset["id"] and project["end_time"]
        for row in rows:
            assert runs[row["trace_id"]]["reference_example_id"] in held, row["item_id"]


def test_a_dataset_file_names_its_experiment_by_its_name_not_its_path(capture, wiki_index,
                                                                      tmp_path):
    endpoint, state = capture
    data = tmp_path / "some folder" / "my_claims.jsonl"
    data.parent.mkdir()
    data.write_text("".join(json.dumps({"id": f"c{i}", "dataset": "mine", "claim": claim,
                                        "label": label}) + "\n"
                            for i, (claim, label) in enumerate([
                                ("Paris is the capital of France.", "SUPPORTS"),
                                ("Mount Everest is in the Alps.", "REFUTES")])))
    run_eval(tmp_path / "out", endpoint, wiki_index, "--langsmith", dataset=str(data))
    record = json.loads((tmp_path / "out" / "run.json").read_text())
    [project] = state.projects.values()
    assert project["name"] == experiment(record, "my_claims")
    assert str(tmp_path.name) not in project["name"] and "jsonl" not in project["name"]


class _Odd(BaseHTTPRequestHandler):
    """An endpoint that answers every request with 200 and a body LangSmith's client cannot read
    (a proxy's maintenance page, another service's JSON)."""

    body = b"<html><body>maintenance</body></html>"

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/html" if self.body.startswith(b"<")
                         else "application/json")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_POST = do_PATCH = do_PUT = _answer  # noqa: N815


@pytest.mark.parametrize("body", [b"<html><body>maintenance</body></html>",
                                  pytest.param(b'{"unexpected": true}', marks=pytest.mark.slow)],
                         ids=["html", "json"])  # ~15-20 s each: the JSON one in the slow tier
def test_an_endpoint_answering_an_unexpected_body_leaves_one_line_and_a_finished_run(
        wiki_index, tmp_path, body):
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Odd", (_Odd,), {"body": body}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = eval_process(tmp_path / "out", f"http://127.0.0.1:{server.server_port}",
                            wiki_index, "--langsmith")
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if "--langsmith" in line]
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("warning: --langsmith: cannot record the experiment at "
                               "http://127.0.0.1:") and "the run goes on without it" in lines[0]
    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text()
            .splitlines()]
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows)
    assert (tmp_path / "out" / "report.md").exists()  # the local run finished its reports
