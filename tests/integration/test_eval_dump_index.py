"""``eval`` over indexes imported from the papers' dumps: found by name, sentence-level evidence
scores, a retrieval ceiling of 1.0 where the gold pages are in the dump, AVeriTeC per-claim pools.

Real components: the ``factdebate`` CLI in process (``index DUMP --format ...`` and ``eval``), dump
fixtures written here in the official formats (FEVER ``wiki-pages`` JSON lines, HotpotQA's
bz2-compressed abstracts for HoVer, FEVEROUS' SQLite ``wiki`` table, AVeriTeC's per-claim
knowledge store), tantivy keyword indexes (``--keyword-only``: the debaters search with
``rag_backend=keyword`` and the ``local_search`` stand-in), SQLite checkpoints. The model is the
scripted double: what is tested is which passages reach the rows and how they are scored, not a
model's accuracy. No shared data: pages and claims are made up here.
"""

from __future__ import annotations

import bz2
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app

FAST = ["--model", "scripted:agree", "--set", "rag_backend=keyword", "--set",
        "scoring_mode=none", "--concurrency", "1"]

FEVER_PAGES = {  # wiki-pages lines: "N<TAB>sentence<TAB>links..."
    "Soul_Food_-LRB-film-RRB-": ["Soul Food is a 1997 American comedy-drama film.",
                                 "It was directed by George Tillman Jr. in Chicago.",
                                 "The film stars Vanessa L. Williams."],
    "George_Tillman_Jr.": ["George Tillman Jr. is an American film director.",
                           "He was born in Milwaukee."],
    "Milwaukee": ["Milwaukee is the largest city in Wisconsin."],
}
FEVER_CLAIMS = [
    ("fever-1", "Soul Food was directed by George Tillman Jr.", "SUPPORTS",
     [[("Soul_Food_-LRB-film-RRB-", 1)]]),
    ("fever-2", "George Tillman Jr. was born in Chicago.", "REFUTES",
     [[("George_Tillman_Jr.", 1)], [("George_Tillman_Jr.", 0), ("Milwaukee", 0)]]),
    ("fever-3", "Soul Food was a box office record.", "NOT ENOUGH INFO", []),
]
HOVER_PAGES = {  # HotpotQA abstracts: title and a list of sentences
    "Vanessa L. Williams": ["Vanessa Lynn Williams is an American singer and actress.",
                            " She was the first African-American Miss America, in 1984."],
    "Miss America": ["Miss America is a competition held annually in the United States."],
}
HOVER_CLAIMS = [
    ("hover-1", "The first African-American Miss America won a competition held annually in the "
                "United States.", "SUPPORTS",
     [("Vanessa L. Williams", 1), ("Miss America", 0)]),
    ("hover-2", "Vanessa Lynn Williams is a Canadian singer.", "REFUTES",
     [("Vanessa L. Williams", 0)]),
]
FEVEROUS_PAGES = {  # the FEVEROUS database: page JSON with its elements in order
    "Korean Air": {"order": ["sentence_0", "table_0"],
                   "sentence_0": "Korean Air is the flag carrier of [[South_Korea|South Korea]].",
                   "table_0": {"table": [[{"id": "cell_0_0_0", "value": "Founded"},
                                          {"id": "cell_0_0_1", "value": "1969"}]]}},
    "Incheon": {"order": ["sentence_0"],
                "sentence_0": "Incheon is a city in the northwest of South Korea."},
}
FEVEROUS_CLAIMS = [  # the FEVEROUS release's evidence: element ids after the page title
    ("feverous-1", "Korean Air, the flag carrier of South Korea, was founded in 1969.",
     "SUPPORTS", [["Korean Air_sentence_0", "Korean Air_cell_0_0_1"]]),
    ("feverous-2", "Incheon is a city in the southeast of South Korea.", "REFUTES",
     [["Incheon_sentence_0"]]),
]
STORE = {  # AVeriTeC knowledge store: claim id -> pages (url, sentences) retrieved for it
    "0": [("https://example.org/moon", ["Apollo 11 landed on the Moon in July 1969.",
                                        "Its crew walked on the lunar surface."])],
    # the other claim's pool holds the words of claim 0: unfiltered, BM25 would rank it first
    "1": [("https://example.org/studio", ["The Moon landing was filmed in a studio, a hoax "
                                          "site claims.", "The Moon landing was not filmed."])],
}
AVERITEC_CLAIMS = [("averitec-dev-0", "The Moon landing was filmed in a studio.", "REFUTES"),
                   ("averitec-dev-1", "A website claims a hoax about a film studio.", "SUPPORTS")]


def write_dumps(root: Path) -> dict[str, Path]:
    """Each dump in its official layout, and the datasets whose gold evidence points into it."""
    wiki = root / "wiki-pages"
    wiki.mkdir(parents=True)
    (wiki / "wiki-001.jsonl").write_text("".join(json.dumps({
        "id": page, "text": " ".join(lines),
        "lines": "\n".join(f"{i}\t{s}\t" for i, s in enumerate(lines))}) + "\n"
        for page, lines in FEVER_PAGES.items()), encoding="utf-8")
    hover = root / "hotpot" / "AA"
    hover.mkdir(parents=True)
    (hover / "wiki_00.bz2").write_bytes(bz2.compress("".join(json.dumps({
        "id": str(i), "url": f"https://en.wikipedia.org/wiki?curid={i}", "title": title,
        "text": sentences}) + "\n" for i, (title, sentences) in enumerate(HOVER_PAGES.items()))
        .encode()))
    db = root / "feverous_wikiv1.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE wiki (id TEXT, data TEXT)")
        con.executemany("INSERT INTO wiki VALUES (?, ?)",
                        [(t, json.dumps({"title": t, **page})) for t, page in FEVEROUS_PAGES.items()])
    con.close()
    store = root / "knowledge_store"
    store.mkdir()
    for claim, pages in STORE.items():
        (store / f"{claim}.json").write_text("".join(json.dumps({
            "claim_id": claim, "type": "Google", "query": "q", "url": url, "url2text": text}) + "\n"
            for url, text in pages), encoding="utf-8")
    return {"fever-wiki": wiki, "hover-wiki": root / "hotpot", "feverous-db": db,
            "averitec-store": store}


def write_datasets(root: Path) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)

    def jsonl(name: str, records: list[dict[str, Any]]) -> Path:
        path = root / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        return path

    return {
        "fever": jsonl("fever", [{"id": i, "dataset": "fever", "claim": c, "label": lab,
                                  "evidence_sets": [[{"page": p, "sent_id": n} for p, n in s]
                                                    for s in sets]}
                                 for i, c, lab, sets in FEVER_CLAIMS]),
        "hover": jsonl("hover", [{"id": i, "dataset": "hover", "claim": c, "label": lab,
                                  "num_hops": 2, "evidence_sets": [
                                      [{"page": p, "sent_id": n} for p, n in facts]]}
                                 for i, c, lab, facts in HOVER_CLAIMS]),
        "feverous": jsonl("feverous", [{"id": i, "claim": c, "label": lab, "evidence": [
            {"content": ids, "context": {}} for ids in sets]} for i, c, lab, sets in FEVEROUS_CLAIMS]),
        "averitec": jsonl("averitec", [{"id": i, "dataset": "averitec", "claim": c, "label": lab}
                                       for i, c, lab in AVERITEC_CLAIMS]),
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every dump indexed by ``factdebate index --format`` into ``$FACTDEBATE_HOME/indexes/``."""
    from factdebate.tools.base import clear_retriever_cache

    root = tmp_path_factory.mktemp("dumps")
    home = root / "home"
    patch = pytest.MonkeyPatch()
    patch.setenv("FACTDEBATE_HOME", str(home))
    for name in ("FACTDEBATE_DATA_DIR", "FACTDEBATE_INDEX_DIR", "FACTDEBATE_MILVUS_URI",
                 "LANGSMITH_TRACING"):
        patch.delenv(name, raising=False)
    dumps = write_dumps(root / "dumps")
    for fmt, path in dumps.items():
        done = CliRunner().invoke(app, ["index", str(path), "--format", fmt, "--keyword-only",
                                        "--index-dir", str(home / "indexes" / fmt)])
        assert done.exit_code == 0, done.output
    clear_retriever_cache()
    yield {"root": root, "home": home, "data": write_datasets(root / "data")}
    patch.undo()


def run_eval(built: dict[str, Any], dataset: str, index: str, *extra: str) -> dict[str, Any]:
    out = built["root"] / f"run-{dataset}-{len(list(built['root'].glob('run-*')))}"
    done = CliRunner().invoke(app, ["eval", "--framework", "tool_mad", "--dataset",
                                    str(built["data"][dataset]), "--index", index,
                                    "--out", str(out), *FAST, *extra])
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {"out": out, "printed": " ".join(done.stdout.split()), "rows": rows,
            "record": json.loads((out / "run.json").read_text()),
            "evidence": json.loads((out / "summary.json").read_text())["runs"][0]["evidence"]}


@pytest.mark.parametrize("dataset,index", [("fever", "fever-wiki"), ("hover", "hover-wiki"),
                                           ("feverous", "feverous-db")])
def test_imported_dump_gives_ceiling_one_and_sentence_level_scores(built, dataset, index):
    run = run_eval(built, dataset, index)
    record, ev = run["record"], run["evidence"]
    assert record["index"]["name"] == index and record["index"]["status"] == "ok"
    assert record["index"]["index_dir"] == str(built["home"] / "indexes" / index)
    # every passage the rows saw is an imported one: page id and sentence ids of the contract
    seen = [p for r in run["rows"] for p in r["evidence"] + r["retrieved"]]
    assert seen and all(p["page"] and p["sentences"] for p in seen), seen[:2]
    assert any(r["evidence"] for r in run["rows"])  # the scripted debaters cite passages
    with_gold = [r for r in run["rows"] if r["gold"]["evidence"]["sets"]]
    assert all(r["gold_in_index"]["sentence"] and r["gold_in_index"]["page"] for r in with_gold)
    assert ev["ceiling"]["level"] == "sentence" and ev["ceiling"]["share"] == 1.0
    assert ev["ceiling"]["n"] == len(with_gold)
    assert (ev["level"], ev["basis"], ev["n_page_level"]) == ("sentence", "ids", 0)
    assert ev["sentence"]["n"] == len(with_gold) and 0 <= ev["sentence"]["f1"] <= 1
    assert ev["sentence"]["ceiling"] == 1.0
    assert f"ceiling (gold in index) 1.000 (n={len(with_gold)})" in run["printed"]
    assert "sentence level by ids: precision" in run["printed"]
    if dataset in ("fever", "feverous"):
        assert ev["fever"]["level"] == "sentence" and ev["headline"]["name"] == "FEVER score"
    if dataset == "hover":
        assert ev["hover"]["level"] == "sentence"
    assert f"index {index!r}" in " ".join((run["out"] / "report.md").read_text().split()) or \
        str(built["home"] / "indexes" / index) in (run["out"] / "report.md").read_text()


def test_an_averitec_claim_searches_only_its_own_pool(built):
    run = run_eval(built, "averitec", "averitec-store")
    rows = {r["item_id"]: r for r in run["rows"]}
    assert set(rows) == {"averitec-dev-0", "averitec-dev-1"}
    for item_id, row in rows.items():
        claim = item_id.rsplit("-", 1)[1]
        seen = row["evidence"] + row["retrieved"]
        assert seen, f"{item_id} retrieved nothing"
        assert {p["pool"] for p in seen} == {claim}, (item_id, [p["id"] for p in seen])
        other = {url for c, pages in STORE.items() if c != claim for url, _ in pages}
        assert not {p["page"] for p in seen} & other
    assert run["record"]["index"]["name"] == "averitec-store"


def test_index_names_are_checked_before_anything_is_written(built):
    out = built["root"] / "refused"
    done = CliRunner().invoke(app, ["eval", "--framework", "tool_mad", "--dataset",
                                    str(built["data"]["fever"]), "--index", "no-such-index",
                                    "--out", str(out), *FAST])
    assert done.exit_code != 0
    flat = " ".join(done.output.split())
    assert "--index 'no-such-index': no index of that name" in flat  # core.context.resolve_index
    assert "averitec-store, fever-wiki, feverous-db, hover-wiki" in flat  # the ones there are
    assert not out.exists()
    both = CliRunner().invoke(app, ["eval", "--framework", "tool_mad", "--dataset",
                                    str(built["data"]["fever"]), "--index", "fever-wiki",
                                    "--set", f"index_dir={built['root']}", "--out", str(out), *FAST])
    assert both.exit_code != 0 and "and so does index_dir=" in " ".join(both.output.split())
    assert not out.exists()


@pytest.mark.slow  # embeds the 264-passage demo corpus (~25 s CPU, 1-2 min on 2 shared cores)
def test_eval_searches_the_demo_index_the_user_built_and_says_where(built, tmp_path):
    """``factdebate index`` of the demo corpus into the default folder, then ``eval`` with no index
    named and no data folder corpus: the run searches it (as ``verify`` would), and the report's
    caveat names the folder it searched, not a flag the user never gave."""
    from factdebate.tools.demo_index import DEMO_CORPUS
    from tests.integration.servers import warm_home

    patch = pytest.MonkeyPatch()
    home = warm_home(tmp_path / "home")  # MiniLM's ONNX graph of this process: no export
    patch.setenv("FACTDEBATE_HOME", str(home))
    try:
        done = CliRunner().invoke(app, ["index", str(DEMO_CORPUS)])
        assert done.exit_code == 0, done.output
        out = tmp_path / "run"
        done = CliRunner().invoke(app, ["eval", "--framework", "tool_mad", "--dataset",
                                        str(built["data"]["fever"]), "--limit", "1",
                                        "--out", str(out), *FAST])
        assert done.exit_code == 0, done.output
    finally:
        patch.undo()
    index = json.loads((out / "run.json").read_text())["index"]
    assert index["demo"] and index["index_dir"] == str(home / "index")
    head = " ".join((out / "report.md").read_text().split("## Caveats")[0].split())
    assert f"bundled demo corpus ({index['passages']} passages, index folder {home / 'index'})" \
        in head
    assert "--demo-index" not in head
