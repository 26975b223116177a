"""The server's pure parts: API keys -> identities, the client-settings policy, memory namespaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from factdebate.graphs.mermaid import build_mermaid
from factdebate.nodes.mermaid.memory import memory_owner, run_memory_namespace
from factdebate.tools.evidence_memory import (
    LOCAL_OWNER,
    SHARED_OWNER,
    index_fingerprint,
    memory_namespace,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from factdebate.core.errors import ConfigError
from factdebate.server.identities import load_keyring
from factdebate.server.policy import Refused, check_assistant, check_run_kwargs, graph_of
from tests.graph.test_mermaid import CLAIM, ctx_for, searching_responder

ALICE, BOB = "alice-key-0123456789", "bob-key-0123456789ab"


def test_keys_from_env_file_and_the_single_key(tmp_path: Path):
    keys_file = tmp_path / "keys"
    keys_file.write_text("# comment\n\ncarol:carol-key-0123456789\ncarol:carol-rotated-012345\n")
    keys_file.chmod(0o600)
    ring = load_keyring({"FACTDEBATE_API_KEYS": f"alice:{ALICE}, bob:{BOB}",
                         "FACTDEBATE_API_KEYS_FILE": str(keys_file),
                         "FACTDEBATE_API_KEY": "legacy-key-0123456789"})
    assert ring.identities == ["default", "alice", "bob", "carol"]
    assert ring.identify(ALICE) == "alice" and ring.identify(BOB) == "bob"
    assert ring.identify("carol-rotated-012345") == "carol"  # several keys per identity
    assert ring.identify("legacy-key-0123456789") == "default"
    assert ring.identify(ALICE[:-1]) is None and ring.identify("") is None
    assert not load_keyring({})  # nothing configured: the server refuses every request


@pytest.mark.parametrize(("env", "message"), [
    ({"FACTDEBATE_API_KEYS": "alice"}, "expected 'identity:key'"),
    ({"FACTDEBATE_API_KEYS": "alice:short"}, "shorter than 12"),
    ({"FACTDEBATE_API_KEYS": f"a.b:{ALICE}"}, "not a short name"),
    ({"FACTDEBATE_API_KEYS": f"langgraph-studio-user:{ALICE}"}, "reserved"),
    ({"FACTDEBATE_API_KEYS": f"alice:{ALICE},bob:{ALICE}"}, "both 'alice' and 'bob'"),
    ({"FACTDEBATE_API_KEYS_FILE": "/nonexistent/keys"}, "cannot be read"),
])
def test_bad_key_configurations_name_the_problem(env: dict[str, str], message: str):
    with pytest.raises(ConfigError, match=message):
        load_keyring(env)


def test_a_world_readable_keys_file_is_refused(tmp_path: Path):
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"alice:{ALICE}\n")
    keys_file.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_keyring({"FACTDEBATE_API_KEYS_FILE": str(keys_file)})


@pytest.mark.parametrize(("kwargs", "graph", "field"), [
    ({"context": {"mcp_command": "sh -c id"}}, "mermaid", "mcp_command"),
    ({"context": {"mcp_command": "sh -c id"}}, "cot", "mcp_command"),  # not even elsewhere
    ({"context": {"mcp_command": "sh -c id"}}, None, "mcp_command"),
    ({"config": {"configurable": {"model_base_url": "http://evil"}}}, "tool_mad",
     "model_base_url"),
    ({"context": {"prompt_set": "../../etc"}}, None, "prompt_set"),
    ({"context": {"debater_model": "openai:gpt-4o"}}, "cot", "debater_model"),
])
def test_run_settings_refused(monkeypatch, kwargs: dict[str, Any], graph: str | None, field: str):
    monkeypatch.delenv("FACTDEBATE_ALLOWED_MODELS", raising=False)
    with pytest.raises(Refused) as refused:
        check_run_kwargs(kwargs, graph)
    assert refused.value.field == field and field in refused.value.detail


def test_run_settings_allowed(monkeypatch):
    monkeypatch.setenv("FACTDEBATE_ALLOWED_MODELS", "openai:gpt-4o-mini,local:*")
    check_run_kwargs({"context": {"debater_model": "openai:gpt-4o-mini", "max_rounds": 2,
                                  "judge_model": "local:smollm2", "prompt_set": "mermaid",
                                  "mcp_command": ""}}, "mermaid")
    check_run_kwargs({"context": {"prompt_set": "mermaid"}}, None)  # some framework's default
    assert graph_of("mermaid") == "mermaid" and graph_of("not-a-uuid") is None


def test_assistants_cannot_carry_server_keys():
    with pytest.raises(Refused, match="langgraph_auth_user"):
        check_assistant({"graph_id": "cot", "config": {"configurable": {
            "langgraph_auth_user": {"identity": "alice"}}}})


def test_memory_owner_follows_the_authenticated_user():
    alice = {"configurable": {"langgraph_auth_user_id": "alice", "user_id": "bob"}}
    assert memory_owner(alice, {}) == "alice"  # the server's key, not the client's user_id
    assert memory_owner({"configurable": {"user_id": "bob"}}, {}) == LOCAL_OWNER
    assert memory_owner(None, {}) == LOCAL_OWNER
    assert memory_owner(alice, {"FACTDEBATE_SHARED_MEMORY": "1"}) == SHARED_OWNER
    assert memory_namespace("alice", "f" * 16) == ("alice", "mermaid", "evidence", "f" * 16)


def test_index_fingerprint_names_the_build(tmp_path: Path):
    index = tmp_path / "index"
    index.mkdir()
    missing = index_fingerprint(index)
    manifest = {"corpus_sha256": "abc", "created": "2026-01-01T00:00:00+00:00",
                "collection": "passages", "embedding_model": "minilm", "passages": 3}
    (index / "manifest.json").write_text(json.dumps(manifest))
    first = index_fingerprint(index)
    assert first != missing and index_fingerprint(index) == first
    assert index_fingerprint(index, source="mediawiki") != first
    (index / "manifest.json").write_text(json.dumps({**manifest, "created": "2026-02-01"}))
    assert index_fingerprint(index) != first  # a rebuild (poisoned or not) starts afresh


async def test_one_users_mermaid_memory_is_not_recalled_by_another(scenario, monkeypatch):
    # The test's tools (in-process, static wiki and search) are operator-only settings that a real
    # server would take from its environment; the first-node guard that refuses client-set operator
    # fields on server runs has its own tests (test_server_guard.py), so it is lifted here.
    import factdebate.nodes.mermaid.decompose as decompose

    monkeypatch.setattr(decompose, "guard_server_run", lambda ctx: None)
    store = InMemoryStore()
    graph = build_mermaid().compile(checkpointer=InMemorySaver(), store=store)
    spec = scenario(searching_responder([]))

    async def run(user: str, thread: str) -> dict:
        config = {"configurable": {"thread_id": thread, "langgraph_auth_user_id": user}}
        return await graph.ainvoke({"claim": CLAIM}, config, context=ctx_for(spec))

    first = await run("alice", "a1")
    assert first["ledger"]["memory_writes"] >= 1
    assert (await run("bob", "b1"))["ledger"]["memory_hits"] == 0
    assert (await run("alice", "a2"))["ledger"]["memory_hits"] >= 1
    namespace = run_memory_namespace(ctx_for(spec), {"configurable": {
        "langgraph_auth_user_id": "alice"}})
    assert namespace[0] == "alice" and await store.asearch(namespace, limit=1)
