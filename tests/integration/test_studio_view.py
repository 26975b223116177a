"""What Studio and an SDK client see of the debate on a real ``langgraph dev`` (graphs/exported.py).

The xray graph of every exported graph lists the nodes it runs (inside turns too); a breakpoint
on ``respond`` pauses Tool-MAD there with the debater's retrieved evidence in the turn's state,
an edited state resumes to a verdict; an unknown node name is refused (4xx) before a run exists;
``messages-tuple`` without ``stream_subgraphs`` carries the debaters' messages; ``custom`` carries
the progress events (nodes/progress.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.graph.test_exported_graphs import DESIGN_NODES
from tests.integration.servers import needs_langgraph, serving, tiny_index, warm_home

pytestmark = needs_langgraph

API_KEY = "studio-view-key"
CLAIM = "The Eiffel Tower is in Paris."
CONTEXT = {"debater_model": "scripted:agree", "scoring_mode": "consistency"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("studio-view")
    with serving(work, {
        "FACTDEBATE_API_KEY": API_KEY, "FACTDEBATE_API_KEYS": "", "FACTDEBATE_API_KEYS_FILE": "",
        "FACTDEBATE_ALLOW_SCRIPTED": "1", "FACTDEBATE_ALLOWED_MODELS": "scripted:*",
        "FACTDEBATE_MODEL": "scripted:agree", "FACTDEBATE_HOME": str(warm_home(work / "home")),
        "FACTDEBATE_INDEX_DIR": str(tiny_index(work)),
    }) as url:
        yield url


def client(url: str) -> Any:
    from langgraph_sdk import get_client

    return get_client(url=url, api_key=API_KEY)


async def test_the_xray_graph_lists_every_node_each_graph_runs(server: str):
    sdk = client(server)
    assistants = {a["graph_id"]: a["assistant_id"]
                  for a in await sdk.assistants.search(limit=100)}
    assert set(assistants) == set(DESIGN_NODES)
    for graph_id, expected in DESIGN_NODES.items():
        drawn = await sdk.assistants.get_graph(assistants[graph_id], xray=True)
        ids = {n["id"] for n in drawn["nodes"] if not n["id"].rsplit(":", 1)[-1].startswith("__")}
        assert ids == expected, graph_id


async def test_a_breakpoint_on_respond_pauses_with_evidence_and_an_edit_resumes(server: str):
    sdk = client(server)
    thread = (await sdk.threads.create())["thread_id"]
    run = await sdk.runs.create(thread, "tool_mad", input={"claim": CLAIM}, context=CONTEXT,
                                interrupt_before=["respond"])
    await sdk.runs.join(thread, run["run_id"])
    assert (await sdk.threads.get(thread))["status"] == "interrupted"
    state = await sdk.threads.get_state(thread, subgraphs=True)
    assert state["next"] == ["debate_turn", "debate_turn"]
    turns = [task["state"] for task in state["tasks"]]
    assert {t["values"]["agent"] for t in turns} == {"rag", "search"}
    assert all(t["next"] == ["respond"] and not t["values"]["answer"] for t in turns)
    assert all("Eiffel Tower" in {e["title"] for e in t["values"]["evidence"]} for t in turns)

    rag = next(t for t in turns if t["values"]["agent"] == "rag")
    edited = dict(rag["values"]["evidence"][0], id="edited", title="Edited passage")
    await sdk.threads.update_state(thread, {"evidence": [edited]}, checkpoint=rag["checkpoint"])
    result = await sdk.runs.wait(thread, "tool_mad", input=None, context=CONTEXT)
    assert result["label"] == "SUPPORTS" and result["stopped_by"] == "consensus"
    rag_turn = next(t for t in result["turns"] if t["agent"] == "rag")
    assert [e["id"] for e in rag_turn["evidence"]] == ["edited"]


@pytest.mark.parametrize("kind", ["interrupt_before", "interrupt_after"])
def test_an_unknown_node_name_is_refused_before_the_run_exists(server: str, kind: str):
    with httpx.Client(base_url=server, headers={"x-api-key": API_KEY}, timeout=30) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        response = http.post(f"/threads/{thread}/runs", json={
            "assistant_id": "tool_mad", "input": {"claim": CLAIM}, "context": CONTEXT,
            kind: ["respnd"]})
        assert response.status_code == 422, response.text
        assert "'respnd'" in response.text and "debate_turn:respond" in response.text
        assert http.get(f"/threads/{thread}/runs").json() == []
        ok = http.post(f"/threads/{thread}/runs", json={
            "assistant_id": "tool_mad", "input": {"claim": CLAIM}, "context": CONTEXT,
            kind: ["debate_turn:score", "judge"]})
        assert ok.status_code == 200, ok.text
        http.post(f"/threads/{thread}/runs/{ok.json()['run_id']}/cancel")


async def test_messages_tuple_carries_the_debaters_without_stream_subgraphs(server: str):
    sdk = client(server)
    named = set()
    async for part in sdk.runs.stream(None, "tool_mad", input={"claim": CLAIM},
                                      context=CONTEXT, stream_mode="messages-tuple"):
        if part.event == "messages":
            _message, meta = part.data
            named.add((meta["langgraph_node"], meta.get("fd_agent")))
    assert {("respond", "rag"), ("respond", "search"), ("formulate_query", "rag")} <= named


async def test_custom_carries_the_progress_events(server: str):
    sdk = client(server)
    events = [part.data async for part in sdk.runs.stream(
        None, "tool_mad", input={"claim": CLAIM}, context=CONTEXT, stream_mode="custom")
        if part.event == "custom"]
    assert [e["event"] for e in events] == [
        "round_opened", "turn_finished", "turn_finished", "scores", "stop_decision", "verdict"]
    assert events[-1]["label"] == "SUPPORTS" and events[-1]["stopped_by"] == "consensus"
    assert {e["agent"] for e in events if e["event"] == "turn_finished"} == {"rag", "search"}

