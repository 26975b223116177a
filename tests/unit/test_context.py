"""Context layer: each framework's own fields, ranges and coercion, operator-only fields, masking."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from factdebate.core.context import (
    Context,
    allowed_models_from_env,
    check_client_settings,
    make_context,
    operator_fields,
    run_fields,
)
from factdebate.core.errors import ConfigError, SettingsRefused
from factdebate.core.settings import field_types, mask_url, masked_context
from factdebate.graphs.registry import FRAMEWORKS, context_class
from factdebate.nodes.tool_mad.state import ToolMadContext

CLASSES = sorted({context_class(name) for name in FRAMEWORKS.names()}, key=lambda c: c.__name__)
TOOL_MAD_ONLY = {"faithfulness_threshold", "relevance_threshold", "debaters", "query_formulation",
                 "scoring_mode", "score_feedback", "query_model", "scoring_model", "cross_encoder"}


def numeric_fields() -> list[tuple[type[Context], Any]]:
    return [(cls, f) for cls in CLASSES for f in fields(cls)
            if field_types(cls)[f.name] in (int, float)]


# --- each framework's Context holds its own fields ------------------------------------------

@pytest.mark.parametrize("name", FRAMEWORKS.names())
def test_tool_mad_knobs_live_only_in_tool_mad_context(name):
    names = {f.name for f in fields(context_class(name))}
    if name == "tool_mad":
        assert TOOL_MAD_ONLY <= names
    else:
        assert not names & TOOL_MAD_ONLY, name


def test_framework_knobs_are_where_their_graphs_read_them():
    fields_of = {name: {f.name for f in fields(context_class(name))} for name in FRAMEWORKS.names()}
    assert {"t_max", "mcp_url", "mcp_command", "decomposer_model"} <= fields_of["mermaid"]
    assert "max_rounds" not in fields_of["mermaid"] and "judge_model" not in fields_of["mermaid"]
    assert {"num_debaters", "wiki_pool_size", "search_pool_size", "judge_model",
            "max_rounds"} <= fields_of["madke"]
    assert {"aggregator", "num_documents", "judge_model"} <= fields_of["madam_rag"]
    assert {"judge_model", "max_rounds"} <= fields_of["mad"]  # moderator + judge
    assert "judge_model" not in fields_of["multi_agent_debate"]  # Du et al.: a vote, no judge
    assert {"judge_model", "drafts", "top_k"} <= fields_of["speculative_rag"]  # the verifier
    assert "max_rounds" not in fields_of["standard"] and "top_k" in fields_of["rag"]


def test_model_specs_name_each_frameworks_roles():
    assert set(ToolMadContext().model_specs()) == {"debater", "judge", "query", "scoring",
                                                   "embeddings"}
    assert set(context_class("mermaid")().model_specs()) == {"debater", "decomposer", "executor",
                                                             "embeddings"}
    ctx = ToolMadContext(debater_model="scripted:agree", judge_model="scripted:disagree")
    assert ctx.model_specs()["scoring"] == "scripted:disagree"  # scoring falls back to the judge
    assert ctx.model_specs()["query"] == "scripted:agree"


def test_judge_sees_scores_only_with_scoring_feedback():
    assert ToolMadContext(debater_model="openai:gpt-4o-mini").judge_score_mode() == "stability"
    assert ToolMadContext(score_feedback=False).judge_score_mode() == "none"
    assert context_class("mad")().judge_score_mode() == "none"


def test_a_flag_the_framework_lacks_is_one_line_not_a_type_error():
    with pytest.raises(ConfigError, match="'top_k' is not a setting of MermaidContext"):
        make_context(context_class("mermaid"), {"top_k": 3})


# --- ranges, declared next to each field and checked in one place ----------------------------

def test_every_numeric_field_of_every_context_declares_a_range():
    missing = [f"{cls.__name__}.{f.name}" for cls, f in numeric_fields() if not f.metadata.get("range")]
    assert not missing


@pytest.mark.parametrize(("cls", "f"), numeric_fields(),
                         ids=[f"{c.__name__}.{f.name}" for c, f in numeric_fields()])
def test_values_outside_each_range_are_refused_naming_field_and_range(cls, f):
    low, high = f.metadata["range"]
    step = 1 if field_types(cls)[f.name] is int else 0.5
    bad = [math.nan, math.inf, -math.inf] if field_types(cls)[f.name] is float else []
    bad += [low - step if not f.metadata.get("open_low") else low]
    bad += [high + step] if high is not None else []
    for value in bad:
        with pytest.raises(ConfigError, match=rf"^{f.name}=\S+ is out of range\. use .*"
                                              rf"{low:g}") as info:
            cls(**{f.name: value})
        if high is not None:
            assert f"{high:g}" in str(info.value)
    # the bounds themselves (or just above an open low) are accepted, when valid for the class
    inside = [high] if high is not None else []
    inside += [low + step if f.metadata.get("open_low") else low]
    for value in inside:
        if f.name == "max_rounds" or value != getattr(cls(), f.name):
            assert getattr(cls(**{f.name: value}), f.name) == value


def test_threshold_message_matches_the_documented_form():
    with pytest.raises(ConfigError) as info:
        ToolMadContext(faithfulness_threshold=float("nan"))
    assert info.value.problem == "faithfulness_threshold=nan is out of range"
    assert info.value.remedy == "use a number from 0 to 1"


def test_choices_and_cross_field_rules_still_hold():
    with pytest.raises(ConfigError, match="unknown scoring_mode 'vibes'"):
        ToolMadContext(scoring_mode="vibes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="at least two and at most 6"):
        ToolMadContext(debaters=["rag"] * 7)
    with pytest.raises(ConfigError, match="unknown label set"):
        ToolMadContext(label_set="fevr")
    with pytest.raises(ConfigError, match="answer_mode='answers' is not supported"):
        context_class("mad")(answer_mode="answers")


# --- coercion of text (--set, a server's JSON, the environment) -------------------------------

def test_text_values_are_parsed_to_the_field_types():
    ctx = ToolMadContext(max_rounds="2", faithfulness_threshold="0.5", score_feedback="off",
                         debaters="rag, search,vanilla", temperature=1)  # type: ignore[arg-type]
    assert (ctx.max_rounds, ctx.faithfulness_threshold, ctx.score_feedback) == (2, 0.5, False)
    assert ctx.debaters == ["rag", "search", "vanilla"] and isinstance(ctx.temperature, float)
    assert ToolMadContext(max_rounds=2.0).max_rounds == 2  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value", "message"), [
    ("max_rounds", "three", "max_rounds='three' is not an integer"),
    ("max_rounds", 2.5, "max_rounds=2.5 is not an integer"),
    ("max_rounds", True, "max_rounds=True is not an integer"),
    ("faithfulness_threshold", "high", "faithfulness_threshold='high' is not a number"),
    ("score_feedback", "maybe", "score_feedback='maybe' is not true or false"),
    ("debaters", 3, "debaters=3 is not a list of names"),
    ("label_set", 5, "label_set=5 is not text"),
    ("scoring_mode", None, "scoring_mode=None is not text"),
])
def test_values_of_the_wrong_type_name_the_field(name, value, message):
    with pytest.raises(ConfigError, match=message):
        ToolMadContext(**{name: value})


def test_environment_values_are_parsed_and_checked(monkeypatch):
    monkeypatch.setenv("FACTDEBATE_MODEL", "scripted:agree")
    assert ToolMadContext().debater_model == "scripted:agree"
    assert ToolMadContext(debater_model="scripted:disagree").debater_model == "scripted:disagree"


# --- operator-only vs run fields -------------------------------------------------------------

OPERATOR_EXPECTED = {
    "tool_mad": {"model_base_url", "index_dir", "milvus_uri", "embedding_model", "rag_backend",
                 "search_backend", "prompt_set", "cross_encoder"},
    "mermaid": {"mcp_url", "mcp_command", "mcp_tools", "tool_provider", "wiki_backend",
                "model_base_url", "index_dir", "milvus_uri", "prompt_set"},
}


@pytest.mark.parametrize("name", sorted(OPERATOR_EXPECTED))
def test_fields_naming_processes_urls_files_and_services_are_operator_only(name):
    cls = context_class(name)
    assert OPERATOR_EXPECTED[name] <= operator_fields(cls)
    assert {"max_rounds", "t_max", "label_set", "temperature", "debater_model"} & run_fields(cls)
    assert not operator_fields(cls) & run_fields(cls)
    assert operator_fields(cls) | run_fields(cls) == {f.name for f in fields(cls)}


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_no_run_field_names_a_path_url_command_or_backend(cls):
    risky = ("url", "uri", "dir", "path", "command", "backend", "provider", "encoder", "_tools",
             "prompt_set", "embedding")
    leaks = [n for n in run_fields(cls) if any(word in n for word in risky)]
    assert not leaks, f"{cls.__name__}: {leaks} should be operator-only"
    env_filled = [f.name for f in fields(cls) if f.metadata.get("env")]
    assert set(env_filled) - operator_fields(cls) <= {"debater_model", "structured_output"}


def test_client_settings_refuse_operator_fields_unknown_fields_and_unlisted_models():
    mermaid = context_class("mermaid")
    allowed = {"local:smollm2", "scripted:*"}
    check_client_settings(mermaid, {"t_max": 3, "debater_model": "scripted:agree?x=1",
                                    "executor_model": "", "memory": False}, allowed)
    check_client_settings(mermaid, {"mcp_command": "", "index_dir": ""}, allowed)  # defaults echo
    cases = [
        ({"t_max": 3, "mcp_command": "touch /tmp/pwned", "mcp_url": "http://x"}, "mcp_command",
         "mcp_command is an operator-only setting"),
        ({"model_base_url": "http://attacker.example/v1"}, "model_base_url", "operator-only"),
        ({"index_dir": "/etc"}, "index_dir", "operator-only"),
        ({"top_k": 3}, "top_k", "'top_k' is not a setting of MermaidContext"),
        ({"executor_model": "openai:gpt-4o"}, "executor_model", "not on this server's model"),
        ({"debater_model": ["local:smollm2"]}, "debater_model", "allow-list"),
    ]
    for values, field, message in cases:
        with pytest.raises(SettingsRefused, match=message) as info:
            check_client_settings(mermaid, values, allowed)
        assert info.value.field == field and isinstance(info.value, ConfigError)


def test_refused_model_message_masks_credentials():
    with pytest.raises(SettingsRefused) as info:
        check_client_settings(ToolMadContext, {"judge_model": "openai:x?api_key=sk-123"}, set())
    assert "sk-123" not in str(info.value)


@pytest.mark.parametrize(("env", "expected"), [
    ({}, {"local:smollm2"}),
    ({"FACTDEBATE_MODEL": "openai:gpt-4o-mini"}, {"openai:gpt-4o-mini"}),
    ({"FACTDEBATE_ALLOWED_MODELS": " openai:gpt-4o-mini, openai:gpt-4o ,,",
      "FACTDEBATE_MODEL": "local:smollm2"}, {"openai:gpt-4o-mini", "openai:gpt-4o"}),
    ({"FACTDEBATE_ALLOW_SCRIPTED": "1"}, {"local:smollm2", "scripted:*"}),
    ({"FACTDEBATE_ALLOW_SCRIPTED": "true"}, {"local:smollm2"}),
])
def test_allowed_models_from_env(monkeypatch, env, expected):
    for var in ("FACTDEBATE_ALLOWED_MODELS", "FACTDEBATE_MODEL", "FACTDEBATE_ALLOW_SCRIPTED"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert allowed_models_from_env() == frozenset(expected)


# --- credentials in URLs ---------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "shown"), [
    ("http://user:s3cret@host:8000/v1", "http://user:***@host:8000/v1"),
    ("https://tok3n@host/v1", "https://***@host/v1"),
    ("http://host:19530", "http://host:19530"),
    ("/data/milvus.db", "/data/milvus.db"),
    ("npx srv --url http://a:b@h/mcp --x", "npx srv --url http://a:***@h/mcp --x"),
    ("http://h/mcp?api_key=abc&x=1&token=t0k", "http://h/mcp?api_key=***&x=1&token=***"),
    ("postgresql://fd:pw@127.0.0.1:5432/db", "postgresql://fd:***@127.0.0.1:5432/db"),
])
def test_mask_url(raw, shown):
    assert mask_url(raw) == shown


def test_masked_context_hides_every_credential():
    ctx = context_class("mermaid")(model_base_url="http://u:pw1@h/v1", milvus_uri="http://u:pw2@h",
                                   mcp_url="http://u:pw3@h/mcp",
                                   mcp_command="srv --db postgresql://u:pw4@h/x")
    out = masked_context(ctx)
    assert not any(f"pw{i}" in repr(out) for i in range(1, 5))
    assert out["model_base_url"] == "http://u:***@h/v1" and out["t_max"] == ctx.t_max


class _MetadataSeen(BaseCallbackHandler):
    """Records the run metadata every traced chain starts with (what LangSmith would receive)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.seen.append(kwargs.get("metadata") or {})


async def test_checkpoints_and_traces_never_hold_a_credential(tmp_path: Path, static_ctx):
    """A real SQLite checkpointer run with a password in two URL fields.

    Found: LangGraph does not store the Context in checkpoints, and copies only str/number run
    metadata into checkpoint metadata, so our ``fd_context`` dict is not stored there either; it
    reaches the traces (callbacks, LangSmith), where it is masked.
    """
    from factdebate.run.claims import open_sqlite_saver
    from factdebate.run.engine import run_graph

    db = tmp_path / "checkpoints.sqlite"
    ctx = static_ctx("scripted:agree", model_base_url="http://fd:Passw0rdXYZ@127.0.0.1:9/v1",
                     milvus_uri="http://fd:Passw0rdXYZ@127.0.0.1:9", scoring_mode="none")
    traced = _MetadataSeen()
    async with open_sqlite_saver(db) as saver:
        result = await run_graph("tool_mad", {"claim": "The sky is blue."}, ctx,
                                 checkpointer=saver, thread_id="t1",
                                 config_extra={"callbacks": [traced]})
        metadata = [c.metadata async for c in saver.alist({"configurable": {"thread_id": "t1"}})]
    assert result["label"] and metadata and traced.seen
    contexts = [m["fd_context"] for m in traced.seen if "fd_context" in m]
    assert contexts and all(c["model_base_url"] == "http://fd:***@127.0.0.1:9/v1" for c in contexts)
    assert "Passw0rdXYZ" not in repr(traced.seen) and "Passw0rdXYZ" not in repr(metadata)
    con = sqlite3.connect(db)
    try:
        blobs = [bytes(v) if isinstance(v, bytes | memoryview) else str(v).encode()
                 for table in ("checkpoints", "writes")
                 for row in con.execute(f"SELECT * FROM {table}")  # noqa: S608 - fixed names
                 for v in row if v is not None]
    finally:
        con.close()
    assert blobs and not any(b"Passw0rdXYZ" in b for b in blobs)


def test_field_types_resolve_for_every_context():
    for cls in CLASSES:
        hints = field_types(cls)
        assert all(typing.get_origin(hints[f.name]) is not None or isinstance(hints[f.name], type)
                   for f in fields(cls)), cls.__name__


def test_run_json_holds_the_masked_context(tmp_path: Path, monkeypatch):
    """``eval`` writes the resolved Context into run.json with URL credentials masked."""
    from typer.testing import CliRunner

    from factdebate.cli.main import app

    data = os.environ.get("FACTDEBATE_DATA_DIR")
    if not data:
        pytest.skip("FACTDEBATE_DATA_DIR is not set")
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "eval", "--framework", "standard", "--dataset", "fever", "--limit", "1",
        "--model", "scripted:agree", "--out", str(out), "--concurrency", "1",
        "--set", "model_base_url=http://fd:Passw0rdXYZ@127.0.0.1:9/v1"])
    record = json.loads((out / "run.json").read_text())
    assert record["context"]["model_base_url"] == "http://fd:***@127.0.0.1:9/v1", result.output
    assert not [p for p in out.rglob("*") if p.is_file() and b"Passw0rdXYZ" in p.read_bytes()]


def test_ls_context_lists_the_frameworks_own_fields():
    from typer.testing import CliRunner

    from factdebate.cli.main import app

    lines = CliRunner().invoke(app, ["ls", "context", "--framework", "mermaid"]).output.splitlines()
    names = {line.split("=", 1)[0] for line in lines}
    assert names == {f.name for f in fields(context_class("mermaid"))}
    assert any(line.startswith("mcp_command=''\t[operator]") for line in lines)
    assert any(line.startswith("t_max=5\t[range 1..20]") for line in lines)
    bad = CliRunner().invoke(app, ["ls", "context", "--framework", "toolmadd"])
    assert bad.exit_code == 2 and "unknown framework" in bad.stderr


def test_auto_scoring_is_the_paper_s_stability_score_unless_the_evaluator_is_the_embedded_model():
    provider = ToolMadContext(debater_model="openai:gpt-4o-mini")
    assert provider.scoring_mode == "stability" and provider.start_notes() == []
    embedded = ToolMadContext(debater_model="local:smollm2")
    assert embedded.scoring_mode == "consistency"
    (note,) = embedded.start_notes()
    assert "auto" in note and "local:smollm2" in note and "--scoring stability" in note
    # the evaluator decides, not the debaters; an explicit mode is kept as asked
    assert ToolMadContext(debater_model="local:smollm2",
                          scoring_model="openai:gpt-4o").scoring_mode == "stability"
    forced = ToolMadContext(debater_model="local:smollm2", scoring_mode="stability")
    assert forced.scoring_mode == "stability" and forced.start_notes() == []
    assert "scoring_auto" not in {f.name for f in dataclasses.fields(ToolMadContext)}


def test_without_ragas_auto_scoring_is_the_consistency_score_and_stability_is_refused(monkeypatch):
    """The base install leaves ragas out (the ``ragas`` extra): ``auto`` falls back to the
    consistency score and says why; an explicit ``stability`` is one line naming the extra."""
    import importlib.util

    from factdebate.core.errors import ConfigError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ragas" else real(name, *a))
    provider = ToolMadContext(debater_model="openai:gpt-4o-mini")
    assert provider.scoring_mode == "consistency"
    (note,) = provider.start_notes()
    assert "ragas" in note and "factdebate[ragas]" in note
    with pytest.raises(ConfigError, match=r"needs ragas.*factdebate\[ragas\]"):
        ToolMadContext(debater_model="openai:gpt-4o-mini", scoring_mode="stability")
    assert ToolMadContext(debater_model="openai:gpt-4o-mini",
                          scoring_mode="consistency").scoring_mode == "consistency"
