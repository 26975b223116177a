"""Helpers for integration tests that need a ``langgraph dev`` server (free port, start, stop).

The server is started by ``factdebate.evaluation.langgraph_dev`` (as ``bench soak`` starts it):
from a copy of ``langgraph.json`` (graph and auth paths made absolute) so its ``.langgraph_api``
state stays in a temporary folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from factdebate.evaluation import langgraph_dev

REPO = langgraph_dev.REPO
LANGGRAPH = langgraph_dev.LANGGRAPH
free_port = langgraph_dev.free_port
langgraph_dev_command = langgraph_dev.langgraph_dev_command


TINY_CORPUS = [
    {"doc_id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower stands in Paris."},
    {"doc_id": "d2", "title": "Berlin", "text": "Berlin is the capital of Germany."},
    {"doc_id": "d3", "title": "Nile", "text": "The Nile flows north into the Mediterranean."},
]


def index_of(work: Path, passages: list[dict[str, str]]) -> Path:
    """A real index (Milvus Lite + keyword) of ``passages`` (``doc_id``, ``title``, ``text``) in
    ``work/index``, built from ``work/tiny-corpus.jsonl``."""
    from factdebate.tools.indexing import build_indexes

    corpus = work / "tiny-corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(p) for p in passages) + "\n", encoding="utf-8")
    build_indexes(corpus, work / "index")
    return work / "index"


def tiny_index(work: Path) -> Path:
    """A real 3-passage index (Milvus Lite + keyword) in ``work/index``, for servers under test that
    need an index but not the demo build (~35-70 s at a fresh server's start)."""
    return index_of(work, TINY_CORPUS)


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
    with this process's environment plus ``env`` (:func:`server_env`) and extra command-line
    ``args`` (e.g. ``("--n-jobs-per-worker", "2")``).

    Returns the process and its URL once ``/ok`` answers (within ``timeout`` seconds: on a fresh
    ``FACTDEBATE_HOME`` the start-up first builds the demo index, ~35-70 s on a busy machine);
    the caller stops it with :func:`stop_server`. A start that fails fails the test with the
    server's log.
    """
    try:
        return langgraph_dev.start_langgraph_dev(work, server_env(env), args=args,
                                                 timeout_s=timeout)
    except langgraph_dev.ServerStartError as exc:
        pytest.fail(f"langgraph dev did not start: {exc.log.read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    """Terminate a server started by :func:`start_langgraph_dev`."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


needs_langgraph = pytest.mark.skipif(not LANGGRAPH.exists(), reason="langgraph-cli not installed")
"""Skips a test (or a module, as its ``pytestmark``) that starts ``langgraph dev`` where
``langgraph-cli`` is not installed."""


def users_env(work: Path, keys: dict[str, str], *, warm: bool = True) -> dict[str, str]:
    """A server's variables for users with API keys (``keys``: name to key), the scripted test
    double allowed, its home in ``work/home`` (holding the MiniLM graph unless ``warm`` is False:
    :func:`warm_home`) and the 3-passage :func:`tiny_index`."""
    home = warm_home(work / "home") if warm else work / "home"
    return {"FACTDEBATE_API_KEYS": ",".join(f"{k}:{v}" for k, v in keys.items()),
            "FACTDEBATE_ALLOW_SCRIPTED": "1", "FACTDEBATE_HOME": str(home),
            "FACTDEBATE_INDEX_DIR": str(tiny_index(work))}


@contextlib.contextmanager
def serving(work: Path, env: dict[str, str], timeout: float = 240.0,
            args: tuple[str, ...] = ()) -> Iterator[str]:
    """:func:`start_langgraph_dev` for a ``with`` block: yields the server's URL and stops the
    server when the block ends."""
    proc, url = start_langgraph_dev(work, env, timeout, args)
    try:
        yield url
    finally:
        stop_server(proc)


def user_client(url: str, key: str, *, timeout: float = 60.0, **headers: str) -> httpx.Client:
    """An HTTP client of the server at ``url`` that sends API key ``key`` (``x-api-key``)."""
    return httpx.Client(base_url=url, headers={"x-api-key": key, **headers}, timeout=timeout)
