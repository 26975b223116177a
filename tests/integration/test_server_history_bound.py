"""One history bound per thread on ``langgraph dev``, all namespaces together, counted against the
byte quota; a fork from a removed checkpoint is refused, never a silent reset.

One real server with ``FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD=5`` and an 800 kB byte quota; Tool-MAD
with scripted debaters (its visible debater turns checkpoint under namespaces of their own). The
thread's checkpoints across all namespaces are read from the server's own storage report
(``GET /threads/{id}/storage``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.servers import needs_langgraph, serving, user_client, users_env

pytestmark = needs_langgraph

KEYS = {"hist": "hist-bound-key-0123456789", "forker": "forker-bound-key-0123456789"}
HISTORY = 5
QUOTA = 800_000
RUN = {"assistant_id": "tool_mad", "input": {"claim": "Berlin is the capital of Germany."},
       "context": {"debater_model": "scripted:agree", "scoring_mode": "consistency",
                   "max_rounds": 1}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("history-server")
    with serving(work, {**users_env(work, KEYS),
                        "FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD": str(HISTORY),
                        "FACTDEBATE_MAX_BYTES_PER_USER": str(QUOTA)}) as url:
        yield url


def as_user(url: str, user: str) -> httpx.Client:
    return user_client(url, KEYS[user], timeout=120)


def checkpoints(client: httpx.Client, thread: str) -> int:
    storage = client.get(f"/threads/{thread}/storage")
    assert storage.status_code == 200, storage.text
    return int(storage.json()["checkpoints"]["count"])


def stored_by(client: httpx.Client, user: str) -> int:
    """The user's charged bytes, as the quota's refusal names them (a write above the quota
    stores nothing)."""
    refused = client.post("/threads", json={"metadata": {"x": "q" * (QUOTA + 1)}})
    assert refused.status_code == 403, refused.text
    found = re.match(rf"{user} stores (\d+) bytes", refused.json()["detail"])
    assert found, refused.text
    return int(found.group(1))


def test_n_runs_keep_what_the_bound_says_and_the_history_is_charged(server: str):
    with as_user(server, "hist") as client:
        thread = client.post("/threads", json={}).json()["thread_id"]
        after: list[int] = []
        for _ in range(8):
            ran = client.post(f"/threads/{thread}/runs/wait", json=RUN)
            assert ran.status_code == 200 and ran.json()["label"] == "SUPPORTS", ran.text
            after.append(checkpoints(client, thread))
        one_run = after[0]
        assert one_run > HISTORY  # a Tool-MAD run's own checkpoints, turns included
        # per namespace, 8 runs kept 5 + 192 turn checkpoints; one bound: 8 runs keep what 3 keep
        assert after[7] <= after[2] and after[7] <= HISTORY - 1 + one_run, after
        # what the thread's checkpoints hold counts against the user's bytes (measured at the
        # write before the last run, so the last run's own are not in it yet)
        client.post(f"/threads/{thread}/state", json={"values": {"claim": "Berlin."}})
        stored = client.get(f"/threads/{thread}/storage").json()["total_bytes"]
        charged = stored_by(client, "hist")
        assert charged >= stored > 0
        # the thread runs on from its pruned history
        state = client.get(f"/threads/{thread}/state").json()
        assert state["values"]["claim"] == "Berlin."
        assert client.post(f"/threads/{thread}/runs/wait", json=RUN).status_code == 200
        assert client.delete(f"/threads/{thread}").status_code in (200, 204)
        assert stored_by(client, "hist") == 0  # the thread and its history are freed


def test_a_fork_from_a_removed_checkpoint_is_refused_naming_it(server: str):
    with as_user(server, "forker") as client:
        thread = client.post("/threads", json={}).json()["thread_id"]
        assert client.post(f"/threads/{thread}/runs/wait", json=RUN).status_code == 200
        history = client.post(f"/threads/{thread}/history", json={"limit": 100}).json()
        oldest = history[-1]["checkpoint"]["checkpoint_id"]
        for _ in range(2):
            assert client.post(f"/threads/{thread}/runs/wait", json=RUN).status_code == 200
        client.post(f"/threads/{thread}/state", json={"values": {"claim": "Berlin."}})
        kept = [h["checkpoint"]["checkpoint_id"] for h in
                client.post(f"/threads/{thread}/history", json={"limit": 100}).json()]
        assert oldest not in kept
        head = client.get(f"/threads/{thread}/state").json()["checkpoint"]["checkpoint_id"]

        for refused in (
            client.post(f"/threads/{thread}/state", json={
                "values": {"claim": "forked"}, "checkpoint_id": oldest}),
            client.post(f"/threads/{thread}/state", json={
                "values": {"claim": "forked"}, "checkpoint": {"checkpoint_id": oldest}}),
            client.post(f"/threads/{thread}/runs/wait", json={**RUN, "checkpoint_id": oldest}),
        ):
            assert refused.status_code == 404, refused.text
            detail = refused.json()["detail"]
            assert oldest in detail and "FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD" in detail, detail
        # nothing was written: the head is where it was, with its values
        state = client.get(f"/threads/{thread}/state").json()
        assert state["checkpoint"]["checkpoint_id"] == head
        assert state["values"]["claim"] == "Berlin."
        # a fork from a kept checkpoint works, on that checkpoint's state
        forked = client.post(f"/threads/{thread}/state", json={
            "values": {"claim": "forked"}, "checkpoint_id": kept[1]})
        assert forked.status_code == 200, forked.text
        assert client.get(f"/threads/{thread}/state").json()["values"]["claim"] == "forked"
