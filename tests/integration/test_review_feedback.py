"""A reviewer's decision reaches LangSmith as feedback on the run it resumed
(``tools/review_feedback.py``), against a loopback stand-in of the LangSmith API; a LangSmith that
answers 500 or does not answer costs a note, never the run."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypedDict

import pytest

from factdebate.tools import review_feedback
from factdebate.tools.review_feedback import feedback_fields, log_review_feedback
from tests.integration.langsmith_capture import langsmith_capture

APPROVE = {"decision": "approve", "reviewer": "ana", "at": "2026-11-28T12:00:00+00:00",
           "note": "checked the source", "machine_label": "SUPPORTS",
           "changed": {"label": None, "rationale": False, "evidence_ids": None}}
EDIT = {**APPROVE, "decision": "edit", "note": "the census says otherwise",
        "changed": {"label": ["SUPPORTS", "REFUTES"], "rationale": True, "evidence_ids": None}}
REJECT = {**APPROVE, "decision": "reject", "note": "claim is not checkable"}


@pytest.fixture(autouse=True)
def _fresh_env_cache() -> Iterator[None]:
    """langsmith caches the environment it reads; each test sets its own."""
    from langsmith import utils

    utils.get_env_var.cache_clear()
    utils.get_tracer_project.cache_clear()
    yield
    utils.get_env_var.cache_clear()
    utils.get_tracer_project.cache_clear()


@pytest.fixture
def tracing(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with langsmith_capture() as (url, state):
        monkeypatch.setenv("LANGSMITH_TRACING", "true")
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
        monkeypatch.setenv("LANGSMITH_API_KEY", "ls-test-key")
        yield state


@contextmanager
def failing_langsmith(status: int) -> Iterator[tuple[str, list[str]]]:
    """A LangSmith stand-in answering every feedback request with ``status``."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            """Quiet."""

        def _answer(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            self._answer(200, b"[]" if self.path.startswith("/sessions")
                         else b'{"version": "capture"}')

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length") or 0))
            hits.append(self.path)
            self._answer(status, b'{"detail": "internal error"}')

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", hits
    finally:
        server.shutdown()
        server.server_close()


def test_fields_of_each_decision() -> None:
    approve, edit, reject = map(feedback_fields, (APPROVE, EDIT, REJECT))
    assert (approve["value"], approve["score"], "correction" in approve) == ("SUPPORTS", 1, False)
    assert (edit["value"], edit["score"], edit["correction"]) == ("REFUTES", 0, {"label": "REFUTES"})
    assert (reject["value"], reject["score"], "correction" in reject) == ("rejected", 0, False)
    assert edit["comment"] == "the census says otherwise"
    assert edit["source_info"]["reviewer"] == "ana" and edit["extra"]["decision"] == "edit"


def test_edit_of_rationale_only_keeps_agreement() -> None:
    fields = feedback_fields({**EDIT, "changed": {"label": None, "rationale": True,
                                                  "evidence_ids": None}, "label": "SUPPORTS"})
    assert (fields["value"], fields["score"], "correction" in fields) == ("SUPPORTS", 1, False)


def test_each_decision_is_posted_as_feedback(tracing: Any) -> None:
    runs = [uuid.uuid4() for _ in range(3)]
    for run, review in zip(runs, (APPROVE, EDIT, REJECT), strict=True):
        assert log_review_feedback(run, review) == []
    posted = {f["run_id"]: f for f in tracing.feedback}
    assert [posted[str(r)]["value"] for r in runs] == ["SUPPORTS", "REFUTES", "rejected"]
    edit = posted[str(runs[1])]
    assert edit["key"] == "review" and edit["score"] == 0
    assert edit["comment"] == "the census says otherwise"
    assert edit["correction"] == {"label": "REFUTES"}
    assert edit["feedback_source"]["metadata"]["reviewer"] == "ana"
    assert edit["feedback_source"]["metadata"]["decision"] == "edit"
    assert edit["extra"]["changed"]["label"] == ["SUPPORTS", "REFUTES"]


def test_the_feedback_names_the_runs_project(tracing: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """LangSmith asks for the project (session) id with each feedback: looked up by name."""
    from langsmith import utils

    monkeypatch.setenv("LANGSMITH_PROJECT", "fact-desk")
    utils.get_env_var.cache_clear()
    utils.get_tracer_project.cache_clear()  # langsmith caches the project name it reads
    project = {"id": str(uuid.uuid4()), "name": "fact-desk", "tenant_id": str(uuid.uuid4()),
               "start_time": "2026-11-28T12:00:00+00:00", "reference_dataset_id": None}
    tracing.projects[project["id"]] = project
    assert log_review_feedback(uuid.uuid4(), APPROVE) == []
    assert log_review_feedback(uuid.uuid4(), EDIT) == []
    assert [f.get("session_id") for f in tracing.feedback] == [project["id"]] * 2, tracing.captured
    lookups = [p for m, p, _ in tracing.captured if m == "GET" and p.startswith("/sessions")]
    assert len(lookups) == 1 and "name=fact-desk" in lookups[0]  # once per process


def test_nothing_is_sent_with_tracing_off(monkeypatch: pytest.MonkeyPatch) -> None:
    with langsmith_capture() as (url, state):
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
        monkeypatch.setenv("LANGSMITH_TRACING", "false")
        monkeypatch.delenv("LANGCHAIN_TRACING_V2", raising=False)
        from langsmith import utils

        utils.get_env_var.cache_clear()
        assert log_review_feedback(uuid.uuid4(), APPROVE) == []
        assert state.captured == []


def test_a_failing_langsmith_is_retried_then_a_note(tracing: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_langsmith(500) as (url, hits):
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
        notes = log_review_feedback(uuid.uuid4(), EDIT, retries=2, base_delay=0.01)
    assert hits == ["/feedback"] * 3  # the first attempt and two retries, core/retry.py's
    assert len(notes) == 1 and notes[0].startswith("review: feedback: LangSmith did not take")
    assert "edit decision" in notes[0] and "3 attempt(s)" in notes[0]


def test_an_unreachable_langsmith_is_a_note(tracing: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_langsmith(200) as (url, _):
        pass  # the port is closed again: nothing answers there
    monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
    notes = log_review_feedback(uuid.uuid4(), APPROVE, retries=1, base_delay=0.01)
    assert len(notes) == 1 and "2 attempt(s)" in notes[0], notes


class _S(TypedDict, total=False):
    label: str
    flags: list[str]


def test_a_node_finds_the_resumed_run_and_its_feedback_lands_there(tracing: Any) -> None:
    """In a node, ``config`` has no run id: the feedback goes on the root run of the graph run
    that the reviewer's decision resumed (the run id its caller gave)."""
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tracers.langchain import wait_for_all_tracers
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    def review(state: _S, config: RunnableConfig) -> dict[str, Any]:
        decision = interrupt({"label": state["label"]})
        record = {**APPROVE, **decision}
        return {"flags": log_review_feedback(config, record)}

    graph = StateGraph(_S)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    app = graph.compile(checkpointer=InMemorySaver())
    first, resumed = uuid.uuid4(), uuid.uuid4()
    thread = {"configurable": {"thread_id": "t1"}}
    app.invoke({"label": "SUPPORTS"}, {**thread, "run_id": first})
    final = app.invoke(Command(resume={"decision": "approve", "reviewer": "bo"}),
                       {**thread, "run_id": resumed})
    wait_for_all_tracers()
    assert final["flags"] == []
    assert [(f["run_id"], f["value"]) for f in tracing.feedback] == [(str(resumed), "SUPPORTS")]
    assert tracing.feedback[0]["feedback_source"]["metadata"]["reviewer"] == "bo"


def test_a_servers_run_id_is_used() -> None:
    """A LangGraph server names its run in the config (the root run id of its trace)."""
    assert review_feedback.review_run_id({"metadata": {"run_id": "abc"}}) == "abc"
    assert review_feedback.review_run_id({"configurable": {"run_id": "def"}}) == "def"
    assert review_feedback.review_run_id({}) is None  # no run tree outside a traced run
