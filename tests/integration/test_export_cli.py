"""``factdebate export reviewed | claimreview`` as a user runs them: the installed command on run
folders, a local checkpoint file and a LangGraph server stand-in, built from the review step's
contract (a final state with ``review``)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypedDict

from factdebate.evaluation.claimreview import check_claim_review
from tests.integration.cli_process import one_error_line, run_cli

AT = "2026-11-28T09:30:00+00:00"
EVIDENCE = [{"id": "e1", "title": "Census 2020", "text": "...", "source": "tavily",
             "url": "https://census.example/2020", "score": 1.0}]


def review(decision: str, machine: str = "SUPPORTS", new: str | None = None) -> dict[str, Any]:
    return {"decision": decision, "reviewer": "ana", "at": AT, "note": "read the census",
            "machine_label": machine,
            "changed": {"label": [machine, new] if new else None, "rationale": False,
                        "evidence_ids": None}}


def row(n: int, label: str, rev: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "item_id": f"fever-{n}", "dataset": "fever", "framework": "no_rag", "run_id": "r1",
        "thread_id": f"r1:fever-{n}", "task": "fever", "claim": f"Claim number {n}.",
        "gold": {"label": "SUPPORTS"}, "status": "ok",
        "prediction": {"label": label, "answers": [], "rationale": "the census says so"},
        "evidence": EVIDENCE}
    if rev:
        data["review"] = rev
    return data


def run_folder(tmp_path: Path) -> Path:
    rows = [row(1, "SUPPORTS", review("approve")), row(2, "REFUTES", review("edit", new="REFUTES")),
            row(3, "SUPPORTS", review("reject")), row(4, "SUPPORTS", None)]
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"run_id": "r1", "framework": "no_rag",
                                                 "task": "fever",
                                                 "item_ids": [r["item_id"] for r in rows]}))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_reviewed_dataset_is_evaluated_against_the_reviewers(tmp_path: Path) -> None:
    folder, data = run_folder(tmp_path), tmp_path / "reviewed.jsonl"
    done = run_cli(["export", "reviewed", str(folder), "--out", str(data)], tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "wrote 2 reviewed claim(s) of 4 row(s)" in done.stderr
    assert "2 left out: 1 rejected, 1 unreviewed" in done.stderr
    out = tmp_path / "agreement"
    evaluated = run_cli(["eval", "--framework", "no_rag", "--dataset", str(data),
                         "--model", "scripted:agree", "--out", str(out)], tmp_path / "home")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((r["item_id"], r["gold"]["label"]) for r in rows) == [
        ("fever-1", "SUPPORTS"), ("fever-2", "REFUTES")]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"][0]["n_items"] == 2


def test_claimreview_of_a_run_folder(tmp_path: Path) -> None:
    target = tmp_path / "reviews.jsonld"
    done = run_cli(["export", "claimreview", str(run_folder(tmp_path)), "--org", "Fact Desk",
                    "--url", "https://desk.example/checks/1", "--out", str(target)],
                   tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "wrote 2 ClaimReview(s) of 4 verdict(s)" in done.stderr
    assert "1 rejected, 1 unreviewed" in done.stderr
    reviews = json.loads(target.read_text())
    assert [r["reviewRating"]["alternateName"] for r in reviews] == ["True", "False"]
    assert all(check_claim_review(r) == [] for r in reviews)
    assert reviews[1]["citation"] == ["https://census.example/2020"]


class _State(TypedDict, total=False):
    claim: str
    task: str
    label: str
    rationale: str
    verdict_evidence: list[dict[str, Any]]
    review: dict[str, Any]


def write_thread(db: Path, thread: str, values: dict[str, Any]) -> None:
    """A finished thread in a SQLite checkpoint file, written as the CLI's runs write theirs."""
    from langgraph.graph import END, START, StateGraph

    from factdebate.run.claims import open_sqlite_saver

    graph = StateGraph(_State)
    graph.add_node("review", lambda state: {})
    graph.add_edge(START, "review")
    graph.add_edge("review", END)

    async def write() -> None:
        async with open_sqlite_saver(db) as saver:
            await graph.compile(checkpointer=saver).ainvoke(
                values, {"configurable": {"thread_id": thread}})

    asyncio.run(write())


def test_claimreview_of_a_local_thread(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    write_thread(db, "desk-7", {"claim": "The bridge opened in 1932.", "task": "fever",
                                "label": "REFUTES", "rationale": "it opened in 1934",
                                "verdict_evidence": EVIDENCE,
                                "review": review("edit", new="REFUTES")})
    write_thread(db, "desk-8", {"claim": "Unseen.", "task": "fever", "label": "SUPPORTS"})
    home = tmp_path / "home"
    done = run_cli(["export", "claimreview", "desk-7", "--checkpoint-db", str(db), "--org",
                    "Fact Desk", "--url", "https://desk.example/bridge",
                    "--appearance", "https://news.example/bridge"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    published = json.loads(done.stdout)
    assert published["claimReviewed"] == "The bridge opened in 1932."
    assert published["reviewRating"]["alternateName"] == "False"
    assert published["itemReviewed"]["firstAppearance"]["url"] == "https://news.example/bridge"
    assert check_claim_review(published) == []
    unreviewed = run_cli(["export", "claimreview", "desk-8", "--checkpoint-db", str(db),
                          "--org", "Fact Desk", "--url", "https://desk.example/x"], home)
    assert unreviewed.returncode != 0 and unreviewed.stdout == ""
    assert "no reviewed verdict to publish (1 verdict(s); 1 left out: 1 unreviewed)" \
        in one_error_line(unreviewed)
    missing = run_cli(["export", "claimreview", "desk-9", "--checkpoint-db", str(db),
                       "--org", "Fact Desk", "--url", "https://desk.example/x"], home)
    assert "no thread 'desk-9' in" in one_error_line(missing)


@contextmanager
def langgraph_standin(states: dict[str, dict[str, Any]]) -> Iterator[tuple[str, list[str]]]:
    """A LangGraph server's ``GET /threads/{id}/state``: the thread's values, 404 otherwise;
    records the API key of each request."""
    keys: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            """Quiet."""

        def do_GET(self) -> None:  # noqa: N802
            keys.append(self.headers.get("x-api-key") or "")
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            found = states.get(parts[1]) if len(parts) == 3 and parts[2] == "state" else None
            body = json.dumps({"values": found, "next": [], "tasks": []} if found
                              else {"detail": "Thread not found"}).encode()
            self.send_response(200 if found else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", keys
    finally:
        server.shutdown()
        server.server_close()


def test_claimreview_of_a_server_thread(tmp_path: Path) -> None:
    thread = "6f1c2a8e-0000-4000-8000-000000000001"
    values = {"claim": "Water boils at 90 C at sea level.", "task": "fever", "label": "REFUTES",
              "rationale": "100 C", "verdict_evidence": EVIDENCE,
              "review": review("approve", machine="REFUTES")}
    with langgraph_standin({thread: values}) as (url, keys):
        done = run_cli(["export", "claimreview", thread, "--server", url, "--org", "Fact Desk",
                        "--url", "https://desk.example/water"], tmp_path / "home",
                       env={"FACTDEBATE_API_KEY": "desk-key"})
        gone = run_cli(["export", "claimreview", "6f1c2a8e-0000-4000-8000-000000000002",
                        "--server", url, "--org", "Fact Desk", "--url",
                        "https://desk.example/water"], tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["reviewRating"]["alternateName"] == "False"
    assert keys[0] == "desk-key"
    assert "has no thread '6f1c2a8e-0000-4000-8000-000000000002'" in one_error_line(gone)


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    no_org = run_cli(["export", "claimreview", str(run_folder(tmp_path)), "--url",
                      "https://desk.example/"], home)
    assert "needs --org" in one_error_line(no_org)
    not_run = run_cli(["export", "reviewed", str(tmp_path), "--out", str(tmp_path / "x.jsonl")],
                      home)
    assert "is not a run folder (no run.json)" in one_error_line(not_run)


def test_reviewed_threads_of_a_server_run(tmp_path: Path) -> None:
    """An ``eval --server`` run's rows were written before review; the reviewers' decisions are
    read from its threads on the server."""
    from factdebate.evaluation.executors import server_thread_id

    folder = tmp_path / "run"
    folder.mkdir()
    rows = [row(1, "SUPPORTS", None), row(2, "SUPPORTS", None)]
    (folder / "run.json").write_text(json.dumps({"run_id": "r1", "framework": "no_rag",
                                                 "task": "fever", "server": "http://x",
                                                 "item_ids": ["fever-1", "fever-2"]}))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    states = {server_thread_id("r1:fever-1"): {"claim": "Claim number 1.", "label": "REFUTES",
                                               "rationale": "edited", "task": "fever",
                                               "review": review("edit", new="REFUTES")}}
    data = tmp_path / "reviewed.jsonl"
    with langgraph_standin(states) as (url, keys):
        done = run_cli(["export", "reviewed", str(folder), "--out", str(data), "--server", url],
                       tmp_path / "home", env={"FACTDEBATE_API_KEY": "desk-key"})
        published = run_cli(["export", "claimreview", str(folder), "--server", url, "--org",
                             "Fact Desk", "--url", "https://desk.example/r1"], tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "wrote 1 reviewed claim(s) of 2 row(s)" in done.stderr and "1 unreviewed" in done.stderr
    assert [json.loads(line)["label"] for line in data.read_text().splitlines()] == ["REFUTES"]
    assert set(keys[:2]) == {"desk-key"}
    assert published.returncode == 0, published.stderr[-2000:]
    review_ld = json.loads(published.stdout)
    assert review_ld["reviewRating"]["alternateName"] == "False"
    assert review_ld["reviewRating"]["ratingExplanation"] == "edited"
