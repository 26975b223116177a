"""What a faulty scorer and a debris-leaving extractor leave behind reaches the terminal as notes.

``verify`` and ``check`` run with the scripted double in the embedded model's fault modes: the
RAGAS judge finds no statements (faithfulness is NaN) and answers relevancy with text that is no
JSON (a pydantic validation error after the re-ask), the debaters cite ids they were never shown
(``?cite=wrong``), extraction leaves markup debris (``scripted:check_text_debris``'s replies).
The terminal shows one line per kind with counts - no raw dict, no validation dump, no line
break inside a note - and ``--json`` keeps every flag. The HTML report's passage excerpts end at
a word with an ellipsis.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.notes import summarise
from factdebate.testing.scenarios_check_text import respond_with_debris
from factdebate.testing.script import ScriptCall

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tools" / "demo_corpus" / "passages.jsonl"
CLAIM = "The Eiffel Tower is 330 metres tall."
TEXT = ("The Eiffel Tower in Paris was completed in 1889. It is 330 metres tall; it was designed "
        "by Gustave Eiffel's company.\nMount Everest is 9,999 metres high.")
runner = CliRunner()
# conftest.py: cli_home (FACTDEBATE_HOME per test), demo_head_index (40 demo passages)
pytestmark = pytest.mark.usefixtures("cli_home")


def faulty_scorer(call: ScriptCall) -> Any:
    """``check_text_debris``'s replies; the RAGAS judge finds no statements and answers relevancy
    with text that is no JSON."""
    if call.role == "ragas":
        if call.schema_name == "StatementGeneratorOutput":
            return {"statements": []}
        return "I cannot answer that {"
    return respond_with_debris(call)


def run(command: str, what: str, index_dir: Path, model: str, *args: str) -> Any:
    result = runner.invoke(app, [command, what, "--model", model, "--index-dir", str(index_dir),
                                 "--rag-backend", "keyword", "--search-backend", "local_search",
                                 *args])
    assert result.exit_code == 0, result.output
    return result


def notes_of(stdout: str) -> list[str]:
    return [line.removeprefix("note: ") for line in stdout.splitlines()
            if line.startswith("note: ")]


def assert_readable(notes: list[str]) -> None:
    for note in notes:
        assert "{'" not in note and "ValidationError" not in note, note
        assert "validation error" not in note and "[type=" not in note, note


def test_verify_notes_are_grouped_lines_and_json_keeps_every_flag(demo_head_index, scenario):
    model = scenario(faulty_scorer) + "?cite=wrong"
    args = ("--rounds", "2", "--set", "scoring_mode=stability")
    shown = run("verify", CLAIM, demo_head_index, model, *args)
    notes = notes_of(shown.stdout)
    assert_readable(notes)
    assert "faithfulness could not be scored in 4 of 4 turns: the scorer found no statements" \
        in notes
    assert "answer_relevancy could not be scored in 4 of 4 turns: the scorer's reply was " \
        "unreadable" in notes
    assert any(n.startswith("citation checks: ") and "cited passages never shown" in n
               for n in notes)
    assert sum("could not be scored" in n for n in notes) == 2
    assert sum(n.startswith("citation") for n in notes) == 1

    out = json.loads(run("verify", CLAIM, demo_head_index, model, *args, "--json").stdout)
    flags = out["flags"]
    scored = [f for f in flags if f.startswith("score: ")]
    assert len(scored) == 8  # 2 agents x 2 rounds x 2 metrics, each kept in --json
    assert all(re.fullmatch(r"score: agent (rag|search) round [12]: (faithfulness|"
                            r"answer_relevancy) could not be scored \(.+\)", f) for f in scored)
    unreadable = [f for f in scored if "answer_relevancy" in f]
    assert all("AnswerRelevanceOutput" in f and "\n" not in f for f in unreadable)  # the detail
    assert sum(f.startswith("citation: ") for f in flags) >= 4
    assert notes == summarise(flags, turns=len(out["turns"]))


def test_check_with_debris_and_a_faulty_scorer_notes_per_kind(demo_head_index, scenario, tmp_path):
    source = tmp_path / "text.txt"
    source.write_text(TEXT, encoding="utf-8")
    model = scenario(faulty_scorer)
    args = ("--rounds", "1", "--set", "scoring_mode=stability")
    out = json.loads(run("check", str(source), demo_head_index, model, *args, "--json").stdout)
    turns = sum(len(c.get("turns") or []) for c in out["check"]["claims"])
    assert turns >= 6
    flags = out["flags"]
    assert any("could not be scored" in f for f in flags)
    assert any(f.startswith("claim ") or "(claims " in f for f in flags)

    shown = run("check", str(source), demo_head_index, model, *args)
    notes = notes_of(shown.stdout)
    assert_readable(notes)
    assert f"faithfulness could not be scored in {turns} of {turns} turns" in " ".join(notes)
    assert sum("faithfulness could not be scored" in n for n in notes) == 1
    assert len(notes) < len(flags)
    assert f"({len(flags)} flags in all: --json lists each)" in shown.stdout
    assert notes == summarise(flags, turns=turns)
    report = tmp_path / "report.html"  # the HTML report shows the same grouped notes
    run("check", str(source), demo_head_index, model, *args, "--out", str(report))
    shown_html = [html.unescape(n) for n in
                  re.findall(r"<p class='flag'>note: ([^<]*)</p>", report.read_text("utf-8"))]
    assert shown_html[-len(notes):] == notes  # after each claim's own grouped notes
    assert_readable(shown_html)


_EXCERPT = re.compile(r"<br>([^<]+)</li>")  # a turn's passage text after its title line


def test_html_report_excerpts_end_at_a_word(demo_head_index, tmp_path):
    source = tmp_path / "text.txt"
    source.write_text(TEXT, encoding="utf-8")
    report = tmp_path / "report.html"
    run("check", str(source), demo_head_index, "scripted:check_text", "--rounds", "1",
        "--set", "scoring_mode=none", "--out", str(report))
    passages = [" ".join(json.loads(line)["text"].split())
                for line in DEMO.read_text(encoding="utf-8").splitlines()[:40]]
    excerpts = [html.unescape(t) for t in _EXCERPT.findall(report.read_text(encoding="utf-8"))]
    assert excerpts
    cut = [e for e in excerpts if e not in passages]
    assert cut, "no passage was long enough to be cut"
    for text in cut:
        assert text.endswith("…"), f"cut without an ellipsis: {text[-40:]!r}"
        kept = text[:-1]
        whole = [p for p in passages if p.startswith(kept)]
        assert whole, f"not the start of a passage: {kept[:60]!r}"
        assert any(re.match(r"[,;:\-–—]*\s", p[len(kept):]) for p in whole), \
            f"cut mid-word: {kept[-40:]!r}"
