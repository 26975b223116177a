"""The server's pure parts: API keys -> identities, the client-settings policy, memory namespaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from factdebate.core.errors import ConfigError
from factdebate.graphs.mermaid import build_mermaid
from factdebate.nodes.mermaid.memory import memory_owner, run_memory_namespace
from factdebate.server.identities import load_keyring
from factdebate.server.limits import load_limits
from factdebate.server.policy import (
    Refused,
    check_assistant,
    check_run_kwargs,
    check_verifier_settings,
    graph_of,
)
from factdebate.tools.evidence_memory import (
    LOCAL_OWNER,
    SHARED_OWNER,
    index_fingerprint,
    memory_namespace,
)
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


# --- operator limits (item 3) ----------------------------------------------------------
def test_limits_come_from_the_environment_with_defaults():
    from factdebate.server.limits import DEFAULT_CAPS, load_limits

    limits = load_limits({})
    assert dict(limits.caps) == DEFAULT_CAPS and limits.runs_per_user == 4
    assert limits.recursion_limit == 150 and limits.request_bytes == 1_048_576
    assert dict(limits.quotas) == {"threads": 10_000, "assistants": 100, "crons": 20}
    limits = load_limits({"FACTDEBATE_CAP_MAX_CLAIMS": "50", "FACTDEBATE_MAX_RUNS_PER_USER": "0",
                          "FACTDEBATE_MAX_RECURSION_LIMIT": "400",
                          "FACTDEBATE_MAX_THREADS_PER_USER": "0",
                          "FACTDEBATE_MAX_CRONS_PER_USER": "3"})
    assert limits.caps["max_claims"] == 50 and limits.runs_per_user == 0
    assert limits.recursion_limit == 400
    assert dict(limits.quotas) == {"threads": 0, "assistants": 100, "crons": 3}


@pytest.mark.parametrize(("env", "message"), [
    ({"FACTDEBATE_CAP_MAX_CLAIMS": "lots"}, "FACTDEBATE_CAP_MAX_CLAIMS='lots'"),
    ({"FACTDEBATE_CAP_TOP_K": "0"}, "at least 1"),
    ({"FACTDEBATE_CAP_TOOL_TIMEOUT_S": "nan"}, "FACTDEBATE_CAP_TOOL_TIMEOUT_S"),
    ({"FACTDEBATE_MAX_RUNS_PER_USER": "-1"}, "at least 0"),
    ({"FACTDEBATE_MAX_RECURSION_LIMIT": "3"}, "at least 10"),
    ({"FACTDEBATE_MAX_REQUEST_BYTES": "1e6"}, "FACTDEBATE_MAX_REQUEST_BYTES"),
    ({"FACTDEBATE_MAX_THREADS_PER_USER": "many"}, "FACTDEBATE_MAX_THREADS_PER_USER='many'"),
    ({"FACTDEBATE_MAX_ASSISTANTS_PER_USER": "-5"}, "at least 0"),
])
def test_bad_limits_stop_the_start_naming_the_variable(env: dict[str, str], message: str):
    from factdebate.server.limits import load_limits

    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_limits(env)


@pytest.mark.parametrize(("kwargs", "graph", "field", "status"), [
    ({"context": {"max_claims": 200}}, "check_text", "max_claims", 403),
    ({"context": {"max_claims": "200"}}, None, "max_claims", 403),  # text, graph unknown
    ({"context": {"max_rounds": 10.0}}, "tool_mad", "max_rounds", 403),
    ({"context": {"debaters": "rag,search,rag2,search2,rag3"}}, "tool_mad", "debaters", 403),
    ({"context": {"tool_timeout_s": 61.5}}, "cot", "tool_timeout_s", 403),
    ({"config": {"recursion_limit": 151}}, "cot", "recursion_limit", 403),
    ({"config": {"recursion_limit": True}}, "cot", "recursion_limit", 422),
    ({"context": {"verifier_settings": {"max_rounds": 6}}}, "check_text",
     "verifier_settings.max_rounds", 403),
    ({"context": {"verifier_settings": "max_rounds=6"}}, None,
     "verifier_settings.max_rounds", 403),
    ({"context": {"verifier_settings": {"mcp_command": "sh -c id"}}}, "check_text",
     "verifier_settings.mcp_command", 403),
    ({"context": {"framework": "mermaid", "verifier_settings": {"mcp_url": "http://evil"}}},
     None, "verifier_settings.mcp_url", 403),
    ({"context": {"verifier_settings": {"query_model": "openai:gpt-4o"}}}, "check_text",
     "verifier_settings.query_model", 403),
    ({"context": {"verifier_settings": {"nope": 1}}}, "check_text", "verifier_settings.nope", 422),
    ({"context": {"framework": "check_text", "verifier_settings": {"top_k": 2}}}, "check_text",
     "framework", 422),
])
def test_sizes_and_verifier_settings_are_checked(monkeypatch, kwargs: dict[str, Any],
                                                 graph: str | None, field: str, status: int):
    monkeypatch.setenv("FACTDEBATE_ALLOW_SCRIPTED", "1")
    for name in ("FACTDEBATE_MAX_RECURSION_LIMIT", "FACTDEBATE_CAP_MAX_CLAIMS",
                 "FACTDEBATE_CAP_MAX_ROUNDS"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(Refused) as refused:
        check_run_kwargs(kwargs, graph)
    assert (refused.value.field, refused.value.status) == (field, status), refused.value.detail
    if status == 403 and "cap" in refused.value.detail:
        assert "FACTDEBATE_" in refused.value.detail


@pytest.mark.parametrize(("context", "graph", "field"), [
    ({"top_k": "many"}, "cot", "top_k"),
    ({"tool_timeout_s": float("nan")}, "cot", "tool_timeout_s"),
    ({"max_rounds": 0}, "tool_mad", "max_rounds"),  # the Context's own range
    ({"max_rounds": 99}, None, "max_rounds"),  # graph unknown: the declared range
    ({"debaters": "rag"}, "tool_mad", "debaters"),  # the Context's own check: "at least two"
])
def test_stored_settings_get_the_checks_a_run_gets_when_it_starts(
        context: dict[str, Any], graph: str | None, field: str):
    """An assistant's (or cron's) settings are used by every later run: refused now (422).
    A run's own bad value is left to its Context, which names it when the run starts."""
    with pytest.raises(Refused) as refused:
        check_assistant({"graph_id": graph or "not-a-framework", "context": context})
    assert (refused.value.field, refused.value.status) == (field, 422), refused.value.detail
    check_run_kwargs({"context": context}, graph)  # the run starts and fails with the message


def test_values_at_the_caps_pass_and_the_operator_may_raise_them(monkeypatch):
    from factdebate.server.policy import cap_recursion_limit, check_cron_payload

    monkeypatch.delenv("FACTDEBATE_CAP_MAX_CLAIMS", raising=False)
    check_run_kwargs({"context": {"max_claims": 20, "verifier_settings": {"max_rounds": 5}},
                      "config": {"recursion_limit": 150}}, "check_text")
    check_assistant({"graph_id": "tool_mad", "context": {"max_rounds": 5, "top_k": 10}})
    check_cron_payload({"assistant_id": "cot", "context": {"llm_retries": 3}})
    monkeypatch.setenv("FACTDEBATE_CAP_MAX_CLAIMS", "200")
    check_run_kwargs({"context": {"max_claims": 200}}, "check_text")
    config: dict[str, Any] = {}
    cap_recursion_limit(config)
    assert config == {"recursion_limit": 150}


def test_too_few_job_slots_are_named_at_the_start():
    from factdebate.server.limits import job_slots_warning, load_limits

    limits = load_limits({"FACTDEBATE_MAX_RUNS_PER_USER": "2"})
    warning = job_slots_warning(limits, {"N_JOBS_PER_WORKER": "1"})
    assert warning and "--n-jobs-per-worker" in warning and "FACTDEBATE_MAX_RUNS_PER_USER" in warning
    assert job_slots_warning(limits, {"N_JOBS_PER_WORKER": "3"}) is None
    assert job_slots_warning(load_limits({"FACTDEBATE_MAX_RUNS_PER_USER": "0"}),
                             {"N_JOBS_PER_WORKER": "10"})  # no per-user limit: any slots


# --- masked log lines (item 6) ---------------------------------------------------------
def test_log_records_have_credentials_in_urls_masked():
    import logging

    from factdebate.server import logs

    before = logging.getLogRecordFactory()
    try:
        logs.install()
        logs.install()  # once
        record = logging.getLogger("httpx").makeRecord(
            "httpx", logging.INFO, __file__, 1, 'HTTP Request: %s %s "%s"',
            ("POST", "http://fduser:s3cret@127.0.0.1/v1/chat", "200 OK"), None)
        assert record.getMessage() == 'HTTP Request: POST http://fduser:***@127.0.0.1/v1/chat "200 OK"'
        structured = logging.LogRecord("x", logging.INFO, __file__, 1, {
            "event": "connect", "uri": "http://u:pw@milvus:19530?token=abc"}, None, None)
        record = logging.getLogRecordFactory()("x", logging.INFO, __file__, 1, {
            "event": "connect", "uri": "http://u:pw@milvus:19530?token=abc"}, None, None)
        assert record.msg == {"event": "connect", "uri": "http://u:***@milvus:19530?token=***"}
        assert structured.msg["uri"].startswith("http://u:pw@")  # a plain record is untouched
    finally:
        logging.setLogRecordFactory(before)


def test_run_metadata_model_specs_are_masked():
    from factdebate.server.run_input import add_model_metadata

    value = {"kwargs": {"context": {"debater_model": "openai:m", "judge_model":
                                    "openai:http://u:pw@host/v1"}}, "metadata": {}}
    add_model_metadata(value)
    assert value["metadata"] == {"model_debater": "openai:m",
                                 "model_judge": "openai:http://u:***@host/v1"}


# --- the evaluation browser's files (item 7) ----------------------------------------
def test_evaluation_files_must_resolve_inside_the_root(tmp_path: Path):
    from factdebate.server.evals_browser import inside, relative

    root, outside = tmp_path / "runs", tmp_path / "outside.jsonl"
    (root / "run").mkdir(parents=True)
    outside.write_text("{}\n")
    (root / "run" / "results.jsonl").write_text("{}\n")
    (root / "run" / "linked.jsonl").symlink_to(outside)
    (root / "run" / "loop").symlink_to(root / "run" / "loop")
    (root / "run" / "inner.jsonl").symlink_to(root / "run" / "results.jsonl")
    assert inside(root, root / "run" / "results.jsonl") is not None
    assert inside(root, root / "run" / "inner.jsonl") is not None  # a link within the root
    for name in ("linked.jsonl", "loop", "missing.jsonl"):
        assert inside(root, root / "run" / name) is None, name
    assert inside(root, root / "run") is None  # a folder is not a file
    text = f"{root}/run/results.jsonl is damaged (under {root})"
    assert relative(text, root) == "run/results.jsonl is damaged (under .)"


@pytest.mark.parametrize("framework", ["toolmad", "tool-mad", "madam-rag", "madamrag", "cot"])
def test_verifier_settings_of_every_framework_alias_are_checked_by_that_framework(framework):
    """check_text takes every alias ``verify`` takes: so do the server's checks."""
    limits = load_limits({})
    check_verifier_settings({"framework": framework, "verifier_settings": {"tool_retries": 2}},
                            "context", limits)
    with pytest.raises(Refused) as refused:
        check_verifier_settings({"framework": framework,
                                 "verifier_settings": {"tool_retries": "many"}}, "context", limits)
    assert refused.value.field == "verifier_settings.tool_retries", refused.value.detail


BIG = "n" * 200_000


@pytest.mark.parametrize("value, says", [
    ("respond", "must be an object"),
    ({"before": "respond"}, "must be a list"),
    ({"before": [5]}, "must be a list"),
    ({"during": ["respond"]}, "must be an object"),
    ({"before": [BIG]}, "must be a list"),
    ({"after": ["no_such_node"]}, "names node(s) inside no turn of tool_mad"),
])
@pytest.mark.parametrize("where", ["run", "assistant", "cron"])
def test_the_inner_breakpoint_key_is_checked_wherever_it_comes_from(value: Any, says: str,
                                                                    where: str):
    """``config.configurable`` carrying the graphs' inner-breakpoint key itself: a malformed value
    is a 422 naming the key (no run ends on a TypeError), a long value is not echoed."""
    from factdebate.graphs.exported import BREAKPOINTS_KEY
    from factdebate.server.policy import check_cron_payload
    from factdebate.server.run_input import check_breakpoints

    config = {"configurable": {BREAKPOINTS_KEY: value}}
    with pytest.raises(Refused) as refused:
        if where == "run":
            check_run_kwargs({"config": config}, "tool_mad")
        elif where == "assistant":
            check_assistant({"graph_id": "tool_mad", "config": config})
        else:
            check_cron_payload({"assistant_id": "tool_mad", "config": config})
    assert refused.value.status == 422 and says in refused.value.detail, refused.value.detail
    assert BREAKPOINTS_KEY in refused.value.detail and len(refused.value.detail) < 3000
    if where == "run":
        with pytest.raises(Refused, match=BREAKPOINTS_KEY):
            check_breakpoints({"kwargs": {"config": config}}, "tool_mad")


def test_valid_inner_breakpoints_pass_and_refusals_of_names_stay_small():
    from factdebate.graphs.exported import BREAKPOINTS_KEY
    from factdebate.server.run_input import check_breakpoints

    check_run_kwargs({"config": {"configurable": {BREAKPOINTS_KEY: {
        "before": ["respond", "debate_turn:respond"], "after": None}}}}, "tool_mad")
    check_run_kwargs({"config": {"configurable": {BREAKPOINTS_KEY: {"before": ["x"]}}}}, None)
    for names in ([BIG], [f"n{i}" for i in range(5000)], BIG, [{"a": 1}]):
        with pytest.raises(Refused) as refused:
            check_breakpoints({"kwargs": {"interrupt_before": names}}, "tool_mad")
        assert refused.value.status == 422 and len(refused.value.detail) < 600, names
        assert "interrupt_before must be" in refused.value.detail
    with pytest.raises(Refused) as refused:
        check_breakpoints({"kwargs": {"interrupt_after": ["nope"]}}, "tool_mad")
    assert "'nope'" in refused.value.detail and "respond" in refused.value.detail
    huge = Refused("model", f"run context: debater_model={BIG!r} is not allowed")
    assert len(huge.detail) <= 2000 and huge.detail.endswith("(cut)")
