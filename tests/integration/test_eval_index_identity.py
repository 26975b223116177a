"""The index behind every figure, the retrieval ceiling, no benchmark silently
over the demo corpus.

Real components: the ``factdebate`` CLI in subprocesses, a tiny data folder written here (a FEVER
file of five claims and a four-page ``corpus/wiki.jsonl``), the real index build (Milvus Lite +
tantivy, MiniLM embeddings) into ``$FACTDEBATE_HOME``, SQLite checkpoints. The model is the
scripted double: what is tested is which index a run searches and what its results say about it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # corpus indexing and several evaluations: the slow tier (CI runs it)

FACTDEBATE = Path(sys.executable).parent / "factdebate"
CORPUS = [("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris."),
          ("Mount Everest", "Mount Everest is Earth's highest mountain above sea level."),
          ("Paris", "Paris is the capital and largest city of France."),
          ("Marie Curie", "Marie Curie won Nobel Prizes in physics and chemistry.")]
CLAIMS = [  # 4 verifiable claims: the gold pages of the first two are in the corpus -> ceiling 0.5
    ("fever-1", "The Eiffel Tower is in Paris.", "SUPPORTS", [["Eiffel_Tower"]]),
    ("fever-2", "Mount Everest is in Peru.", "REFUTES", [["Mount_Everest"]]),
    ("fever-3", "The Danube flows through Vienna.", "SUPPORTS", [["Danube"]]),
    ("fever-4", "Paris lies on Atlantis.", "REFUTES", [["Paris", "Atlantis"]]),  # half a set
    ("fever-5", "Paris has a famous bakery.", "NOT ENOUGH INFO", []),
]
FAST = ["--set", "rag_backend=keyword", "--set", "scoring_mode=none"]


def write_corpus(path: Path, pages: list[tuple[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"doc_id": f"wiki-{i}", "title": t, "text": x}) + "\n"
                            for i, (t, x) in enumerate(pages)), encoding="utf-8")
    return path


def write_data(folder: Path, *, corpus: bool) -> Path:
    (folder / "fever").mkdir(parents=True)
    (folder / "fever" / "paper_dev.jsonl").write_text("".join(json.dumps({
        "id": i, "dataset": "fever", "split": "paper_dev", "task": "claim_verification",
        "claim": c, "label": lab,
        "evidence_sets": [[{"page": p, "sent_id": 0} for p in s] for s in sets]}) + "\n"
        for i, c, lab, sets in CLAIMS), encoding="utf-8")
    if corpus:
        write_corpus(folder / "corpus" / "wiki.jsonl", CORPUS)
    return folder


def cli(args: list[str], home: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "FACTDEBATE_HOME": str(home)}
    for name in ("FACTDEBATE_DATA_DIR", "FACTDEBATE_INDEX_DIR", "FACTDEBATE_MILVUS_URI",
                 "LANGSMITH_TRACING"):
        env.pop(name, None)
    return subprocess.run([str(FACTDEBATE), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def eval_args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "--framework", "tool_mad", "--dataset", "fever", "--data-dir", str(data),
            "--limit", "5", "--model", "scripted:agree", "--out", str(out), *FAST, *extra]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("idx31")
    data, home = write_data(root / "data", corpus=True), root / "home"
    done = cli(eval_args(data, root / "first"), home)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"root": root, "data": data, "home": home, "out": root / "first", "done": done}


def test_no_index_named_searches_the_data_folders_corpus_indexed_once(first_run):
    data, home, out = first_run["data"], first_run["home"], first_run["out"]
    corpus = data / "corpus" / "wiki.jsonl"
    sha = hashlib.sha256(corpus.read_bytes()).hexdigest()
    stderr = " ".join(first_run["done"].stderr.split())
    assert f"indexing the data folder's corpus {corpus}" in stderr
    assert not (home / "index").exists()  # the demo corpus was never indexed, let alone searched
    record = json.loads((out / "run.json").read_text())
    index = record["index"]
    assert (index["corpus"], index["corpus_sha256"], index["passages"]) == (str(corpus), sha, 4)
    assert index["embedding_model"] == "minilm" and index["status"] == "ok"
    assert not index["demo"] and index["keyword_index"]["kind"] == "tantivy BM25"
    assert index["vector_index"]["index_type"] and index["built"]
    assert Path(index["index_dir"]).parent == home / "corpora"
    assert record["context"]["index_dir"] == index["index_dir"]
    run = json.loads((out / "summary.json").read_text())["runs"][0]
    assert run["index"]["corpus_sha256"] == sha and run["index"]["passages"] == 4
    report = (out / "report.md").read_text()
    head = report.split("## Caveats")[0]
    assert str(corpus) in head and sha[:16] in head and "4 passages" in head
    assert "embeddings minilm" in head
    assert "Index searched: corpus" in (out / "report.html").read_text()
    # the same command again: the index is reused, not built again
    again = cli(eval_args(data, first_run["root"] / "second"), home)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "(reused)" in again.stderr and "indexing the data folder" not in again.stderr
    second = json.loads((first_run["root"] / "second" / "run.json").read_text())["index"]
    assert (second["index_dir"], second["built"]) == (index["index_dir"], index["built"])


def test_every_evidence_figure_has_its_ceiling_and_n(first_run):
    out = first_run["out"]
    rows = {r["item_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {i: (r.get("gold_in_index") or {}).get("page") for i, r in rows.items()} == {
        "fever-1": True, "fever-2": True, "fever-3": False, "fever-4": False, "fever-5": None}
    ev = json.loads((out / "summary.json").read_text())["runs"][0]["evidence"]
    assert ev["ceiling"]["share"] == 0.5 and ev["ceiling"]["n"] == 4
    assert ev["ceiling"]["page"] == {"share": 0.5, "in_index": 2, "n": 4}
    for key in ("page", "fever", "retrieval"):
        assert (ev[key]["ceiling"], ev[key]["ceiling_n"]) == (0.5, 4), key
    assert (ev["headline"]["ceiling"], ev["headline"]["ceiling_n"]) == (0.5, 4)
    report = (out / "report.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| Framework (model)"))
    assert "| fever: FEVER score (page level) | fever: ceiling (gold in index) |" in header
    row = next(line for line in report.splitlines() if line.startswith("| tool_mad (scripted"))
    assert row.split(" | ")[3] == "50.0 (n=4)"  # framework | acc | FEVER score | ceiling
    assert "Ceiling: gold in index" in report and "**low retrieval ceiling**" not in report
    printed = " ".join(first_run["done"].stdout.split())
    assert "page level 0.500 (2 of 4 items)" in printed
    assert "ceiling (gold in index) 0.500 (n=4)" in printed


def test_without_a_corpus_eval_stops_with_the_command_to_run(tmp_path):
    data, home = write_data(tmp_path / "data", corpus=False), tmp_path / "home"
    done = cli(eval_args(data, tmp_path / "out"), home, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    line = " ".join(done.stderr.split())
    assert "none is named" in line and "factdebate index CORPUS.jsonl" in line
    assert "--demo-index" in line
    assert not (tmp_path / "out").exists() and not (home / "index").exists()


def test_resume_over_an_index_rebuilt_from_another_corpus_is_refused(first_run, tmp_path):
    from factdebate.tools.indexing import build_indexes

    index = tmp_path / "named-index"
    build_indexes(first_run["data"] / "corpus" / "wiki.jsonl", index)
    out = tmp_path / "run"
    args = eval_args(first_run["data"], out, "--set", f"index_dir={index}")
    args[args.index("--limit") + 1] = "2"
    done = cli(args, first_run["home"])
    assert done.returncode == 0, done.stderr[-3000:]
    same = cli([*args, "--resume"], first_run["home"])
    assert same.returncode == 0, same.stderr[-3000:]  # the same index: the resume is accepted
    other = write_corpus(tmp_path / "other.jsonl", [("Danube", "The Danube flows through Vienna."),
                                                    *CORPUS[:2]])
    build_indexes(other, index, replace=True)
    refused = cli([*args, "--resume"], first_run["home"])
    assert refused.returncode == 2, refused.stderr[-3000:]
    line = " ".join(refused.stderr.split())
    assert "the index changed since the run started" in line and str(other) in line
