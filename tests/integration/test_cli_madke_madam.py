"""``factdebate verify --framework madke|madam_rag`` end to end: real indexes, scripted models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.testing.scenarios import madam_role, madke_role

CLAIM = "The Eiffel Tower was completed in 1889."
runner = CliRunner()


pytestmark = pytest.mark.usefixtures("cli_home")


@pytest.fixture(scope="module")
def index_dir(cli_index: Path) -> Path:
    return cli_index  # conftest.py: 40 demo passages through `factdebate index`


def verify(index_dir: Path, *args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["verify", CLAIM, *args, "--json", "--index-dir", str(index_dir)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_ls_frameworks_lists_both():
    names = runner.invoke(app, ["ls", "frameworks"]).output.split()
    assert "madke" in names and "madam_rag" in names


def test_verify_with_madke(index_dir, scenario):
    spec = scenario(lambda call: madke_role(call, selected=(1,)))
    out = verify(index_dir, "--framework", "madke", "--model", spec)
    assert out["framework"] == "madke" and out["prompt_version"] == "madke-2"
    assert out["label"] == "SUPPORTS" and out["stopped_by"] == "consensus" and out["rounds"] == 1
    assert out["ledger"]["tool_calls"] == {"milvus": 1, "local_search": 1}
    assert any("stand-in" in f for f in out["flags"])
    assert {t["agent"] for t in out["turns"]} == {"debater1", "debater2"}
    assert all(len(t["evidence"]) == 1 for t in out["turns"])  # AKS picked item [1]
    assert out["turns"][0]["evidence"][0]["title"] == "Eiffel Tower"


def test_verify_with_madke_knobs(index_dir, scenario):
    spec = scenario(lambda call: madke_role(call, consensus_round=0))
    out = verify(index_dir, "--framework", "madke", "--model", spec, "--rounds", "2",
                 "--set", "knowledge_sources=wiki", "--set", "num_debaters=3")
    assert out["rounds"] == 2 and out["stopped_by"] == "max_rounds"
    assert out["ledger"]["tool_calls"] == {"milvus": 1}
    assert not any("stand-in" in f for f in out["flags"])
    assert len(out["turns"]) == 6


def test_verify_with_madam_rag(index_dir, scenario):
    spec = scenario(lambda call: madam_role(call, answer="SUPPORTS"))
    out = verify(index_dir, "--framework", "madam_rag", "--model", spec,
                 "--set", "num_documents=3")
    assert out["framework"] == "madam_rag" and out["prompt_version"] == "madam_rag-2"
    assert out["answers"] == ["SUPPORTS"] and out["label"] == "SUPPORTS"
    assert out["stopped_by"] == "no_change" and out["rounds"] == 2
    assert out["ledger"]["tool_calls"] == {"milvus": 1}
    assert sorted({t["agent"] for t in out["turns"]}) == ["doc1", "doc2", "doc3"]
    assert out["scores"] == {}
