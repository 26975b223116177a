"""`langgraph dev` serves the exported graphs offline; a run completes through `langgraph_sdk`.

Real server (in-memory runtime), real Milvus Lite + keyword indexes built from a small corpus,
scripted model (selected through the run's context, as a Studio user would set a field).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.servers import needs_langgraph, serving, tiny_index

API_KEY = "test-server-key"

pytestmark = needs_langgraph


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("server")
    with serving(work, {"FACTDEBATE_INDEX_DIR": str(tiny_index(work)),
                        "FACTDEBATE_API_KEY": API_KEY, "FACTDEBATE_ALLOW_SCRIPTED": "1"}) as url:
        yield url


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
