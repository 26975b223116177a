"""Caveats travel with the figures (``evaluation/caveats.py``, ``evaluation/reports.py``).

A small scripted evaluation (static retriever, SQLite checkpoints, one item failing) and its
report: models per role, the test double, error rows and an n beside every figure.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from factdebate.evaluation.caveats import run_caveats, used_stand_in
from factdebate.evaluation.reports import write_reports
from factdebate.evaluation.runner import RunSpec, run_eval
from factdebate.testing.scenarios import answer_role, claim_of
from factdebate.testing.scripted import ScriptCall, ScriptFault

CLAIMS = [("1", "The Eiffel Tower is in Paris.", "SUPPORTS"),
          ("2", "Mount Everest is the highest mountain.", "SUPPORTS"),
          ("3", "Marie Curie won two Nobel Prizes.", "REFUTES"),
          ("4", "Paris is the capital of France.", "REFUTES")]


@pytest.fixture(autouse=True)
def _no_index(monkeypatch):
    monkeypatch.setattr("factdebate.evaluation.runner._check_index", lambda spec, ctx, console: ctx)


@pytest.fixture
def report(scenario, tmp_path: Path, monkeypatch) -> tuple[dict, str]:
    # a real model spec for the judge role, never called: the debaters agree in round 1
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")

    def respond(call: ScriptCall):
        if call.role == "debater" and "Curie" in claim_of(call):
            raise ScriptFault("provider exploded")
        return answer_role(call, debater_label=0)

    data = tmp_path / "mini.jsonl"
    data.write_text("".join(json.dumps({"id": f"m-{i}", "dataset": "mini", "claim": c,
                                        "label": lab}) + "\n" for i, c, lab in CLAIMS))
    spec = RunSpec(framework="tool_mad", dataset=str(data), out=tmp_path / "run", concurrency=2,
                   model=scenario(respond),
                   sets=["rag_backend=static", "search_backend=static", "scoring_mode=none",
                         "llm_retries=0", "judge_model=openai:gpt-4o-mini"])
    out = asyncio.run(run_eval(spec))
    summary = write_reports(out, [out])
    return summary, (out / "report.md").read_text(encoding="utf-8")


def test_summary_states_models_test_double_and_errors(report):
    summary, _ = report
    run = summary["runs"][0]
    caveats = run["caveats"]
    assert caveats["models"]["judge"] == "openai:gpt-4o-mini"
    assert caveats["models"]["debater"].startswith("scripted:test")
    assert caveats["test_double_roles"] == ["debater", "query"]  # the judge: a real model spec
    assert caveats["error_rows"] == 1 and caveats["error_types"] == {"ScriptFault": 1}
    assert caveats["n_rows"] == 4 and caveats["not_run"] == 0
    assert caveats["stand_in_rows"] == 0  # search_backend=static, not the stand-in
    assert run["memory"] is None  # Tool-MAD has no evidence memory


def test_report_states_the_caveats(report):
    _, text = report
    caveats = text.split("## Caveats", 1)[1].split("\n## ", 1)[0]
    assert "judge `openai:gpt-4o-mini`" in caveats and "debater `scripted:test" in caveats
    assert "**test double**" in caveats and "debater, query came from the scripted double" in caveats
    assert "error rows: 1 of 4 (ScriptFault x1)" in caveats


def test_no_table_figure_without_its_n(report):
    _, text = report
    tables = re.findall(r"((?:^\|.*\|\n)+)", text, flags=re.MULTILINE)
    assert len(tables) >= 4
    for table in tables:
        header, _, *rows = table.strip().splitlines()
        columns = [c.strip() for c in header.strip("|").split("|")]
        for row in rows:
            cells = [c.strip() for c in row.strip("|").split("|")]
            figures = [c for c in cells[1:] if re.fullmatch(r"-?\d+(\.\d+)?", c)]
            if "N" in columns:
                assert cells[columns.index("N")].isdigit(), row
            else:  # the frameworks x datasets table: every figure carries its own n
                assert not figures, f"figure without n in {row}"
                assert all("(n=" in c for c in cells[1:] if c != "-"), row
    assert "| tool_mad (scripted:" in text and "66.7 (n=3) |" in text


def test_offline_search_stand_in_is_counted():
    flag = ("search: no TAVILY_API_KEY, so the 'search' debater used the offline keyword index "
            "(local_search) as a stand-in for web search")
    rows = [{"status": "ok", "flags": [flag]}, {"status": "ok", "flags": []},
            {"status": "error", "error": {"type": "Boom"}}]
    record = {"models": {"debater": "openai:gpt-4o-mini"}, "item_ids": ["a", "b", "c", "d"],
              "context": {"search_backend": "auto"}}
    caveats = run_caveats(record, rows)
    assert caveats["stand_in_rows"] == 1 and caveats["test_double_roles"] == []
    assert caveats["error_rows"] == 1 and caveats["not_run"] == 1
    assert used_stand_in({"status": "ok", "flags": []}, {"search_backend": "local_search"})


def test_the_demo_corpus_caveat_names_what_was_searched():
    """A run over the demo corpus says so at the top of every report, naming where it was: the
    folder it was searched in (``--set index_dir``, the default folder, an index name), not the
    flag it may not have been chosen with."""
    from factdebate.evaluation.caveats import loud_caveats

    index = {"status": "ok", "demo": True, "passages": 264, "index_dir": "/tmp/mine"}
    [line] = loud_caveats({"caveats": {"demo_index": True}, "index": index})
    assert "bundled demo corpus (264 passages, index folder /tmp/mine)" in line
    assert "--demo-index" not in line
    [named] = loud_caveats({"caveats": {"demo_index": True}, "index": {**index, "name": "demo"}})
    assert "index 'demo', index folder /tmp/mine" in named
    served = {"status": "ok", "demo": True, "passages": 264, "searched_by": "server",
              "server": "http://127.0.0.1:2024"}
    [line] = loud_caveats({"caveats": {"demo_index": True}, "index": served})
    assert "on the server http://127.0.0.1:2024" in line
