"""Stored objects per user on the LangGraph server: threads, assistants and crons are bounded per
identity (``FACTDEBATE_MAX_{THREADS,ASSISTANTS,CRONS}_PER_USER``, factdebate.server.limits).

One real ``langgraph dev`` with small limits (3 threads, 2 assistants, 1 cron, 900 kB). Every
way to create a thread is tried as an attacker would at the limit: ``POST /threads``, a run that
creates its thread (``if_not_exists: create``), a stateless run that keeps its thread, a copy. What
must keep working at the limit: naming one's own existing thread (``eval --server`` does that for
every item), runs on existing threads, stateless runs that keep nothing, another user's creates,
and creating again after a delete. The byte quota frees what it charges: a user who deleted
everything is charged 0 (read from the quota's own refusal, which names the user's bytes).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.servers import needs_langgraph, serving, user_client, users_env

pytestmark = needs_langgraph

KEYS = {"alice": "alice-quota-key-0123456789", "bob": "bob-quota-key-0123456789ab",
        "carol": "carol-quota-key-0123456789", "dora": "dora-quota-key-0123456789ab"}
BYTES = 900_000
RUN = {"assistant_id": "cot", "input": {"claim": "Berlin is the capital of Germany."},
       "context": {"debater_model": "scripted:agree"}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("quota-server")
    with serving(work, {
        **users_env(work, KEYS),
        "FACTDEBATE_MAX_THREADS_PER_USER": "3", "FACTDEBATE_MAX_ASSISTANTS_PER_USER": "2",
        "FACTDEBATE_MAX_CRONS_PER_USER": "1", "FACTDEBATE_MAX_BYTES_PER_USER": str(BYTES),
    }) as url:
        yield url


def as_user(url: str, user: str) -> httpx.Client:
    return user_client(url, KEYS[user])


def refused(response: httpx.Response, variable: str, count: int) -> None:
    assert response.status_code == 403, response.text
    detail = response.text
    assert variable in detail and f"has {count}" in detail, detail


def threads_of(client: httpx.Client) -> list[str]:
    return [t["thread_id"] for t in client.post("/threads/search", json={"limit": 100}).json()]


def test_threads_are_bounded_per_user_whichever_way_they_are_created(server: str):
    variable = "FACTDEBATE_MAX_THREADS_PER_USER"
    with as_user(server, "alice") as alice, as_user(server, "bob") as bob:
        made = [alice.post("/threads", json={}) for _ in range(3)]
        assert [r.status_code for r in made] == [200, 200, 200], [r.text for r in made]
        mine = [r.json()["thread_id"] for r in made]

        refused(alice.post("/threads", json={}), variable, 3)
        # a malformed id is still the API's own 4xx, not a failed lookup (503)
        assert alice.post("/threads", json={"thread_id": "not-a-uuid"}).status_code == 422
        assert alice.post("/threads/not-a-uuid/runs/wait",
                          json={**RUN, "if_not_exists": "create"}).status_code in (400, 422)
        refused(alice.post("/threads", json={"thread_id": str(uuid.uuid4())}), variable, 3)
        # a run that would create its thread, a stateless run that keeps one, a copy
        refused(alice.post(f"/threads/{uuid.uuid4()}/runs/wait",
                           json={**RUN, "if_not_exists": "create"}), variable, 3)
        refused(alice.post("/runs/wait", json={**RUN, "on_completion": "keep"}), variable, 3)
        # the stateless routes whose runtime picks the kept thread's id after the handler
        refused(alice.post("/runs", json={**RUN, "on_completion": "keep"}), variable, 3)
        refused(alice.post("/runs/batch", json=[{**RUN, "on_completion": "keep"}]), variable, 3)
        refused(alice.post(f"/threads/{mine[0]}/copy"), variable, 3)
        assert sorted(threads_of(alice)) == sorted(mine)  # nothing was created by any of them

        # at the limit: naming an own thread, a run on it, a stateless run that keeps nothing
        again = alice.post("/threads", json={"thread_id": mine[0], "if_exists": "do_nothing"})
        assert again.status_code == 200 and again.json()["thread_id"] == mine[0], again.text
        ran = alice.post(f"/threads/{mine[0]}/runs/wait", json=RUN)
        assert ran.status_code == 200 and ran.json().get("label") == "SUPPORTS", ran.text
        stateless = alice.post("/runs/wait", json=RUN)
        assert stateless.status_code == 200 and stateless.json().get("label") == "SUPPORTS"
        assert sorted(threads_of(alice)) == sorted(mine)

        # another user's thread id is not a way around it (and not a way in: 409 as before)
        assert alice.post("/threads", json={"thread_id": bob.post("/threads", json={}).json()[
            "thread_id"], "if_exists": "do_nothing"}).status_code in (403, 409)
        # per user: bob creates; alice creates again once she deleted one
        assert bob.post("/threads", json={}).status_code == 200
        assert alice.delete(f"/threads/{mine[2]}").status_code in (200, 204)
        assert alice.post("/threads", json={}).status_code == 200


def test_assistants_and_crons_are_bounded_per_user(server: str):
    with as_user(server, "alice") as alice, as_user(server, "bob") as bob:
        made = [alice.post("/assistants", json={"graph_id": "cot"}) for _ in range(2)]
        assert [r.status_code for r in made] == [200, 200], [r.text for r in made]
        refused(alice.post("/assistants", json={"graph_id": "cot"}), "ASSISTANTS_PER_USER", 2)
        own: dict[str, Any] = made[0].json()
        again = alice.post("/assistants", json={"graph_id": "cot", "if_exists": "do_nothing",
                                                 "assistant_id": own["assistant_id"]})
        assert again.status_code == 200, again.text
        assert bob.post("/assistants", json={"graph_id": "cot"}).status_code == 200

        cron = {**RUN, "schedule": "0 0 1 1 *"}
        first = alice.post("/runs/crons", json=cron)
        assert first.status_code == 200, first.text
        refused(alice.post("/runs/crons", json=cron), "CRONS_PER_USER", 1)
        assert alice.delete(f"/runs/crons/{first.json()['cron_id']}").status_code in (200, 204)
        assert alice.post("/runs/crons", json=cron).status_code == 200


def charged(client: httpx.Client, user: str) -> int:
    """The bytes charged to ``user``, as the quota's refusal names them (nothing is stored)."""
    refused = client.post("/threads", json={"metadata": {"x": "q" * (BYTES + 1)}})
    assert refused.status_code == 403, refused.text
    found = re.match(rf"{user} stores (\d+) bytes", refused.json()["detail"])
    assert found, refused.text
    return int(found.group(1))


def test_a_thread_s_crons_are_freed_with_the_thread(server: str):
    """Three rounds of a thread with a cron, deleted: the charge comes back each time (it used to
    grow by the cron's bytes per round until the user was refused until a restart)."""
    with as_user(server, "carol") as carol:
        start = charged(carol, "carol")
        for round_ in range(3):
            thread = carol.post("/threads", json={"metadata": {"note": "n" * 20_000}})
            assert thread.status_code == 200, thread.text
            tid = thread.json()["thread_id"]
            cron = carol.post(f"/threads/{tid}/runs/crons", json={
                **RUN, "schedule": "0 0 1 1 *", "metadata": {"note": "m" * 50_000}})
            assert cron.status_code == 200, cron.text
            # the cron's metadata is charged once (it is also inside its payload)
            assert 70_000 < charged(carol, "carol") - start < 90_000
            assert carol.delete(f"/threads/{tid}").status_code in (200, 204)
            assert carol.post("/runs/crons/search", json={}).json() == []  # gone with it
            assert charged(carol, "carol") == start, round_


def test_after_deleting_everything_a_user_is_charged_nothing(server: str):
    with as_user(server, "dora") as dora:
        assert charged(dora, "dora") == 0
        tid = dora.post("/threads", json={"metadata": {"k": "v" * 1000}}).json()["thread_id"]
        assert dora.post(f"/threads/{tid}/runs/wait", json=RUN).status_code == 200
        assert dora.post(f"/threads/{tid}/state",
                         json={"values": {"claim": "c" * 2000}}).status_code == 200
        assert dora.patch(f"/threads/{tid}", json={"metadata": {"p": "q" * 500}}).status_code == 200
        kept = dora.post("/runs/wait", json={**RUN, "on_completion": "keep",
                                             "metadata": {"kept": "k" * 3000}})
        assert kept.status_code == 200, kept.text
        aid = dora.post("/assistants", json={"graph_id": "cot", "metadata": {"a": "b" * 800}}
                        ).json()["assistant_id"]
        cron = dora.post("/runs/crons", json={**RUN, "schedule": "0 0 1 1 *"}).json()["cron_id"]
        assert dora.put("/store/items", json={"namespace": ["dora", "n"], "key": "k",
                                              "value": {"v": "w" * 700}}).status_code == 204
        assert charged(dora, "dora") > 8_000
        threads = [t["thread_id"] for t in dora.post("/threads/search", json={}).json()]
        assert len(threads) == 2  # its own and the one the stateless run kept
        for thread in threads:
            assert dora.delete(f"/threads/{thread}").status_code in (200, 204)
        assert dora.delete(f"/assistants/{aid}").status_code in (200, 204)
        assert dora.delete(f"/runs/crons/{cron}").status_code in (200, 204)
        assert dora.request("DELETE", "/store/items", json={
            "namespace": ["dora", "n"], "key": "k"}).status_code == 204
        assert charged(dora, "dora") == 0
