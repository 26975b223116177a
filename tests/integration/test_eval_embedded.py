"""``factdebate eval`` with the embedded model (SmolLM2-135M via llama.cpp) on 5 FEVER items.

Structure only: the 135M model's verdicts are not results. Settings keep it to 2-3 calls per item
(1 round, top-1 evidence, no query formulation, consistency score); it still takes about 2 minutes
on 2 busy cores, so it lives apart from test_eval_e2e.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FACTDEBATE = Path(sys.executable).parent / "factdebate"


@pytest.mark.slow  # 20-50 s: `make test-slow` (.ci/run runs both tiers)
def test_embedded_model_eval_structure(wiki_index: Path, tmp_path: Path):
    pytest.importorskip("llama_cpp")
    out = tmp_path / "embedded"
    env = {**os.environ, "FACTDEBATE_HOME": str(tmp_path / "home")}
    env.pop("LANGSMITH_TRACING", None)
    done = subprocess.run(
        [str(FACTDEBATE), "eval", "--framework", "tool_mad", "--dataset", "fever", "--limit", "5",
         "--model", "local:smollm2", "--out", str(out), "--concurrency", "1",
         "--set", "rag_backend=keyword", "--set", f"index_dir={wiki_index}",
         "--set", "scoring_mode=consistency", "--set", "max_rounds=1", "--set", "top_k=1",
         "--set", "query_formulation=false"],
        capture_output=True, text=True, env=env, timeout=600, cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and len({r["item_id"] for r in rows}) == 5
    for row in rows:
        assert row["status"] == "ok", row.get("error")
        assert row["rounds"] == 1 and row["ledger"]["llm_calls"] >= 2
        assert row["ledger"]["completion_tokens"] > 0
        assert row["prediction"]["label"] in (None, "SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
        assert set(row["scores"]) == {"rag", "search"}
        assert "consistency" in row["scores"]["rag"]["rounds"][0]
        assert row["stopped_by"] in ("consensus", "judge")
    run = json.loads((out / "summary.json").read_text())["runs"][0]
    assert run["n_ok"] == 5 and 0.0 <= run["metrics"]["accuracy"] <= 1.0
    assert run["metrics"]["cost_usd"] == 0.0
    assert (out / "report.md").is_file() and (out / "accuracy_vs_rounds.png").is_file()
