"""The ``factdebate`` CLI end to end: real indexes, scripted models, SQLite checkpoints."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.testing.scenarios import answer_role
from factdebate.testing.scripted import ScriptCall, ScriptFault

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("cli_home")


@pytest.fixture(scope="module")
def index_dir(cli_index: Path) -> Path:
    return cli_index  # conftest.py: 40 demo passages through `factdebate index`


def verify(index_dir: Path, *args: str) -> Any:
    return runner.invoke(app, ["verify", *args, "--index-dir", str(index_dir)])


def test_ls_frameworks_lists_tool_mad():
    result = runner.invoke(app, ["ls", "frameworks"])
    assert result.exit_code == 0 and "tool_mad" in result.output.split()


def test_verify_json_contract(index_dir):
    result = verify(index_dir, "The Eiffel Tower was completed in 1889.", "--model",
                    "scripted:agree", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    for key in ("label", "rationale", "rounds", "framework", "scores", "ledger", "flags"):
        assert key in out
    assert out["framework"] == "tool_mad" and out["label"] == "SUPPORTS" and out["rounds"] == 1
    assert set(out["scores"]) == {"rag", "search"}
    assert out["scores"]["rag"]["average"]["faithfulness"] == 1.0
    ledger = out["ledger"]
    assert ledger["llm_calls"] > 0 and ledger["prompt_tokens"] > 0
    assert ledger["tool_calls"] == {"milvus": 1, "local_search": 1}
    titles = [e["title"] for t in out["turns"] if t["agent"] == "rag" for e in t["evidence"]]
    assert titles[0] == "Eiffel Tower"
    assert any("stand-in" in f for f in out["flags"])
    # the verdict's evidence is what its replies cited; the rest is only retrieved
    assert out["evidence"] and out["evidence"][0]["title"] == "Eiffel Tower"
    for e in out["evidence"]:
        assert e["cited_by"] and e["stance"] == "supports"
    keys = {e["id"] for e in out["evidence"]}
    assert not keys & {e["id"] for e in out["retrieved"]}
    assert keys | {e["id"] for e in out["retrieved"]} == {
        e["id"] for t in out["turns"] for e in t["evidence"]}
    assert {c["by"] for c in out["citations"]} == {"rag", "search"}
    assert ledger["replies_cited"] == 2 and ledger["citations_unshown"] == 0


def section(output: str, start: str, end: str) -> str:
    """The lines of ``output`` from the one starting with ``start`` up to the one with ``end``."""
    lines = output.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    last = next(i for i, line in enumerate(lines) if i > first and line.startswith(end))
    return "\n".join(lines[first:last])


def test_verify_human_output_shows_verdict_and_evidence(index_dir):
    result = verify(index_dir, "The Eiffel Tower was completed in 1889.", "--model",
                    "scripted:agree?cite=wrong")
    assert result.exit_code == 0, result.output
    assert "SUPPORTS" in result.output
    # the cited passage, numbered, with who cited it and the stance; the others under their own
    # heading, titles only; the hallucinated ids in one line (the flags one by one with --json)
    cited = section(result.output, "Evidence behind the verdict", "Retrieved, not cited")
    assert cited.splitlines()[0] == "Evidence behind the verdict (1 cited)"
    assert cited.splitlines()[1] == " 1. Eiffel Tower (milvus) · cited by rag@1, search@1 · supports"
    assert "wrought-iron lattice tower" in cited  # the start of its text
    retrieved = next(ln for ln in result.output.splitlines() if ln.startswith("Retrieved, not cited"))
    assert retrieved.startswith("Retrieved, not cited (") and "Eiffel Tower" not in retrieved
    checks = next(ln for ln in result.output.splitlines() if ln.startswith("Citation checks:"))
    assert checks == ("Citation checks: 2 of 2 labelled replies cited a passage; 2 cited id(s) "
                      "never shown were dropped (hallucinated citations)")
    assert "note: citation checks: 2 replies cited passages never shown to them (dropped)" \
        in result.output.splitlines()  # one note for the kind; --json lists each flag
    rag_row = next(ln for ln in result.output.splitlines() if ln.startswith("│ rag "))
    assert "✓ Eiffel Tower (milvus)" in rag_row  # the final-round table marks the turn's citation


def test_verify_human_output_flags_an_uncited_verdict(index_dir):
    result = verify(index_dir, "The Eiffel Tower was completed in 1889.", "--model",
                    "scripted:agree?cite=none")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "Evidence behind the verdict (0 cited)" in lines
    assert "   none: the verdict cites no passage" in lines
    assert any(ln.startswith("Retrieved, not cited (") and "Eiffel Tower" in ln for ln in lines)
    assert ("Citation checks: uncited verdict (no reply behind it cited a passage it was shown); "
            "0 of 2 labelled replies cited a passage") in lines


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["   "], "empty"),
        (["x" * 5000], "over the limit"),
        (["c", "--framework", "tool_madd"], "did you mean 'tool_mad'"),
        (["c", "--model", "nosuch:model"], "cannot load model"),
        (["c", "--model", "gpt4"], "is not 'provider:model'"),
        (["c", "--model", "openai:gpt-4o-mini"], "needs OPENAI_API_KEY"),
        (["c", "--search-backend", "tavily", "--model", "scripted:agree"], "TAVILY_API_KEY"),
        (["c", "--rag-backend", "milvuss", "--model", "scripted:agree"], "did you mean 'milvus'"),
        (["c", "--rounds", "0"], "max_rounds"),
        (["c", "--set", "nofield=1"], "does not name a Context field"),
        (["c", "--resume"], "--resume needs --thread-id"),
    ],
)
def test_bad_input_one_line_error(index_dir, monkeypatch, args, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = verify(index_dir, *args)
    assert result.exit_code != 0
    assert message in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) <= 3


def test_missing_index_names_the_remedy(tmp_path):
    result = verify(tmp_path / "none", "c", "--model", "scripted:agree")
    assert result.exit_code != 0 and "factdebate index" in result.stderr


def test_unreachable_model_server(index_dir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    result = verify(index_dir, "c", "--model", "openai:any-model", "--base-url",
                    f"http://127.0.0.1:{port}/v1", "--set", "llm_retries=0")
    assert result.exit_code == 3
    assert "model server is unreachable" in result.stderr and "--resume" in result.stderr


def test_locked_milvus_index_is_reported(index_dir):
    from factdebate.tools.base import clear_retriever_cache

    clear_retriever_cache()  # earlier tests in this process hold the folder
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time; from factdebate.tools.milvus_rag import connect; "
            f"c = connect({str(index_dir / 'milvus.db')!r}); print('ready', flush=True); "
            "time.sleep(60)")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = verify(index_dir, "c", "--model", "scripted:agree")
        assert result.exit_code == 3 and "in use by another process" in result.stderr
    finally:
        holder.kill()
        holder.wait()


def test_interrupted_run_resumes_from_its_checkpoint(index_dir, scenario):
    calls: list[tuple[str, str, int]] = []
    state = {"failed": False}

    def responder(call: ScriptCall) -> Any:
        calls.append((call.role, call.agent, call.round))
        if call.role == "judge" and not state["failed"]:
            state["failed"] = True
            raise ScriptFault("judge timed out")
        return answer_role(call, debater_label=0 if call.agent == "rag" else 1)

    spec = scenario(responder)
    args = ["Paris is in France.", "--model", spec, "--rounds", "2", "--thread-id", "run-7",
            "--set", "llm_retries=0", "--json"]
    first = verify(index_dir, *args)
    assert first.exit_code == 3 and "--resume --thread-id run-7" in first.stderr
    done_before = len(calls)
    second = verify(index_dir, *args, "--resume")
    assert second.exit_code == 0, second.output
    assert calls[done_before:] == [("judge", "", 2)]
    out = json.loads(second.stdout)
    assert out["stopped_by"] == "judge" and out["rounds"] == 2 and out["thread_id"] == "run-7"
    again = verify(index_dir, *args)
    assert again.exit_code != 0 and "already holds a run" in again.stderr


@pytest.mark.slow  # a whole debate of the embedded model: the slow tier (CI runs it)
def test_embedded_model_end_to_end_structure(index_dir):
    pytest.importorskip("llama_cpp")
    result = verify(index_dir, "The Eiffel Tower was completed in 1889.", "--model",
                    "local:smollm2", "--rounds", "1", "--scoring", "consistency", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["label"] in ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
    assert out["rounds"] == 1 and out["stopped_by"] in ("consensus", "judge")
    assert out["ledger"]["prompt_tokens"] > 0 and out["ledger"]["completion_tokens"] > 0
    assert all(t["evidence"] for t in out["turns"])  # both debaters retrieved from the index
    assert out["models"]["debater"] == "local:smollm2"
