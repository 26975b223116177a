"""`langgraph dev` serves the exported graphs offline; a run completes through `langgraph_sdk`.

Real server (in-memory runtime), real Milvus Lite + keyword indexes built from a small corpus,
scripted model (selected through the run's context, as a Studio user would set a field).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).parent / "langgraph"
API_KEY = "test-server-key"

pytestmark = pytest.mark.skipif(not LANGGRAPH.exists(), reason="langgraph-cli not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from factdebate.tools.indexing import build_indexes

    work = tmp_path_factory.mktemp("server")
    corpus = work / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(p) for p in [
        {"doc_id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower stands in Paris."},
        {"doc_id": "d2", "title": "Berlin", "text": "Berlin is the capital of Germany."},
        {"doc_id": "d3", "title": "Nile", "text": "The Nile flows north into the Mediterranean."},
    ]) + "\n", encoding="utf-8")
    build_indexes(corpus, work / "index")
    # the server runs from a copy of the config so its .langgraph_api state stays in tmp
    app_dir = work / "app"
    app_dir.mkdir()
    shutil.copy(REPO / "langgraph.json", app_dir / "langgraph.json")
    config = json.loads((app_dir / "langgraph.json").read_text())
    config["dependencies"] = [str(REPO)]
    config["graphs"] = {k: str(REPO / v.removeprefix("./")) for k, v in config["graphs"].items()}
    config["auth"]["path"] = str(REPO / config["auth"]["path"].removeprefix("./"))
    (app_dir / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    env = {**os.environ, "FACTDEBATE_INDEX_DIR": str(work / "index"), "FACTDEBATE_API_KEY": API_KEY,
           "FACTDEBATE_ALLOW_SCRIPTED": "1", "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false"}
    log = (work / "server.log").open("w")
    proc = subprocess.Popen(
        [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port),
         "--config", str(app_dir / "langgraph.json")],
        cwd=app_dir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited: {(work / 'server.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"langgraph dev did not answer: {(work / 'server.log').read_text()[-3000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


async def test_server_lists_the_framework_and_completes_a_run(server: str):
    from langgraph_sdk import get_client

    client = get_client(url=server, api_key=API_KEY)
    from factdebate.graphs.registry import FRAMEWORKS

    assistants = await client.assistants.search(limit=100)
    assert {a["graph_id"] for a in assistants} == set(FRAMEWORKS.names())
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], "tool_mad",
        input={"claim": "The Eiffel Tower is in Paris."},
        context={"debater_model": "scripted:agree", "scoring_mode": "consistency"},
    )
    assert result["label"] == "SUPPORTS"
    assert result["stopped_by"] == "consensus" and result["round"] == 1
    evidence_titles = {e["title"] for t in result["turns"] for e in t["evidence"]}
    assert "Eiffel Tower" in evidence_titles
    assert result["ledger"]["tool_calls"] == {"milvus": 1, "local_search": 1}
    assert any("stand-in" in f for f in result["flags"])
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["label"] == "SUPPORTS"  # the server's checkpointer kept the run


async def test_server_reports_bad_input_as_a_failed_run(server: str):
    from langgraph_sdk import get_client

    client = get_client(url=server, api_key=API_KEY)
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], "tool_mad", input={"claim": "   "},
                                   context={"debater_model": "scripted:agree"})
    await client.runs.join(thread["thread_id"], run["run_id"])
    finished = await client.runs.get(thread["thread_id"], run["run_id"])
    assert finished["status"] == "error"


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({"x-api-key": "wrong"}, 403), ({"Authorization": "Bearer wrong"}, 403),
     ({"x-api-key": API_KEY}, 200), ({"Authorization": f"Bearer {API_KEY}"}, 200)],
)
def test_server_requires_the_api_key(server: str, headers: dict[str, str], status: int):
    response = httpx.post(f"{server}/assistants/search", json={"limit": 5}, headers=headers,
                          timeout=10)
    assert response.status_code == status, response.text


async def test_server_runs_a_second_framework(server: str):
    from langgraph_sdk import get_client

    client = get_client(url=server, api_key=API_KEY)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], "cot", input={"claim": "Berlin is the capital of Germany."},
        context={"debater_model": "scripted:agree"},
    )
    assert result["label"] == "SUPPORTS" and result["ledger"]["llm_calls"] == 1
