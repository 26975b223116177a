"""Helpers for integration tests that need a ``langgraph dev`` server (free port, start, stop).

Starts the server from a copy of ``langgraph.json`` (graph and auth paths made absolute) so its
``.langgraph_api`` state stays in a temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).parent / "langgraph"


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def langgraph_dev_command(work: Path, port: int) -> list[str]:
    """``langgraph dev`` on ``port`` with a copy of langgraph.json in ``work/app`` (paths absolute),
    so the server's ``.langgraph_api`` state stays in ``work``; run it with ``cwd=work / "app"``."""
    app_dir = work / "app"
    app_dir.mkdir()
    config = json.loads((REPO / "langgraph.json").read_text())
    config["dependencies"] = [str(REPO)]
    config["graphs"] = {k: str(REPO / v.removeprefix("./")) for k, v in config["graphs"].items()}
    if "auth" in config:
        config["auth"]["path"] = str(REPO / config["auth"]["path"].removeprefix("./"))
    (app_dir / "langgraph.json").write_text(json.dumps(config))
    return [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port),
            "--config", str(app_dir / "langgraph.json")]


TINY_CORPUS = [
    {"doc_id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower stands in Paris."},
    {"doc_id": "d2", "title": "Berlin", "text": "Berlin is the capital of Germany."},
    {"doc_id": "d3", "title": "Nile", "text": "The Nile flows north into the Mediterranean."},
]


def tiny_index(work: Path) -> Path:
    """A real 3-passage index (Milvus Lite + keyword) in ``work/index``, for servers under test that
    need an index but not the demo build (~35-70 s at a fresh server's start)."""
    from factdebate.tools.indexing import build_indexes

    corpus = work / "tiny-corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(p) for p in TINY_CORPUS) + "\n", encoding="utf-8")
    build_indexes(corpus, work / "index")
    return work / "index"


def warm_home(home: Path) -> Path:
    """``home`` (created) holding this process's cached ONNX graph of the bundled MiniLM in
    ``home/models`` (``factdebate.tools.embeddings_onnx``), and nothing else.

    A server on a home without it builds the graph at its start (~3-4 s more before ``/ok``); this
    process built it when it first loaded MiniLM. The file is a hard link where the file system
    allows (read-only use), else a copy; a home that holds it already is left as it is.
    """
    from factdebate.tools.embeddings import get_embeddings

    models = home / "models"
    models.mkdir(parents=True, exist_ok=True)
    graph = get_embeddings("minilm")._onnx.path  # built into this process's home once
    if not (models / graph.name).exists():  # a second call: no-op
        try:
            os.link(graph, models / graph.name)
        except OSError:
            shutil.copy2(graph, models / graph.name)
    return home


def server_env(env: dict[str, str]) -> dict[str, str]:
    """This process's environment plus ``env``, without analytics and tracing."""
    return {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false", **env}


def start_langgraph_dev(work: Path, env: dict[str, str], timeout: float = 240.0,
                        args: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    """``langgraph dev`` on a free port from a copy of langgraph.json (state stays in ``work``),
    with extra command-line ``args`` (e.g. ``("--n-jobs-per-worker", "2")``).

    Returns the process and its URL once ``/ok`` answers (within ``timeout`` seconds: on a fresh
    ``FACTDEBATE_HOME`` the start-up first builds the demo index, ~35-70 s on a busy machine);
    the caller stops it with :func:`stop_server`.
    """
    port = free_port()
    log = (work / "server.log").open("w")
    proc = subprocess.Popen(
        [*langgraph_dev_command(work, port), *args], cwd=work / "app", env=server_env(env),
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    stop_server(proc)
    pytest.fail(f"langgraph dev did not start: {(work / 'server.log').read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    """Terminate a server started by :func:`start_langgraph_dev`."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
