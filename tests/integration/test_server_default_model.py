"""A real ``langgraph dev`` whose allow-list holds only the scripted model.

* A run that names no model - a bare SDK run, a ``RemoteGraph`` used as a node of a local graph
  (it sends no ``context``) - runs the operator's model (``FACTDEBATE_MODEL=scripted:agree``),
  never the declared default ``local:smollm2``; the scripted model's reply text proves which model
  answered.
* A server whose default model is off its allow-list does not start: one line names the field,
  the model and the allow-list, and the command exits non-zero, with ``langgraph dev``'s reloader
  on too (its worker ends the supervisor, server/lifespan.py).
* A server run's trace carries the CLI's root run name and metadata (framework, prompt version,
  git SHA, models), checked on the run record and on what reaches a LangSmith stand-in
  (``langsmith_capture``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import httpx
import pytest

from tests.integration.langsmith_capture import LangSmithState, langsmith_capture
from tests.integration.servers import (
    REPO,
    free_port,
    langgraph_dev_command,
    needs_langgraph,
    server_env,
    serving,
    tiny_index,
)

# several langgraph dev servers: the slow tier (CI runs it)
pytestmark = [needs_langgraph, pytest.mark.slow]

KEY = "operator-key-0123456789"
SCRIPTED_ONLY = {"FACTDEBATE_API_KEYS": f"alice:{KEY}", "FACTDEBATE_API_KEYS_FILE": "",
                 "FACTDEBATE_AUTH": "", "FACTDEBATE_ALLOW_SCRIPTED": "",
                 "FACTDEBATE_ALLOWED_MODELS": "scripted:*"}
CLAIM = "Berlin is the capital of Germany."
SCRIPTED_RATIONALE = f"{CLAIM} The evidence bears on it."
"""What ``scripted:agree`` answers for ``cot``: no other model writes this."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, LangSmithState]]:
    work = tmp_path_factory.mktemp("scripted-only-server")
    with langsmith_capture() as (endpoint, langsmith):
        with serving(work, {
            **SCRIPTED_ONLY, "FACTDEBATE_MODEL": "scripted:agree",
            "FACTDEBATE_HOME": str(work / "home"), "FACTDEBATE_INDEX_DIR": str(tiny_index(work)),
            "LANGSMITH_TRACING": "true", "LANGSMITH_ENDPOINT": endpoint,
            "LANGSMITH_API_KEY": "lsv2-fake-0123456789", "LANGSMITH_PROJECT": "served",
        }) as url:
            yield url, langsmith


def sdk(url: str) -> Any:
    from langgraph_sdk import get_client

    return get_client(url=url, api_key=KEY)


async def test_a_run_without_a_model_runs_the_operators_allowed_model(server):
    url, _ = server
    client = sdk(url)
    thread = await client.threads.create()
    result = await client.runs.wait(thread["thread_id"], "cot", input={"claim": CLAIM})
    assert result["label"] == "SUPPORTS" and result["rationale"] == SCRIPTED_RATIONALE, result
    [run] = await client.runs.list(thread["thread_id"])
    assert run["status"] == "success"
    assert run["metadata"]["model_debater"] == "scripted:agree"


async def test_a_remote_graph_used_as_a_node_runs_only_allowed_models(server):
    """``RemoteGraph`` as a node drops ``context``: the server's default fills it, and it is the
    operator's allowed model."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.pregel.remote import RemoteGraph

    class Outer(TypedDict, total=False):
        claim: str
        label: str
        rationale: str

    url, _ = server
    remote = RemoteGraph("cot", url=url, api_key=KEY)  # sent as the x-api-key header
    builder = StateGraph(Outer)
    builder.add_node("verify", remote)
    builder.add_edge(START, "verify")
    builder.add_edge("verify", END)
    out = await builder.compile().ainvoke({"claim": CLAIM})
    assert out["label"] == "SUPPORTS" and out["rationale"] == SCRIPTED_RATIONALE, out


def test_a_model_off_the_list_is_refused_naming_the_allowed_specs(server):
    url, _ = server
    with httpx.Client(base_url=url, headers={"x-api-key": KEY}, timeout=30) as http:
        tid = http.post("/threads", json={}).json()["thread_id"]
        refused = http.post(f"/threads/{tid}/runs", json={
            "assistant_id": "cot", "input": {"claim": CLAIM},
            "context": {"debater_model": "local:smollm2"}})
        assert refused.status_code == 403, refused.text
        assert "debater_model" in refused.text and "scripted:*" in refused.text
        assert http.get(f"/threads/{tid}/runs").json() == []


def run_to_end(command: list[str], cwd: Path, env: dict[str, str], timeout_s: float
               ) -> tuple[int | None, str, float]:
    """(exit status or None when still running after ``timeout_s``, output, seconds) of
    ``command``, run in a session of its own; a command still running is ended with its
    children (the reloader's worker)."""
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, output, time.monotonic() - started
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return None, output, time.monotonic() - started


@pytest.mark.parametrize("reload", [False, True], ids=["no-reload", "reloader"])
def test_a_server_whose_default_model_is_not_allowed_does_not_start(tmp_path, reload):
    """No ``FACTDEBATE_MODEL``: runs would get ``local:smollm2``, which the list does not hold.
    With the reloader on (``langgraph dev``'s default) the command exits too, non-zero."""
    app = tmp_path / "app"
    command = langgraph_dev_command(tmp_path, free_port())
    if reload:
        command.remove("--no-reload")
    status, output, seconds = run_to_end(
        command, app, server_env({**SCRIPTED_ONLY, "FACTDEBATE_MODEL": "",
                                  "FACTDEBATE_HOME": str(tmp_path / "home")}), timeout_s=120)
    assert status is not None, f"still running after {seconds:.0f} s: {output[-3000:]}"
    assert status != 0, output[-3000:]
    lines = [line for line in output.splitlines() if "the server cannot start" in line]
    assert lines, output[-3000:]
    assert "debater_model defaults to 'local:smollm2'" in lines[0]
    assert "scripted:*" in lines[0] and "FACTDEBATE_MODEL" in lines[0]
    assert not (tmp_path / "home" / "index").exists()  # stopped before building any index


def root_runs(langsmith: LangSmithState, thread_id: str, deadline_s: float = 60) -> list[dict]:
    """The traced root runs of ``thread_id`` once the server's tracer sent them (polled until
    there, up to ``deadline_s``: the tracer sends in the background)."""
    end = time.monotonic() + deadline_s
    while True:
        roots = [r for r in langsmith.runs().values() if r.get("parent_run_id") is None
                 and ((r.get("extra") or {}).get("metadata") or {}).get("thread_id") == thread_id]
        if roots or time.monotonic() > end:
            return roots
        time.sleep(0.5)


async def test_a_server_trace_has_the_clis_root_name_and_metadata(server):
    from factdebate.prompts import load_prompts
    from factdebate.run.claims import git_sha

    def is_commit(sha: str) -> bool:
        return subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}"],
                              cwd=REPO, capture_output=True).returncode == 0

    url, langsmith = server
    client = sdk(url)
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "tool_mad", input={"claim": CLAIM},
                           context={"scoring_mode": "consistency", "max_rounds": 1})
    [run] = await client.runs.list(thread["thread_id"])
    expected = {"framework": "tool_mad", "prompt_version": load_prompts("tool_mad").version,
                "model_debater": "scripted:agree", "model_judge": "scripted:agree",
                "model_embeddings": "minilm"}
    assert {k: run["metadata"].get(k) for k in expected} == expected
    if git_sha():  # the commit the server runs (others may commit while it runs: not HEAD's)
        assert is_commit(run["metadata"]["git_sha"])
        expected["git_sha"] = run["metadata"]["git_sha"]
    assert run["metadata"]["fd_context"]["max_rounds"] == 1
    [root] = root_runs(langsmith, thread["thread_id"])
    assert root["name"] == "tool_mad:verify"  # the CLI's root name, not the graph's "Tool-MAD"
    metadata = root["extra"]["metadata"]
    assert {k: metadata.get(k) for k in expected} == expected


async def test_a_client_made_assistants_runs_carry_its_graph_and_settings(server):
    """The graph of an assistant a client made is read from the assistant, with its settings."""
    url, langsmith = server
    client = sdk(url)
    assistant = await client.assistants.create(
        "tool_mad", context={"max_rounds": 1, "scoring_mode": "consistency"})
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], assistant["assistant_id"],
                           input={"claim": CLAIM})
    [run] = await client.runs.list(thread["thread_id"])
    assert run["status"] == "success"
    assert run["metadata"]["framework"] == "tool_mad"
    assert run["metadata"]["fd_context"]["max_rounds"] == 1  # the assistant's stored setting
    [root] = root_runs(langsmith, thread["thread_id"])
    assert root["name"] == "tool_mad:verify"
