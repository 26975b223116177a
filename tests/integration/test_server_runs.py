"""Runs on a real ``langgraph dev`` behave right, through ``langgraph_sdk``.

One server, started the way a new user starts it: a fresh ``FACTDEBATE_HOME``, no index
configured. Its start-up builds the bundled demo index (``server/lifespan.py``), so the
first run succeeds. On it: claim 2 on claim 1's thread equals claim 2 on a fresh thread (Tool-MAD,
scripted double), a bad ``max_rounds`` shows its one-line message, ``update_state`` works, and the
graphs' schemas carry the state docstrings as field descriptions. A second server, started on a
damaged index, stops at once with one line naming the damage.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from factdebate.core.state import DebateInput, DebateOutput
from tests.integration.servers import (
    free_port,
    langgraph_dev_command,
    needs_langgraph,
    server_env,
    serving,
)

pytestmark = needs_langgraph

NO_INDEX_CONFIGURED = {"FACTDEBATE_INDEX_DIR": "", "FACTDEBATE_MILVUS_URI": ""}
"""Empty values are "not set" for the Context (an environment the test runs in may set them)."""
CLAIM_1 = "The Eiffel Tower is located in Lyon."
CLAIM_2 = "The Eiffel Tower was completed in 1889."
RESULT_KEYS = ("claim", "label", "answers", "rationale", "round", "stopped_by", "turns", "scores",
               "ledger", "flags")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A server on a fresh home (no index); yields its URL and its work folder."""
    work = tmp_path_factory.mktemp("fresh-server")
    with serving(work, {
        **NO_INDEX_CONFIGURED, "FACTDEBATE_HOME": str(work / "home"), "FACTDEBATE_AUTH": "off",
        "FACTDEBATE_ALLOW_SCRIPTED": "1",
    }) as url:  # start-up builds the demo index (servers.py waits long enough for it)
        yield url, work


def client(url: str) -> Any:
    from langgraph_sdk import get_client

    return get_client(url=url)


def result_of(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k in RESULT_KEYS}


async def test_fresh_server_built_the_demo_index_and_its_first_run_succeeds(fresh):
    url, work = fresh
    log = (work / "server.log").read_text()
    index = work / "home" / "index"
    assert f"indexing the bundled demo corpus into {index}" in log
    assert (index / "manifest.json").is_file() and (index / "milvus.db").is_dir()
    c = client(url)
    thread = await c.threads.create()
    out = await c.runs.wait(thread["thread_id"], "tool_mad", input={"claim": CLAIM_2},
                            context={"debater_model": "scripted:agree", "max_rounds": 1})
    assert out["label"] == "SUPPORTS", out
    titles = {e["title"] for t in out["turns"] for e in t["evidence"]}
    assert "Eiffel Tower" in titles  # retrieved from the demo index the start-up built


async def test_claim_two_on_a_used_thread_equals_claim_two_on_a_fresh_thread(fresh):
    """Claim 1 debates every round and excludes a title; claim 2 omits ``exclude_titles``."""
    c = client(fresh[0])
    used = (await c.threads.create())["thread_id"]
    one = await c.runs.wait(used, "tool_mad",
                            input={"claim": CLAIM_1, "exclude_titles": ["Eiffel Tower"]},
                            context={"debater_model": "scripted:disagree", "max_rounds": 2})
    assert one["stopped_by"] == "judge" and one["round"] == 2  # something to carry over
    ctx = {"debater_model": "scripted:agree", "max_rounds": 2}
    two = await c.runs.wait(used, "tool_mad", input={"claim": CLAIM_2}, context=ctx)
    alone_thread = (await c.threads.create())["thread_id"]
    alone = await c.runs.wait(alone_thread, "tool_mad", input={"claim": CLAIM_2}, context=ctx)
    assert result_of(two) == result_of(alone)
    assert two["round"] == 1 and len(two["turns"]) == 2
    assert "Eiffel Tower" in {e["title"] for t in two["turns"] for e in t["evidence"]}
    state = await c.threads.get_state(used)
    assert state["values"]["exclude_titles"] is None and state["values"]["claim"] == CLAIM_2
    history = await c.threads.get_history(used, limit=100)
    assert any(h["values"].get("claim") == CLAIM_1 and h["values"].get("turns") == one["turns"]
               for h in history)  # claim 1's debate stays browsable


async def test_bad_max_rounds_shows_its_message_not_an_internal_error(fresh):
    c = client(fresh[0])
    thread = (await c.threads.create())["thread_id"]
    out = await c.runs.wait(thread, "tool_mad", input={"claim": CLAIM_2}, raise_error=False,
                            context={"debater_model": "scripted:agree", "max_rounds": 99})
    error = out["__error__"]
    assert error["error"] == "ConfigError", error
    assert "max_rounds" in error["message"] and "99" in error["message"], error
    assert "\n" not in error["message"] and "internal error" not in error["message"]
    runs = await c.runs.list(thread)
    assert [r["status"] for r in runs] == ["error"]


async def test_update_state_through_the_sdk(fresh):
    c = client(fresh[0])
    thread = (await c.threads.create())["thread_id"]
    await c.runs.wait(thread, "tool_mad", input={"claim": CLAIM_2},
                      context={"debater_model": "scripted:agree", "max_rounds": 2})
    await c.threads.update_state(thread, {"flags": ["reviewed by a person"]},
                                 as_node="check_consensus")
    state = await c.threads.get_state(thread)
    assert "reviewed by a person" in state["values"]["flags"]
    assert state["next"] == ["cite_verdict"]  # consensus: the router ends the debate (then END)
    await c.threads.update_state(thread, {"stopped_by": ""}, as_node="check_consensus")
    assert (await c.threads.get_state(thread))["next"] == ["open_round"]  # round 1 < 2 rounds


def docstrings(cls: type) -> dict[str, str]:
    from factdebate.core.schema_docs import attribute_docs

    return attribute_docs(cls)


async def test_schemas_carry_the_state_docstrings(fresh):
    c = client(fresh[0])
    assistants = await c.assistants.search(graph_id="madke", limit=5)
    schemas = await c.assistants.get_schemas(assistants[0]["assistant_id"])
    inputs, outputs = schemas["input_schema"]["properties"], schemas["output_schema"]["properties"]
    assert {k: v.get("description") for k, v in inputs.items()} == docstrings(DebateInput)
    assert {k: v.get("description") for k, v in outputs.items()} == docstrings(DebateOutput)
    assert "Label set name" in inputs["task"]["description"]
    assert "Every turn" in outputs["turns"]["description"]
    turn = schemas["output_schema"]["$defs"]["Turn"]["properties"]
    assert all(p.get("description") for p in turn.values())
    context = schemas["context_schema"]["properties"]
    assert "rounds" in context["max_rounds"]["description"]


def test_a_damaged_index_stops_the_start_with_one_line(tmp_path: Path):
    index = tmp_path / "home" / "index"
    index.mkdir(parents=True)
    (index / "notes.txt").write_text("not an index")
    done = subprocess.run(
        langgraph_dev_command(tmp_path, free_port()), cwd=tmp_path / "app",
        env=server_env({**NO_INDEX_CONFIGURED, "FACTDEBATE_HOME": str(tmp_path / "home"),
                        "FACTDEBATE_AUTH": "off"}),
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 3, done.stderr[-2000:]
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if "factdebate:" in ln]
    assert lines == [f"factdebate: the server cannot start: the index at {index} is damaged: "
                     "manifest.json is missing. rebuild it: factdebate index CORPUS.jsonl "
                     f"--index-dir {index} --replace (or point the index folder at another "
                     "index)"], lines
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in index.iterdir()) == ["notes.txt"]  # untouched

