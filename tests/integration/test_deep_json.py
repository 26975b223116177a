"""JSON nested 100,000 deep in every outside format the CLI reads - a dump, the corpus format, an
eval dataset - is one ``error:`` line and exit 2 (or, in a dump after its first line, one skipped
page), never a RecursionError traceback (core/json_input.py). The installed command as a process."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from factdebate.core import json_input
from factdebate.tools.sources import open_source
from tests.fixtures.sources import fever_quirks
from tests.integration.cli_process import one_error_line, run_cli

DEEP = "[" * 100_000 + "]" * 100_000


def test_the_decoder_says_too_deep_as_a_json_error() -> None:
    try:
        json_input.loads(DEEP)
    except json.JSONDecodeError as exc:
        assert exc.msg == json_input.DEPTH_MESSAGE
    else:
        raise AssertionError("a 100,000-deep document decoded")


def test_a_deep_first_line_of_a_dump_is_one_line(tmp_path: Path) -> None:
    dump = tmp_path / "wiki-pages.zip"
    with zipfile.ZipFile(dump, "w") as zf:
        zf.writestr("wiki-pages/wiki-001.jsonl", DEEP + "\n" + fever_quirks.lines())
    done = run_cli(["index", str(dump), "--format", "fever-wiki", "--keyword-only",
                    "--index-dir", str(tmp_path / "index")], tmp_path / "home")
    assert done.returncode == 2
    assert "wiki-001.jsonl line 1: malformed JSON (nested deeper" in one_error_line(done)
    assert not (tmp_path / "index").exists()


def test_a_deep_line_later_in_a_dump_skips_that_page_only(tmp_path: Path) -> None:
    folder = tmp_path / "wiki-pages"
    folder.mkdir()
    (folder / "wiki-001.jsonl").write_text(fever_quirks.lines() + DEEP + "\n"
                                           + json.dumps({"id": "After", "lines": "0\tAfter ."}) + "\n")
    pages = [page for page, _ in open_source(folder, "fever-wiki").read(None)]
    deep = [p for p in pages if p.skip and "nested deeper" in p.skip]
    assert len(deep) == 1 and pages[-1].page == "After"


def test_a_deep_corpus_line_is_one_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"doc_id": "a", "title": "A", "text": "a"}) + "\n" + DEEP + "\n")
    done = run_cli(["index", str(corpus), "--format", "jsonl", "--index-dir",
                    str(tmp_path / "index")], tmp_path / "home")
    assert done.returncode == 2
    assert "nested deeper" in one_error_line(done)


@pytest.mark.slow  # the eval builds the demo index before it reads the dataset (~15 s): the slow tier
def test_a_deep_eval_dataset_line_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "claims.jsonl"
    data.write_text(json.dumps({"id": "c1", "claim": "x", "label": "SUPPORTS"}) + "\n" + DEEP + "\n")
    done = run_cli(["eval", "--framework", "tool_mad", "--dataset", str(data), "--model",
                    "scripted:agree", "--out", str(tmp_path / "run"), "--demo-index"],
                   tmp_path / "home")
    assert done.returncode == 2
    line = one_error_line(done)
    assert "line 2" in line and "nested deeper" in line
