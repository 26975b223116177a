"""The LangGraph server as a multi-user deployment, attacked through its public API.

One real ``langgraph dev`` (in-memory runtime) with three identities: alice and bob from
``FACTDEBATE_API_KEYS``, carol from a ``chmod 600`` keys file. The scripted model is allowed
(``FACTDEBATE_ALLOW_SCRIPTED=1``), nothing else but the default. Operator-only settings point at a
script that would create a marker file and at a loopback HTTP server that counts requests: a
refused setting must leave the marker absent and the counter at zero.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.servers import (
    REPO,
    needs_langgraph,
    serving,
    user_client,
    users_env,
)

pytestmark = needs_langgraph

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab",
        "carol": "carol-key-0123456789"}
OK_CONTEXT = {"debater_model": "scripted:agree"}


class Counter(http.server.BaseHTTPRequestHandler):
    """Counts every request (the SSRF / key-exfiltration canary)."""

    hits: list[str] = []

    def _any(self) -> None:
        Counter.hits.append(f"{self.command} {self.path}")
        self.send_response(200)
        self.end_headers()

    do_GET = do_POST = _any

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def canary() -> Iterator[tuple[str, list[str]]]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counter)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", Counter.hits
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def marker(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp("attack")
    flag = root / "spawned"
    script = root / "evil.py"
    script.write_text(f"open({str(flag)!r}, 'w').write('pwned')\n")
    return f"{sys.executable} {script}", flag


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("secure-server")
    keys_file = work / "keys.txt"
    keys_file.write_text(f"# operator's keys file\ncarol:{KEYS['carol']}\n")
    keys_file.chmod(0o600)
    with serving(work, {
        **users_env(work, {}),  # the scripted double, a warm home, the tiny index
        "FACTDEBATE_API_KEYS": f"alice:{KEYS['alice']}, bob:{KEYS['bob']}",  # a space: allowed
        "FACTDEBATE_API_KEYS_FILE": str(keys_file),
    }) as url:
        yield url


def as_user(url: str, user: str, **headers: str) -> httpx.Client:
    return user_client(url, KEYS[user], timeout=30, **headers)


async def not_found(call: Any) -> None:
    """``call`` fails with 404: another user's resource looks absent."""
    with pytest.raises(httpx.HTTPStatusError) as failed:
        await call
    assert failed.value.response.status_code == 404, failed.value.response.text


def sdk(url: str, user: str) -> Any:
    from langgraph_sdk import get_client

    return get_client(url=url, api_key=KEYS[user])


# --- who --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("headers", "status"), [
    ({}, 401), ({"x-api-key": "wrong-key-0123456789"}, 403),
    ({"Authorization": "Bearer wrong-key-0123456789"}, 403),
    ({"x-api-key": KEYS["alice"]}, 200), ({"Authorization": f"Bearer {KEYS['bob']}"}, 200),
    ({"x-api-key": KEYS["carol"]}, 200),  # from the keys file
])
def test_keys_map_to_identities(server: str, headers: dict[str, str], status: int):
    response = httpx.post(f"{server}/threads/search", json={}, headers=headers, timeout=10)
    assert response.status_code == status, response.text


# --- what a client may set ----------------------------------------------------------------------
def attacks(command: str, url: str) -> list[tuple[str, str, dict[str, Any], str]]:
    """(path, description, JSON body, refused field) of every route into a run's Context."""
    run = {"input": {"claim": "The Eiffel Tower is in Paris."}}
    text = {"input": {"text": "The Eiffel Tower is in Paris. Berlin is in Germany."}}
    return [
        ("/runs/wait", "stateless run context", {**run, "assistant_id": "mermaid",
         "context": {**OK_CONTEXT, "mcp_command": command}}, "mcp_command"),
        ("/runs/wait", "stateless run, config.configurable", {**run, "assistant_id": "mermaid",
         "config": {"configurable": {**OK_CONTEXT, "mcp_url": f"{url}/mcp"}}}, "mcp_url"),
        ("THREAD/runs", "thread run context", {**run, "assistant_id": "tool_mad", "context": {
            **OK_CONTEXT, "model_base_url": f"{url}/v1"}}, "model_base_url"),
        ("THREAD/runs", "field of another graph", {**run, "assistant_id": "cot", "context": {
            **OK_CONTEXT, "mcp_command": command}}, "mcp_command"),
        ("THREAD/runs", "index folder", {**run, "assistant_id": "cot", "context": {
            **OK_CONTEXT, "index_dir": "/etc"}}, "index_dir"),
        ("/assistants", "assistant context", {"graph_id": "mermaid", "context": {
            "mcp_command": command}}, "mcp_command"),
        ("/assistants", "assistant config.configurable", {"graph_id": "tool_mad", "config": {
            "configurable": {"model_base_url": f"{url}/v1"}}}, "model_base_url"),
        ("/runs/crons", "cron context", {**run, "assistant_id": "mermaid", "schedule": "* * * * *",
         "context": {"mcp_url": f"{url}/mcp"}}, "mcp_url"),
        ("THREAD/runs", "model off the allow-list", {**run, "assistant_id": "cot", "context": {
            "debater_model": "openai:gpt-4o-mini"}}, "debater_model"),
        ("THREAD/runs", "judge model off the allow-list", {**run, "assistant_id": "tool_mad",
         "context": {**OK_CONTEXT, "judge_model": "openai:gpt-4o"}}, "judge_model"),
        # check_text hands verifier_settings to the verifier's Context (item 11)
        ("/assistants", "assistant verifier_settings", {"graph_id": "check_text", "context": {
            "verifier_settings": {"mcp_command": command}}}, "mcp_command"),
        ("/assistants", "verifier_settings of a MERMAID verifier, as text", {
            "graph_id": "check_text", "config": {"configurable": {
                "framework": "mermaid", "verifier_settings": f"mcp_url={url}/mcp"}}}, "mcp_url"),
        ("/runs/crons", "cron verifier_settings", {**text, "assistant_id": "check_text",
         "schedule": "* * * * *", "context": {"verifier_settings": {
             "model_base_url": f"{url}/v1"}}}, "model_base_url"),
        ("THREAD/runs", "run verifier_settings as JSON", {**text, "assistant_id": "check_text",
         "context": {**OK_CONTEXT, "verifier_settings": json.dumps({"index_dir": "/etc"})}},
         "index_dir"),
    ]


def test_operator_settings_are_refused_before_anything_starts(server, canary, marker):
    url, hits = canary
    command, flag = marker
    with as_user(server, "bob") as bob:
        thread = bob.post("/threads", json={}).json()["thread_id"]
        for path, what, body, field in attacks(command, url):
            response = bob.post(path.replace("THREAD", f"/threads/{thread}"), json=body)
            assert response.status_code == 403, (what, response.text)
            assert field in response.json()["detail"], (what, response.text)
        # nothing was queued: the thread has no runs, there is no cron
        assert bob.get(f"/threads/{thread}/runs").json() == []
        assert bob.post("/runs/crons/search", json={}).json() == []
    time.sleep(1.0)  # a spawned process or an outbound request would have happened by now
    assert not flag.exists()
    assert hits == []


def test_a_cron_runs_as_its_creator(server: str):
    """The cron scheduler takes a cron run's user from its stored payload: a client-sent
    ``langgraph_auth_user`` (alice) is stripped by langgraph-api and the handler stamps bob."""
    with as_user(server, "bob") as bob:
        cron = bob.post("/runs/crons", json={
            "assistant_id": "cot", "schedule": "0 0 1 1 *", "input": {"claim": "x"},
            "config": {"configurable": {"langgraph_auth_user": {"identity": "alice"}}}})
        assert cron.status_code == 200, cron.text
        body = cron.json()
        assert body["metadata"]["owner"] == "bob"
        user = body["payload"]["config"]["configurable"]["langgraph_auth_user"]
        assert user["identity"] == "bob"
        with as_user(server, "alice") as alice:
            assert alice.post("/runs/crons/search", json={}).json() == []
            assert alice.delete(f"/runs/crons/{body['cron_id']}").status_code == 404
        assert bob.delete(f"/runs/crons/{body['cron_id']}").status_code in (200, 204)


def test_a_studio_form_echoing_defaults_is_accepted(server: str):
    """Operator-only fields that hold their defaults (what Studio's form sends) are harmless."""
    with as_user(server, "alice") as alice:
        out = alice.post("/runs/wait", json={
            "assistant_id": "cot", "input": {"claim": "Berlin is the capital of Germany."},
            "context": {**OK_CONTEXT, "prompt_set": "baselines", "index_dir": "",
                        "model_base_url": ""}})
    assert out.status_code == 200, out.text
    assert out.json()["label"] == "SUPPORTS"


# --- ownership ----------------------------------------------------------------------------------
async def test_one_user_cannot_touch_another_users_thread(server: str):
    alice, bob = sdk(server, "alice"), sdk(server, "bob")
    thread = await alice.threads.create(metadata={"owner": "bob", "topic": "eiffel"})
    assert thread["metadata"]["owner"] == "alice"  # a client cannot pick the owner
    tid = thread["thread_id"]
    result = await alice.runs.wait(tid, "cot", input={"claim": "Berlin is in Germany."},
                                   context=OK_CONTEXT)
    assert result["label"] == "SUPPORTS"
    assert tid not in {t["thread_id"] for t in await bob.threads.search(limit=100)}
    for attempt in (
        bob.threads.get(tid), bob.threads.get_state(tid), bob.threads.get_history(tid),
        bob.threads.update(tid, metadata={"topic": "mine"}), bob.threads.delete(tid),
        bob.runs.list(tid), bob.threads.update_state(tid, {"claim": "poison"}),
        bob.runs.wait(tid, "cot", input={"claim": "x y z"}, context=OK_CONTEXT),
    ):
        await not_found(attempt)
    with pytest.raises(httpx.HTTPStatusError) as refused:  # ownership does not move either
        await alice.threads.update(tid, metadata={"owner": "bob"})
    assert refused.value.response.status_code == 403
    assert "owner" in refused.value.response.text
    state = await alice.threads.get_state(tid)
    assert state["values"]["claim"] == "Berlin is in Germany."  # bob's update did not land
    assert (await alice.threads.get(tid))["metadata"]["topic"] == "eiffel"


async def test_assistants_are_private_and_the_graphs_own_are_read_only(server: str):
    alice, bob = sdk(server, "alice"), sdk(server, "bob")
    mine = await alice.assistants.create("cot", context={"max_rounds": 2}, name="alice-cot")
    aid = mine["assistant_id"]
    assert mine["metadata"]["owner"] == "alice"
    bob_sees = {a["graph_id"]: a["assistant_id"] for a in await bob.assistants.search(limit=100)}
    graphs = json.loads((REPO / "langgraph.json").read_text())["graphs"]
    assert aid not in bob_sees.values() and len(bob_sees) == len(graphs)  # the graphs' own only
    for attempt in (bob.assistants.get(aid), bob.assistants.update(aid, context={"top_k": 1}),
                    bob.assistants.delete(aid),  # nor run it
                    bob.runs.wait(None, aid, input={"claim": "Paris is in France."},
                                  context=OK_CONTEXT),
                    alice.assistants.update(bob_sees["tool_mad"], context={"max_rounds": 1})):
        await not_found(attempt)  # the last: nobody rewrites a graph's own assistant
    with as_user(server, "bob") as raw:  # nor disguises an assistant as one of them
        spoof = raw.post("/assistants", json={"graph_id": "cot", "metadata": {
            "created_by": "system"}})
    assert spoof.status_code == 403, spoof.text
    out = await alice.runs.wait(None, aid, input={"claim": "Paris is in France."},
                                context=OK_CONTEXT)
    assert out["label"] == "SUPPORTS"


def test_store_namespaces_are_per_user(server: str):
    with as_user(server, "alice") as alice, as_user(server, "bob") as bob:
        put = alice.put("/store/items", json={"namespace": ["alice", "notes"], "key": "k1",
                                             "value": {"text": "alice's note"}})
        assert put.status_code == 204, put.text
        for namespace in (["bob", "notes"], ["mermaid", "evidence"], ["factdebate:shared"]):
            refused = alice.put("/store/items", json={"namespace": namespace, "key": "k",
                                                      "value": {"text": "poison"}})
            assert refused.status_code == 403, (namespace, refused.text)
        assert bob.get("/store/items", params={"namespace": "alice.notes", "key": "k1"}
                       ).status_code == 403
        assert bob.post("/store/items/search", json={"namespace_prefix": ["alice"]}
                        ).status_code == 403
        everything = bob.post("/store/items/search", json={"namespace_prefix": []}).json()
        assert everything["items"] == []
        listed = bob.post("/store/namespaces", json={}).json()["namespaces"]
        assert all(ns[0] == "bob" for ns in listed)
        assert alice.post("/store/items/search", json={"namespace_prefix": []}
                          ).json()["items"][0]["value"] == {"text": "alice's note"}


# --- hardening ----------------------------------------------------------------------------------
def test_studio_bypass_is_a_separate_confined_identity(server: str, canary, marker):
    """Under ``langgraph dev`` ``x-auth-scheme: langsmith`` needs no key (upstream's local dev
    behaviour; deployments set ``disable_studio_auth``): it acts as ``langgraph-studio-user``,
    which sees no one else's threads and may not set operator-only fields either."""
    url, hits = canary
    with as_user(server, "alice") as alice:
        tid = alice.post("/threads", json={}).json()["thread_id"]
    studio = httpx.Client(base_url=server, headers={"x-auth-scheme": "langsmith"}, timeout=30)
    with studio:
        assert studio.post("/threads/search", json={}).status_code == 200
        assert studio.get(f"/threads/{tid}").status_code == 404
        refused = studio.post("/runs/wait", json={
            "assistant_id": "mermaid", "input": {"claim": "x"},
            "context": {**OK_CONTEXT, "mcp_url": f"{url}/mcp"}})
        assert refused.status_code == 403 and "mcp_url" in refused.text
    assert hits == []


@pytest.mark.parametrize(("origin", "allowed"), [
    ("https://smith.langchain.com", True), ("https://evil.example", False)])
def test_cors_allows_studio_only(server: str, origin: str, allowed: bool):
    preflight = httpx.options(f"{server}/threads/search", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-auth-scheme,content-type"}, timeout=10)
    assert (preflight.headers.get("access-control-allow-origin") == origin) is allowed
    assert (preflight.status_code == 200) is allowed


@pytest.mark.parametrize(("settings", "status", "named"), [
    ({"max_roundz": 1}, 422, "max_roundz"),  # not a setting of the verifier
    ({"judge_model": "scripted:agree"}, 403, "judge_model"),  # models: debater/judge_model
    ({"max_rounds": 0}, 422, "max_rounds"),  # out of the verifier's range
    ({"debaters": "rag,nope"}, 422, "nope"),  # the verifier's own cross-field checks
    ("max_rounds=", 422, "verifier_settings"),  # not a mapping
])
def test_verifier_settings_are_checked_when_an_assistant_or_cron_is_stored(
        server: str, settings: Any, status: int, named: str):
    """What would fail every run of a stored assistant or cron (every
    minute for a cron) is refused when it is stored, with the checks a run's claims get."""
    with as_user(server, "bob") as bob:
        for path, body in (
            ("/assistants", {"graph_id": "check_text", "context": {"verifier_settings": settings}}),
            ("/runs/crons", {"assistant_id": "check_text", "schedule": "* * * * *",
                             "input": {"text": "Paris is in France."},
                             "context": {"verifier_settings": settings}}),
        ):
            refused = bob.post(path, json=body)
            assert refused.status_code == status, (path, refused.text)
            assert named in refused.json()["detail"], (path, refused.text)
        assert bob.post("/runs/crons/search", json={}).json() == []
        ok = bob.post("/assistants", json={"graph_id": "check_text", "context": {
            "framework": "cot", "verifier_settings": {"top_k": 2}}})
        assert ok.status_code == 200, ok.text
        assert bob.delete(f"/assistants/{ok.json()['assistant_id']}").status_code in (200, 204)


# --- client-chosen ids (item 1) --------------------------------------------------------
def test_a_client_chosen_id_of_another_users_object_is_a_conflict(server: str):
    """``POST /threads`` / ``POST /assistants`` with an existing id and ``if_exists: do_nothing``
    returned the existing object to anyone; now another user's id is 409 (as ``raise`` is) and
    nothing of it is returned or written. The other routes that take a client's id of an existing
    object (runs with ``if_not_exists``, thread crons, copy, prune) find nothing."""
    with as_user(server, "alice") as alice, as_user(server, "bob") as bob:
        tid = alice.post("/threads", json={"metadata": {"topic": "alice-secret"}}).json()["thread_id"]
        done = alice.post(f"/threads/{tid}/runs/wait", json={
            "assistant_id": "cot", "input": {"claim": "Berlin is in Germany."}, "context": OK_CONTEXT})
        assert done.status_code == 200, done.text
        aid = alice.post("/assistants", json={"graph_id": "cot", "name": "alice-private",
                                              "context": {"top_k": 2}}).json()["assistant_id"]
        system_cot = next(a["assistant_id"] for a in bob.post("/assistants/search", json={
            "limit": 100}).json() if a["graph_id"] == "cot")
        superstep = [{"updates": [{"values": {"claim": "poison"}, "as_node": "__input__"}]}]
        for body in ({"thread_id": tid, "if_exists": "do_nothing"}, {"thread_id": tid},
                     {"thread_id": tid, "if_exists": "do_nothing", "supersteps": superstep}):
            taken = bob.post("/threads", json=body)
            assert taken.status_code == 409, (body, taken.text)
            assert "alice" not in taken.text and "Berlin" not in taken.text, taken.text
        for body in ({"assistant_id": aid, "graph_id": "cot", "if_exists": "do_nothing"},
                     {"assistant_id": aid, "graph_id": "cot"},
                     {"assistant_id": system_cot, "graph_id": "cot", "if_exists": "do_nothing"}):
            taken = bob.post("/assistants", json=body)
            assert taken.status_code == 409, (body, taken.text)
            assert "alice" not in taken.text, taken.text
        for path, body in (
            (f"/threads/{tid}/runs/wait", {"assistant_id": "cot", "if_not_exists": "create",
                                           "input": {"claim": "x y z"}, "context": OK_CONTEXT}),
            (f"/threads/{tid}/runs/crons", {"assistant_id": "cot", "schedule": "0 0 1 1 *",
                                            "input": {"claim": "x y z"}}),
            (f"/threads/{tid}/copy", {}),  # 404, as for an id that does not exist
        ):
            refused = bob.post(path, json=body)
            assert refused.status_code in (404, 409) and "alice" not in refused.text, path
            if path.endswith("/copy"):
                assert refused.status_code == 404, refused.text
        bob.post("/threads/prune", json={"thread_ids": [tid]})
        assert all(t["metadata"].get("topic") != "alice-secret"  # nothing was copied to bob
                   for t in bob.post("/threads/search", json={"limit": 100}).json())
        # alice's objects are untouched, and her own do_nothing still returns her thread
        mine = alice.post("/threads", json={"thread_id": tid, "if_exists": "do_nothing"})
        assert mine.status_code == 200 and mine.json()["metadata"]["topic"] == "alice-secret"
        state = alice.get(f"/threads/{tid}/state").json()["values"]
        assert state["claim"] == "Berlin is in Germany."
        assert alice.get(f"/threads/{tid}/runs").json()[0]["status"] == "success"
        assert len(alice.get(f"/threads/{tid}/runs").json()) == 1
        assert alice.get(f"/assistants/{aid}").json()["name"] == "alice-private"


# --- the web page's headers (item 12) --------------------------------------------------
def test_the_page_sends_browser_security_headers(server: str):
    for path, headers in (("/app/", {}), ("/app/js/main.js", {}),
                          ("/app/api/options", {"x-api-key": KEYS["alice"]})):
        response = httpx.get(f"{server}{path}", headers=headers, timeout=10)
        assert response.status_code == 200, (path, response.text)
        csp = response.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp, csp
        assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp, csp
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["x-content-type-options"] == "nosniff"


def test_a_webhook_cannot_reach_the_servers_network(server: str, canary):
    """A run's ``webhook`` is a request the server makes later: one to a loopback or private
    address (the canary, the server itself) is refused when the run is created."""
    url, hits = canary
    with as_user(server, "bob") as bob:
        for hook in (f"{url}/hook", "/threads/search", "http://169.254.169.254/latest/meta-data"):
            refused = bob.post("/runs/wait", json={
                "assistant_id": "cot", "input": {"claim": "Paris is in France."},
                "context": OK_CONTEXT, "webhook": hook})
            assert refused.status_code == 422, (hook, refused.text)
    time.sleep(0.5)
    assert hits == []


def test_an_oversized_request_body_is_refused_before_it_is_read(server: str):
    """A 2 MB thread metadata was read and stored; bodies above ``FACTDEBATE_MAX_REQUEST_BYTES``
    (default 1 MiB) are refused with 413, whether their length is declared or streamed."""

    def streamed() -> Iterator[bytes]:
        yield b'{"metadata": {"x": "'
        for _ in range(40):
            yield b"a" * 50_000
        yield b'"}}'

    with as_user(server, "bob") as bob:
        declared = bob.post("/threads", json={"metadata": {"x": "a" * 2_000_000}})
        chunked = bob.post("/threads", content=streamed(),
                           headers={"content-type": "application/json"})
        for refused in (declared, chunked):
            assert refused.status_code == 413, refused.text
            assert "FACTDEBATE_MAX_REQUEST_BYTES" in refused.json()["detail"]
        assert bob.post("/threads", json={"metadata": {"x": "a" * 500_000}}).status_code == 200
        assert all(len(json.dumps(t["metadata"])) < 600_000
                   for t in bob.post("/threads/search", json={"limit": 100}).json())
