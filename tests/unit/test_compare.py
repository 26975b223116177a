"""``factdebate compare``: McNemar's exact test, small-n warning, run names by
differing settings, and a wide table that is not cut when stdout is not a terminal."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.evaluation.compare import compare_outputs, mcnemar_exact, paired_bootstrap

CONTEXT = {"debater_model": "scripted:agree", "max_rounds": 3, "stop_rule": "round_ge",
           "debaters": ["rag", "search"], "top_k": 3}


def write_run(folder: Path, outcomes: list[bool], **settings: object) -> Path:
    """A run folder with ``run.json`` and one ok row per outcome (correct or not)."""
    folder.mkdir(parents=True)
    ids = [f"fever-{i}" for i in range(len(outcomes))]
    record = {"run_id": folder.name, "framework": "tool_mad", "dataset": "fever",
              "item_ids": ids, "models": {"debater": "scripted:agree"},
              "context": {**CONTEXT, **settings}, "seed": 0}
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    rows = [{"item_id": i, "status": "ok", "task": "fever", "gold": {"label": "SUPPORTS"},
             "prediction": {"label": "SUPPORTS" if ok else "REFUTES"}}
            for i, ok in zip(ids, outcomes, strict=True)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                          encoding="utf-8")
    return folder


def test_mcnemar_exact_matches_the_binomial_tail():
    a = [1.0] * 10 + [1.0] + [0.0] * 6 + [0.0] * 3  # 1 item only A right, 6 only B right
    b = [1.0] * 10 + [0.0] + [1.0] * 6 + [0.0] * 3
    out = mcnemar_exact(a, b)
    assert (out["b_only_correct"], out["a_only_correct"]) == (6, 1)
    assert out["mcnemar_p"] == pytest.approx(2 * (comb(7, 0) + comb(7, 1)) / 2**7)  # 0.125
    assert mcnemar_exact([1.0, 0.0], [1.0, 0.0])["mcnemar_p"] == 1.0  # no discordant pair
    assert mcnemar_exact([1.0] * 3, [0.0] * 3)["mcnemar_p"] == pytest.approx(0.25)
    assert mcnemar_exact([0.0] * 12, [1.0] * 12)["mcnemar_p"] == pytest.approx(2 / 2**12)


def test_bootstrap_and_mcnemar_agree_on_direction():
    a, b = [0.0] * 40 + [1.0] * 60, [1.0] * 100
    boot, exact = paired_bootstrap(a, b), mcnemar_exact(a, b)
    assert boot["delta"] == pytest.approx(0.4) and boot["ci95"][0] > 0
    assert boot["p_value"] < 0.001 and exact["mcnemar_p"] < 1e-10


def test_runs_are_named_by_their_differing_settings(tmp_path: Path):
    a = write_run(tmp_path / "a", [True, False, True, True], stop_rule="round_ge")
    b = write_run(tmp_path / "b", [True, True, True, True], stop_rule="accumulated_gt",
                  debaters=["rag", "rag"])
    [result] = compare_outputs(a, b)
    assert result["a"] == "tool_mad/fever (scripted:agree) debaters=rag,search stop_rule=round_ge"
    assert result["b"] == "tool_mad/fever (scripted:agree) debaters=rag,rag " \
                          "stop_rule=accumulated_gt"
    assert (result["n"], result["b_only_correct"], result["a_only_correct"]) == (4, 1, 0)
    assert result["mcnemar_p"] == 1.0
    assert result["warnings"] and "only 4 shared item(s)" in result["warnings"][0]


def test_enough_shared_items_carry_no_warning(tmp_path: Path):
    a = write_run(tmp_path / "a", [True, False] * 20)
    b = write_run(tmp_path / "b", [True] * 40)
    [result] = compare_outputs(a, b)
    assert result["warnings"] == [] and result["a"] == result["b"]  # no differing setting
    assert result["a"] == "tool_mad/fever (scripted:agree)"


def test_cli_table_is_not_cut_when_piped(tmp_path: Path):
    long = "a-very-long-setting-value-that-would-not-fit-in-eighty-columns-at-all"
    a = write_run(tmp_path / "a", [True, False, True], scoring_model=long + "-A")
    b = write_run(tmp_path / "b", [True, True, True], scoring_model=long + "-B")
    done = CliRunner().invoke(app, ["compare", str(a), str(b)])
    assert done.exit_code == 0, done.output
    assert f"scoring_model={long}-A" in done.stdout and f"scoring_model={long}-B" in done.stdout
    assert "…" not in done.stdout
    assert "p (McNemar exact)" in done.stdout and "1 / 0" in done.stdout
    assert "warning:" in done.stderr and "only 3 shared item(s)" in done.stderr
