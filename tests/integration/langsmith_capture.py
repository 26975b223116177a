"""A LangSmith API stand-in on loopback that records every request and keeps state.

A real ``ThreadingHTTPServer``: every request is recorded in ``captured`` as ``(method, path,
body)``; datasets, examples, projects (``/sessions``) and feedback are stored and answered as the
LangSmith API does as far as ``langsmith.Client`` needs it (ids and timestamps echoed back, a
dataset listed by name, examples by dataset with offset/limit, a project created once and
returned again on ``upsert``, a conflict (409) for a dataset name or an example id that exists).
Traced runs (multipart or batch ingestion) are read back with :func:`posted_runs`.
"""

from __future__ import annotations

import datetime
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Request = tuple[str, str, bytes]


@dataclass
class LangSmithState:
    """What the stand-in holds; ``lock`` guards it (the server answers on several threads)."""

    captured: list[Request] = field(default_factory=list)
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    examples: dict[str, dict[str, Any]] = field(default_factory=dict)
    projects: dict[str, dict[str, Any]] = field(default_factory=dict)
    feedback: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def examples_of(self, dataset_id: str) -> list[dict[str, Any]]:
        """The stored examples of a dataset."""
        return [e for e in self.examples.values() if e["dataset_id"] == dataset_id]

    def runs(self) -> dict[str, dict[str, Any]]:
        """Run id -> traced run, from the recorded ingestion requests."""
        return posted_runs(self.captured)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


class _Handler(BaseHTTPRequestHandler):
    state: LangSmithState

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def _reply(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def do_GET(self) -> None:  # noqa: N802
        state = self.state
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with state.lock:
            state.captured.append(("GET", self.path, b""))
            if url.path == "/info":  # no batch config, no multipart examples: plain endpoints
                return self._reply({"version": "capture"})
            if url.path == "/datasets":
                found = [d for d in state.datasets.values()
                         if "name" not in query or d["name"] == query["name"]]
                return self._reply(found)
            if url.path.startswith("/datasets/"):
                found = state.datasets.get(url.path.split("/")[2])
                return self._reply(found or {"detail": "not found"}, 200 if found else 404)
            if url.path == "/examples":
                rows = sorted(state.examples_of(query.get("dataset", "")),
                              key=lambda e: e["created_at"])
                offset, limit = int(query.get("offset", 0)), int(query.get("limit", 100))
                return self._reply(rows[offset:offset + limit])
            if url.path == "/sessions":
                found = [p for p in state.projects.values()
                         if "name" not in query or p["name"] == query["name"]]
                return self._reply(found)
            if url.path.startswith("/sessions/"):
                found = state.projects.get(url.path.split("/")[2])
                return self._reply(found or {"detail": "not found"}, 200 if found else 404)
            return self._reply([])

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        state = self.state
        url = urlsplit(self.path)
        obj: Any = json.loads(body) if body[:1] in (b"{", b"[") else {}
        with state.lock:
            state.captured.append(("POST", self.path, body))
            if url.path == "/datasets":
                if any(d["name"] == obj["name"] for d in state.datasets.values()):
                    return self._reply({"detail": "Dataset already exists"}, 409)
                dataset = {**obj, "id": str(uuid.uuid4()), "created_at": _now(),
                           "modified_at": _now(),
                           "metadata": (obj.get("extra") or {}).get("metadata")}
                state.datasets[dataset["id"]] = dataset
                return self._reply(dataset)
            if url.path == "/examples/bulk":
                made = []
                for example in obj:
                    eid = str(example.get("id") or uuid.uuid4())
                    if eid in state.examples:
                        return self._reply({"detail": f"example {eid} already exists"}, 409)
                    if example.get("dataset_id") not in state.datasets:
                        return self._reply({"detail": "dataset not found"}, 404)
                    made.append({**example, "id": eid, "created_at": _now(),
                                 "modified_at": _now()})
                for example in made:
                    state.examples[example["id"]] = example
                return self._reply(made)
            if url.path == "/sessions":
                existing = next((p for p in state.projects.values()
                                 if p["name"] == obj.get("name")), None)
                if existing is not None:
                    if "upsert=true" not in url.query.lower():
                        return self._reply({"detail": "Project already exists"}, 409)
                    return self._reply(existing)
                project = {**obj, "id": str(obj.get("id") or uuid.uuid4()),
                           "start_time": _now(), "end_time": None,
                           "tenant_id": str(uuid.uuid4())}
                state.projects[project["id"]] = project
                return self._reply(project)
            if url.path == "/feedback":
                state.feedback.append(obj)
                return self._reply({**obj, "id": obj.get("id") or str(uuid.uuid4()),
                                    "created_at": _now(), "modified_at": _now()})
            if isinstance(obj, dict):
                obj = {"id": str(uuid.uuid4()), "created_at": _now(), "modified_at": _now(),
                       "start_time": _now(), "tenant_id": str(uuid.uuid4()), **obj}
            return self._reply(obj)

    def do_PATCH(self) -> None:  # noqa: N802
        body = self._body()
        state = self.state
        url = urlsplit(self.path)
        obj: Any = json.loads(body) if body[:1] in (b"{", b"[") else {}
        with state.lock:
            state.captured.append(("PATCH", self.path, body))
            if url.path.startswith("/sessions/"):
                project = state.projects.get(url.path.split("/")[2])
                if project is None:
                    return self._reply({"detail": "not found"}, 404)
                project.update({k: v for k, v in obj.items() if v is not None})
                return self._reply(project)
            return self._reply({"id": str(uuid.uuid4()), **(obj if isinstance(obj, dict) else {})})


@contextmanager
def langsmith_capture() -> Iterator[tuple[str, LangSmithState]]:
    """A running stand-in: its URL and its state; stopped on exit."""
    state = LangSmithState()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", state
    finally:
        server.shutdown()
        server.server_close()


def posted_runs(captured: list[Request]) -> dict[str, dict[str, Any]]:
    """Run id -> run (with its ``extra``) from multipart or batch ingestion requests (a run's
    later patch - its end, outputs - merged into it)."""
    runs: dict[str, dict[str, Any]] = {}
    for method, path, body in list(captured):
        if method == "POST" and path.startswith("/runs/multipart"):
            boundary = body.split(b"\r\n", 1)[0]
            for part in body.split(boundary):
                head, _, content = part.partition(b"\r\n\r\n")
                if b'name="post.' not in head and b'name="patch.' not in head:
                    continue
                name = head.split(b'name="', 1)[1].split(b'"', 1)[0].decode()
                _, run_id, *fields_ = name.split(".")
                value = json.loads(content.rstrip(b"\r\n-"))
                run = runs.setdefault(run_id, {"id": run_id})
                if fields_:
                    run[fields_[0]] = value
                else:
                    run.update(value)
        elif method == "POST" and path.startswith("/runs/batch"):
            batch = json.loads(body)
            for run in batch.get("post", []) + batch.get("patch", []):
                runs.setdefault(run["id"], {}).update(run)
        elif method == "POST" and path == "/runs":
            run = json.loads(body)
            runs.setdefault(run["id"], {}).update(run)
    return runs
