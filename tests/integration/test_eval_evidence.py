"""``factdebate eval`` scores the cited evidence end to end on a tiny FEVEROUS-shaped
fixture: the summary printed, summary.json, report.md, report.html and ``compare`` carry evidence
precision/recall/F1 and the FEVER score with their n; ``?cite=wrong`` shows up as hallucinated
citations.

Real components: the CLI (in-process), a real index (keyword + Milvus Lite) built in tmp from a
six-passage corpus written here, SQLite checkpoints. The model is the scripted double: bookkeeping
is tested, never evidence quality. No shared data: the claims and passages are made up here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app

CORPUS = [
    ("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris. The tower was "
                     "built by the company of Gustave Eiffel for the 1889 World's Fair."),
    ("Gustave Eiffel", "Gustave Eiffel was a French civil engineer."),
    ("Louvre", "The Louvre is a national art museum in Paris. The Louvre is the world's "
               "most-visited museum."),
    ("Mount Fuji", "Mount Fuji is the highest mountain in Japan. It is an active stratovolcano."),
    ("Paris", "Paris is the capital and largest city of France."),
    ("Rhine", "The Rhine is a river that rises in the Swiss Alps."),
]
ITEMS = [  # FEVEROUS shape: gold sentences with [[link|anchor]] markup
    ("The Eiffel Tower was built by the company of Gustave Eiffel for the 1889 World's Fair.",
     "SUPPORTS", [("Eiffel Tower", "The tower was built by the company of [[Gustave_Eiffel|Gustave "
                                   "Eiffel]] for the [[Exposition_Universelle_(1889)|1889 World's "
                                   "Fair]].")]),
    ("The Louvre is the world's least-visited museum.", "REFUTES",
     [("Louvre", "The Louvre is the world's most-visited museum.")]),
    ("Mount Fuji is the highest mountain in Japan and an active volcano.", "SUPPORTS",
     [("Mount Fuji", "Mount Fuji is the highest mountain in Japan."),
      ("Mount Fuji", "It is an active stratovolcano.")]),
    ("The Danube flows through ten countries.", "SUPPORTS",  # its page is not in the corpus
     [("Danube", "The Danube flows through ten countries.")]),
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from factdebate.tools.base import clear_retriever_cache
    from factdebate.tools.indexing import build_indexes

    root = tmp_path_factory.mktemp("evidence")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": f"wiki-{i}", "title": t, "text": x}) + "\n"
                              for i, (t, x) in enumerate(CORPUS)), encoding="utf-8")
    build_indexes(corpus, root / "index")
    clear_retriever_cache()
    data = root / "feverous_tiny.jsonl"
    data.write_text("".join(json.dumps({
        "id": f"feverous-{i}", "dataset": "feverous", "task": "claim_verification",
        "claim": claim, "label": label,
        "evidence": [{"title": t, "text": s} for t, s in gold]}) + "\n"
        for i, (claim, label, gold) in enumerate(ITEMS)), encoding="utf-8")
    return {"root": root, "index": root / "index", "data": data}


def run_eval(setup: dict[str, Path], name: str, model: str,
             monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    out = setup["root"] / name
    monkeypatch.setenv("FACTDEBATE_HOME", str(setup["root"] / "home"))
    monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
    done = CliRunner().invoke(app, [
        "eval", "--framework", "tool_mad", "--dataset", str(setup["data"]), "--limit", "4",
        "--model", model, "--out", str(out), "--set", "rag_backend=keyword",
        "--set", f"index_dir={setup['index']}", "--concurrency", "2"])
    assert done.exit_code == 0, done.output
    return out, done.stdout


def test_eval_prints_and_writes_evidence_metrics(setup, monkeypatch):
    out, printed = run_eval(setup, "shown", "scripted:agree", monkeypatch)
    text = " ".join(printed.split())
    assert "sentence level by text: precision" in text and "recall" in text and "F1" in text
    assert "(n=4 items with gold evidence)" in text
    assert "FEVER score" in text and "(n=4; first 5 cited passages)" in text
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["gold"]["evidence"]["kind"] == "feverous" for r in rows)
    assert all(isinstance(r["evidence"], list) and isinstance(r["retrieved"], list) for r in rows)
    titles = {t for t, _ in CORPUS}
    assert {p["title"] for r in rows for p in r["evidence"]} <= titles  # cited from the corpus
    ev = json.loads((out / "summary.json").read_text())["runs"][0]["evidence"]
    assert ev["level"] == "sentence" and ev["n_with_gold"] == 4
    assert ev["page"]["n"] == ev["sentence"]["n"] == ev["fever"]["n"] == 4
    assert 0 <= ev["fever"]["score"] <= ev["fever"]["label_accuracy"] <= 1
    assert ev["retrieval"]["not_retrieved"] >= 0.25  # the Danube page is in no index
    assert ev["citations"]["hallucinated"] == 0.0
    report = (out / "report.md").read_text()
    assert "feverous_tiny: FEVER score" in report and "### Retrieval vs citation" in report
    assert "<h2>Evidence</h2>" in (out / "report.html").read_text()


def test_unshown_citations_are_counted_and_compare_pairs_evidence(setup, monkeypatch):
    shown = setup["root"] / "shown"
    if not shown.exists():
        shown, _ = run_eval(setup, "shown", "scripted:agree", monkeypatch)
    wrong, _ = run_eval(setup, "wrong", "scripted:agree?cite=wrong", monkeypatch)
    ev = json.loads((wrong / "summary.json").read_text())["runs"][0]["evidence"]
    assert ev["citations"]["hallucinated"] == 1.0 and ev["citations"]["unshown_total"] >= 4
    done = CliRunner().invoke(app, ["compare", str(shown), str(wrong)])
    assert done.exit_code == 0, done.output
    text = " ".join(done.stdout.split())
    assert "Evidence, paired" in text and "FEVER score" in text
