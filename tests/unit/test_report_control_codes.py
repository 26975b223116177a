"""report.md shows the control characters of what it took from files as text.

A real scripted evaluation over a data file whose claims and dataset name and whose run folder
carry terminal commands (clear screen, an OSC 8 link, cursor-up + erase line, C1 CSI, a bidi
override); ``write_reports`` writes report.md from its result rows and run record (the run's name
reaches the report): a terminal that ``cat``s it obeys none of them.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from factdebate.evaluation.reports import write_reports
from factdebate.evaluation.runner import RunSpec, run_eval
from factdebate.testing.scenarios import answer_role

HOSTILE = "\x1b[2J\x1b]8;;http://evil.example\x1b\\\x1b[9A\x1b[2K\x9b31m\u202e"


@pytest.fixture(autouse=True)
def _no_index(monkeypatch):
    monkeypatch.setattr("factdebate.evaluation.runner._check_index", lambda spec, ctx, console: ctx)


def test_report_holds_no_raw_control_character(scenario, tmp_path: Path):
    data = tmp_path / "mini.jsonl"
    data.write_text("".join(json.dumps({"id": f"m-{i}", "dataset": f"mini{HOSTILE}",
                                        "claim": f"Paris is in France.{HOSTILE}",
                                        "label": "SUPPORTS"}) + "\n" for i in range(2)))
    spec = RunSpec(framework="tool_mad", dataset=str(data), out=tmp_path / f"run{HOSTILE.replace('/', '')}",
                   model=scenario(lambda call: answer_role(call, debater_label=0)),
                   sets=["rag_backend=static", "search_backend=static", "scoring_mode=none",
                         "llm_retries=0"])
    out = asyncio.run(run_eval(spec))
    rows = [json.loads(r) for r in (out / "results.jsonl").read_text().splitlines()]
    assert rows and all(HOSTILE in r["claim"] for r in rows)  # the rows carry it
    write_reports(out, [out])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "\\x1b[2J" in report  # what the files said is there, as text
    raw = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", report)
    assert raw == [], sorted(set(raw))
