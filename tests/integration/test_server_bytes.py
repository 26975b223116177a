"""Bytes per user on the LangGraph server (factdebate.server.usage): a byte quota over every route
that keeps a client's bytes, a bounded thread history, a store TTL; copying another user's thread
is "not found".

One real ``langgraph dev`` with a 300,000-byte quota and 5 checkpoints per thread; each test uses
users of its own (the quota is per user and the server is shared by the module). The store TTL
gets a server of its own (its sweep would expire the other tests' items).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.servers import needs_langgraph, serving, user_client, users_env

# several langgraph dev servers: the slow tier (CI runs it)
pytestmark = [needs_langgraph, pytest.mark.slow]

USERS = ("routes", "adder", "other", "stater", "alice", "bob", "sweeper")
KEYS = {user: f"{user}-bytes-key-0123456789" for user in USERS}
QUOTA = 300_000
VARIABLE = "FACTDEBATE_MAX_BYTES_PER_USER"
HISTORY = 5
RUN = {"assistant_id": "cot", "input": {"claim": "Berlin is the capital of Germany."},
       "context": {"debater_model": "scripted:agree"}}
BIG = "a" * 400_000  # within the request limit (1 MiB), above the quota


def serving_users(work: Path, **env: str) -> contextlib.AbstractContextManager[str]:
    """A server for :data:`KEYS`' users (a home of its own, no MiniLM graph in it) with ``env``."""
    return serving(work, {**users_env(work, KEYS, warm=False), **env})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_users(tmp_path_factory.mktemp("bytes-server"),
                       FACTDEBATE_MAX_BYTES_PER_USER=str(QUOTA),
                       FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD=str(HISTORY)) as url:
        yield url


def as_user(url: str, user: str) -> httpx.Client:
    return user_client(url, KEYS[user])


def over_quota(response: httpx.Response, user: str) -> None:
    assert response.status_code == 403, response.text
    detail = response.json()["detail"]
    assert f"{VARIABLE}={QUOTA}" in detail and detail.startswith(f"{user} stores "), detail


def test_one_write_above_the_quota_is_refused_on_every_route(server: str):
    """The same 400 kB through each route that keeps a client's bytes: refused, naming the limit,
    and nothing of it is stored."""
    with as_user(server, "routes") as client:
        tid = client.post("/threads", json={}).json()["thread_id"]
        assert client.post(f"/threads/{tid}/runs/wait", json=RUN).status_code == 200
        aid = client.post("/assistants", json={"graph_id": "cot"}).json()["assistant_id"]
        superstep = [{"updates": [{"values": {"claim": BIG}, "as_node": "__input__"}]}]
        routes = [
            ("POST", "/threads", {"metadata": {"x": BIG}}),
            ("POST", "/threads", {"supersteps": superstep}),
            ("PATCH", f"/threads/{tid}", {"metadata": {"x": BIG}}),
            ("POST", f"/threads/{tid}/state", {"values": {"claim": BIG}}),
            ("POST", f"/threads/{tid}/runs", {**RUN, "metadata": {"x": BIG}}),
            ("POST", f"/threads/{tid}/runs/wait", {"assistant_id": "cot",
                                                   "command": {"update": {"claim": BIG}}}),
            ("POST", f"/threads/{uuid.uuid4()}/runs/wait",
             {**RUN, "if_not_exists": "create", "metadata": {"x": BIG}}),
            ("POST", "/runs/wait", {**RUN, "on_completion": "keep", "metadata": {"x": BIG}}),
            ("POST", "/runs", {**RUN, "on_completion": "keep", "metadata": {"x": BIG}}),
            ("POST", "/runs/batch", [{**RUN, "on_completion": "keep", "metadata": {"x": BIG}}]),
            ("POST", "/assistants", {"graph_id": "cot", "metadata": {"x": BIG}}),
            ("POST", "/assistants", {"graph_id": "cot", "description": BIG}),
            ("PATCH", f"/assistants/{aid}", {"metadata": {"x": BIG}}),
            ("POST", "/runs/crons", {**RUN, "schedule": "0 0 1 1 *", "metadata": {"x": BIG}}),
            ("POST", f"/threads/{tid}/runs/crons", {**RUN, "schedule": "0 0 1 1 *",
                                                    "metadata": {"x": BIG}}),
            ("PUT", "/store/items", {"namespace": ["routes", "notes"], "key": "k",
                                     "value": {"x": BIG}}),
            ("PUT", "/store/items", {"namespace": ["routes", BIG], "key": "k", "value": {}}),
        ]
        for method, path, body in routes:
            refused = client.request(method, path, json=body)
            assert refused.status_code == 403, (method, path, refused.text)
            over_quota(refused, "routes")
        stored = [client.post("/threads/search", json={"limit": 100}).text,
                  client.post("/assistants/search", json={"limit": 100}).text,
                  client.post("/runs/crons/search", json={}).text,
                  client.post("/store/items/search", json={"namespace_prefix": ["routes"]}).text,
                  client.get(f"/threads/{tid}/runs").text]
        assert all(BIG[:1000] not in text for text in stored)
        assert client.get(f"/threads/{tid}/state").json()["values"]["claim"] == RUN["input"]["claim"]


def test_small_writes_add_up_per_user_and_deletes_free_them(server: str):
    """Many small writes pass the quota together (threads, store items); another user is not
    affected; a store put replaces its item's bytes; deleting frees them."""
    part = {"x": "b" * 60_000}
    with as_user(server, "adder") as adder, as_user(server, "other") as other:
        threads = []
        for _ in range(3):
            made = adder.post("/threads", json={"metadata": part})
            assert made.status_code == 200, made.text
            threads.append(made.json()["thread_id"])
        for _ in range(3):  # the same key again and again: replaced, charged once
            put = adder.put("/store/items", json={"namespace": ["adder", "n"], "key": "same",
                                                  "value": part})
            assert put.status_code == 204, put.text
        # 4 x 60 kB stored: one more thread, store item or state write passes 300,000 bytes
        over_quota(adder.post("/threads", json={"metadata": part}), "adder")
        over_quota(adder.put("/store/items", json={"namespace": ["adder", "n"], "key": "other",
                                                   "value": part}), "adder")
        over_quota(adder.post(f"/threads/{threads[0]}/state",
                              json={"values": {"claim": "c" * 60_000}, "as_node": "__input__"}),
                   "adder")
        over_quota(adder.post(f"/threads/{threads[0]}/copy", json={}), "adder")  # a copy: 60 kB
        # another user writes the same as if adder did not exist
        for _ in range(4):
            assert other.post("/threads", json={"metadata": part}).status_code == 200
        # deleting a thread, or the store item, frees its bytes
        assert adder.delete(f"/threads/{threads[0]}").status_code in (200, 204)
        assert adder.post("/threads", json={"metadata": part}).status_code == 200
        over_quota(adder.post("/threads", json={"metadata": part}), "adder")
        assert adder.request("DELETE", "/store/items", json={
            "namespace": ["adder", "n"], "key": "same"}).status_code == 204
        assert adder.post("/threads", json={"metadata": part}).status_code == 200


def test_update_state_is_counted_and_history_is_bounded(server: str):
    """State writes on one thread count against the quota (a large one is refused), and the
    thread keeps at most FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD checkpoints."""
    with as_user(server, "stater") as client:
        tid = client.post("/threads", json={}).json()["thread_id"]
        assert client.post(f"/threads/{tid}/runs/wait", json=RUN).status_code == 200
        for n in range(12):
            done = client.post(f"/threads/{tid}/state",
                               json={"values": {"claim": f"claim {n} " + "d" * 1_000}})
            assert done.status_code == 200, done.text
        history = client.post(f"/threads/{tid}/history", json={"limit": 100}).json()
        assert 1 <= len(history) <= HISTORY, len(history)
        assert history[0]["values"]["claim"].startswith("claim 11 ")
        over_quota(client.post(f"/threads/{tid}/state", json={"values": {"claim": BIG}}),
                   "stater")
        state = client.get(f"/threads/{tid}/state").json()
        assert state["values"]["claim"].startswith("claim 11 ")
        # the thread still runs on its pruned history
        again = client.post(f"/threads/{tid}/runs/wait", json=RUN)
        assert again.status_code == 200, again.text
        assert client.get(f"/threads/{tid}/state").json()["values"]["claim"] == RUN["input"]["claim"]


def test_copying_another_users_thread_is_not_found(server: str):
    """A copy of another user's thread answers as one of an id that does not exist: 404."""
    with as_user(server, "alice") as alice, as_user(server, "bob") as bob:
        tid = alice.post("/threads", json={"metadata": {"topic": "alice-secret"}}).json()["thread_id"]
        missing = str(uuid.uuid4())
        foreign = bob.post(f"/threads/{tid}/copy", json={})
        absent = bob.post(f"/threads/{missing}/copy", json={})
        assert foreign.status_code == absent.status_code == 404, (foreign.text, absent.text)
        assert foreign.json()["detail"].replace(tid, missing) == absent.json()["detail"]
        assert "alice" not in foreign.text
        copied = alice.post(f"/threads/{tid}/copy", json={})
        assert copied.status_code == 200, copied.text
        assert copied.json()["metadata"]["topic"] == "alice-secret"


def test_store_items_expire_after_the_store_ttl(tmp_path: Path):
    """Items not written for FACTDEBATE_STORE_TTL_MINUTES are deleted, and their bytes freed."""
    with serving_users(tmp_path, FACTDEBATE_MAX_BYTES_PER_USER="200000",
                       FACTDEBATE_STORE_TTL_MINUTES="0.01",
                       FACTDEBATE_STORE_SWEEP_MINUTES="0.01") as url:
        with as_user(url, "sweeper") as client:
            item = {"namespace": ["sweeper", "n"], "key": "old", "value": {"x": "e" * 150_000}}
            assert client.put("/store/items", json=item).status_code == 204
            params = {"namespace": "sweeper.n", "key": "old"}
            deadline = time.monotonic() + 120
            while client.get("/store/items", params=params).json() is not None:  # null: gone
                assert time.monotonic() < deadline, "the item was not swept"
                time.sleep(0.5)
            # its 150 kB are freed: another 150 kB fits the 200,000-byte quota
            again = client.put("/store/items", json={**item, "key": "new"})
            assert again.status_code == 204, again.text
