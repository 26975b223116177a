"""Hostile inputs through the real CLI: one-line error naming problem and remedy,
non-zero exit, and no partial output a later run could mistake for complete.

Extends tests/integration/test_cli.py (empty and 5,000-char claims, unknown framework/model/
backend for ``verify``, locked index on ``verify``) and tests/unit/test_indexing_validation.py
(corpus validation in ``build_indexes``) - those cases are not repeated here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.tools.base import clear_retriever_cache
from factdebate.tools.indexing import index_exists

runner = CliRunner()
GOOD_PASSAGE = {"doc_id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is in Paris."}


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FACTDEBATE_INDEX_DIR", raising=False)


def one_line_error(result: Any, *needles: str, code: int | None = None) -> str:
    """The CLI failed with one ``error:`` line containing every needle, without a traceback."""
    assert result.exit_code != 0, result.output
    if code is not None:
        assert result.exit_code == code, result.stderr
    # (a library's progress bar may precede it on stderr; the error itself is one line)
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
                    encoding="utf-8")
    return path


# -- claims -------------------------------------------------------------------------------------
def test_one_megabyte_claim_on_stdin_is_rejected_before_any_work(tmp_path):
    result = runner.invoke(app, ["verify", "-", "--model", "scripted:agree", "--framework",
                                 "standard"], input="The tower is tall. " * 55_000)
    one_line_error(result, "over the limit of 4000", "shorten it")
    assert not (tmp_path / "home" / "checkpoints.sqlite").exists(), "no run was started"


def test_control_characters_are_stripped_and_the_claim_verified():
    claim = "The Eiffel\x00 Tower\x1b[31m is in\u202e Paris.\x07"
    result = runner.invoke(app, ["verify", claim, "--model", "scripted:agree", "--framework",
                                 "standard", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["claim"] == "The Eiffel Tower[31m is in Paris." and out["label"] == "SUPPORTS"


def test_a_claim_of_only_control_and_format_characters_is_empty():
    result = runner.invoke(app, ["verify", "\x00\x1b\u200b\u202e\ufeff", "--model",
                                 "scripted:agree", "--framework", "standard"])
    one_line_error(result, "empty", "non-empty claim")


# -- index --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("rows", "needles"), [
    ([json.dumps(GOOD_PASSAGE), b'{"doc_id": "d2", "title": "Caf\xe9", "text": "x"}'],
     ["line 2", "UTF-8"]),
    ([GOOD_PASSAGE, {**GOOD_PASSAGE, "text": "another"}], ["duplicate", "d1", "line 2"]),
    ([GOOD_PASSAGE, {"doc_id": "d2", "text": "no title"}], ["line 2", "title"]),
    ([GOOD_PASSAGE, '{"doc_id": "d3", "title": "T", "text": "x"'], ["line 2", "JSON"]),
], ids=["latin-1", "duplicate-ids", "missing-field", "malformed-line"])
def test_bad_corpus_leaves_no_index_behind(tmp_path, rows, needles):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"\n".join(r if isinstance(r, bytes) else
                                  (r if isinstance(r, str) else json.dumps(r)).encode()
                                  for r in rows) + b"\n")
    target = tmp_path / "index"
    result = runner.invoke(app, ["index", str(corpus), "--index-dir", str(target)])
    one_line_error(result, *needles)
    assert not target.exists() and not index_exists(target)
    assert not list(tmp_path.glob(".index.building-*")), "no staging folder left behind"
    later = runner.invoke(app, ["verify", "c", "--model", "scripted:agree", "--index-dir",
                                str(target)])
    one_line_error(later, "no index", "factdebate index")


def test_index_into_a_locked_milvus_lite_file_fails_cleanly_and_keeps_nothing(tmp_path):
    corpus = jsonl(tmp_path / "corpus.jsonl", [GOOD_PASSAGE])
    locked = tmp_path / "shared-milvus.db"
    clear_retriever_cache()
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import time; from factdebate.tools.milvus_rag import connect; "
            f"c = connect({str(locked)!r}, create=True); print('ready', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        target = tmp_path / "index"
        result = runner.invoke(app, ["index", str(corpus), "--index-dir", str(target),
                                     "--milvus-uri", str(locked)])
        one_line_error(result, "in use by another process", code=3)
        assert not target.exists() and not list(tmp_path.glob(".index.building-*"))
    finally:
        holder.kill()
        holder.wait()


# -- eval ---------------------------------------------------------------------------------------
CLAIMS = [{"id": f"c{i}", "claim": f"Claim number {i} is true.", "label": "SUPPORTS"}
          for i in range(3)]


def run_eval(dataset: str | Path, out: Path, *extra: str) -> Any:
    return runner.invoke(app, ["eval", "--framework", "standard", "--dataset", str(dataset),
                               "--model", "scripted:agree", "--out", str(out), *extra])


def assert_no_complete_output(out: Path) -> None:
    """Nothing a later ``--resume`` or report could take for a finished run."""
    for name in ("summary.json", "report.md", "results.jsonl"):
        assert not (out / name).exists(), f"{name} left behind"


def test_eval_control_run_succeeds(tmp_path):
    """The positive control of the cases below: the same command with a good file works."""
    result = run_eval(jsonl(tmp_path / "ok.jsonl", CLAIMS), tmp_path / "out")
    assert result.exit_code == 0, result.output
    rows = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert len(rows) == 3 and (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize(("rows", "needles"), [
    ([CLAIMS[0], '{"id": "c9", "claim": "broken', CLAIMS[1]], ["line 2", "not valid JSON"]),
    ([CLAIMS[0], "[1, 2]"], ["line 2", "JSON object"]),
    ([CLAIMS[0], {"id": "c1", "label": "SUPPORTS"}], ["line 2", "claim"]),
    ([CLAIMS[0], {**CLAIMS[1], "id": "c0"}], ["line 2", "duplicate id"]),
    ([CLAIMS[0], {**CLAIMS[1], "label": "MAYBE-ISH"}], ["line 2"]),
], ids=["malformed-json", "not-an-object", "missing-claim", "duplicate-id", "unknown-label"])
def test_eval_bad_jsonl_names_the_line_and_writes_nothing(tmp_path, rows, needles):
    out = tmp_path / "out"
    result = run_eval(jsonl(tmp_path / "bad.jsonl", rows), out)
    one_line_error(result, *needles)
    assert_no_complete_output(out)


def test_eval_non_utf8_file_names_the_line_and_writes_nothing(tmp_path):
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(json.dumps(CLAIMS[0]).encode() + b"\n"
                    + '{"id": "c1", "claim": "Café au lait", "label": "SUPPORTS"}\n'
                    .encode("latin-1"))
    out = tmp_path / "out"
    one_line_error(run_eval(bad, out), "line 2", "UTF-8")
    assert_no_complete_output(out)


@pytest.mark.parametrize(("args", "needles"), [
    (["--framework", "tool_madd"], ["did you mean 'tool_mad'"]),
    (["--dataset", "feverr"], ["did you mean"]),
    (["--model", "nosuch:model"], ["cannot load model"]),
    (["--set", "rag_backend=milvuss", "--framework", "rag"], ["did you mean 'milvus'"]),
    (["--dataset", "/nonexistent/items.jsonl"], ["does not exist"]),
], ids=["framework", "dataset", "model", "backend", "missing-file"])
def test_eval_unknown_names_fail_with_a_suggestion(tmp_path, args, needles):
    good = jsonl(tmp_path / "ok.jsonl", CLAIMS)
    out = tmp_path / "out"
    base = {"--framework": "standard", "--dataset": str(good), "--model": "scripted:agree"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    sets = [a for pair in zip(args[::2], args[1::2], strict=True) if pair[0] == "--set" for a in pair]
    cmd = ["eval", *[x for k, v in base.items() if k != "--set" for x in (k, v)], *sets,
           "--out", str(out)]
    one_line_error(runner.invoke(app, cmd), *needles)
    assert_no_complete_output(out)
