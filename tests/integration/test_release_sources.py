"""``factdebate index`` over the knowledge sources as really shipped, then what evaluation does
with them: an AVeriTeC claim's eval item searches only its own pool of the zipped store (pool =
the id evaluation gives the claim), HoVer's dumps score at sentence level (sent_ids as HoVer's
gold evidence writes them, one after a whitespace-only sentence), and skipped records are counted
in the manifest or stop a ``--strict`` build.

Real components: the CLI in process, tantivy keyword indexes, the evaluation's dataset loader,
item Context and retriever settings, the evidence scorer. Dumps: tests/fixtures/sources/make.py.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.context import Context
from factdebate.evaluation.datasets import load_items
from factdebate.evaluation.evidence_metrics import gold_evidence, score_row
from factdebate.evaluation.items import item_context
from factdebate.nodes.retrieval import retriever_settings
from factdebate.tools.base import clear_retriever_cache, get_retriever
from factdebate.tools.index_lock import release
from factdebate.tools.keyword import KeywordRetriever
from tests.fixtures.sources import make


def _index(dump: Path, target: Path, *extra: str) -> str:
    result = CliRunner().invoke(app, ["index", str(dump), "--index-dir", str(target),
                                      "--keyword-only", *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_an_eval_item_of_claim_1_retrieves_nothing_of_claim_0s_pool(tmp_path: Path) -> None:
    target = tmp_path / "index"
    _index(make.averitec_zip(tmp_path), target)
    dataset = tmp_path / "averitec.jsonl"
    dataset.write_text("".join(json.dumps({"id": f"averitec-dev-{n}", "dataset": "averitec",
                                           "claim": c, "label": "REFUTES"}) + "\n"
                               for n, c in [(0, "Hospitals in Lagos are full."),
                                            (1, "Penguins breed in summer.")]))
    items = {it.id: it for it in load_items(str(dataset))}
    ctx = Context(index_dir=str(target))
    try:
        for item_id, own, other_words, other_page in [
                ("averitec-dev-1", "1", "hospital capacity in Lagos", "https://zero.example/only"),
                ("averitec-dev-0", "0", "Emperor penguins Antarctic winter",
                 "https://one.example/penguins")]:
            item = items[item_id]
            assert item.meta["claim_id"] == own  # the id evaluation gives the claim
            # the runner pools an item over a pooled index by its claim id
            pooled = dataclasses.replace(item, meta={**item.meta, "pool": own})
            retriever = get_retriever("keyword", retriever_settings(item_context(ctx, pooled)))
            seen = retriever.search_sync(other_words, 10)  # the other claim's page's words
            assert {p["pool"] for p in seen} <= {own}
            assert other_page not in {p["page"] for p in seen}
            found = retriever.search_sync("vaccine approved 2021", 10)
            assert found and {p["pool"] for p in found} == {own}
            assert all(p["id"].startswith(f"{own}/") for p in found)
        for words, page in [("hospital capacity in Lagos", "https://zero.example/only"),
                            ("Emperor penguins Antarctic winter", "https://one.example/penguins")]:
            [top] = KeywordRetriever(target).search_sync(words, 1)  # unpooled, they are found
            assert top["page"] == page
    finally:
        clear_retriever_cache()
        release(target)


def _scored(passage: dict, facts: list[tuple[str, int]]) -> dict:
    gold = gold_evidence({"dataset": "hover", "evidence_sets": [
        [{"page": p, "sent_id": n} for p, n in facts]]}, "hover")
    row = {"status": "ok", "gold": {"label": "SUPPORTS", "evidence": gold},
           "prediction": {"label": "SUPPORTS"}, "evidence": [passage], "retrieved": [passage]}
    evidence = score_row(row)
    assert evidence is not None and evidence.basis == "ids" and evidence.level == "sentence"
    return evidence.__dict__


def test_hover_abstracts_score_a_gold_sentence_after_a_whitespace_sentence(tmp_path: Path) -> None:
    target = tmp_path / "index"
    _index(make.hover_tar(tmp_path), target, "--granularity", "sentence")
    try:
        [top] = KeywordRetriever(target).search_sync("lies north of Skagen", 1)
        assert (top["page"], top["sentences"]) == ("Skagen Odde", [2])  # sentence 1 is blank
        scores = _scored(top, [("Skagen Odde", 2)])
        assert scores["sentence_recall"] == scores["sentence_precision"] == 1.0
        assert _scored(top, [("Skagen Odde", 1)])["sentence_recall"] == 0.0  # not by position
    finally:
        release(target)


def test_hover_db_passages_carry_hovers_sent_ids_and_score(tmp_path: Path) -> None:
    target = tmp_path / "index"
    _index(make.hover_db(tmp_path), target, "--format", "hover-wiki", "--granularity", "sentence")
    try:
        search = KeywordRetriever(target).search_sync
        [shot] = search("film shot in Chicago 1996", 1)
        assert (shot["page"], shot["sentences"]) == ("George Tillman Jr.", [2])
        assert _scored(shot, [("George Tillman Jr.", 2)])["sentence_recall"] == 1.0
        [born] = search("born in Houston Texas", 1)
        assert (born["page"], born["sentences"]) == (make.BEYONCE, [1])  # NFC, as the gold
        assert _scored(born, [(make.BEYONCE, 1)])["sentence_em"] == 1.0
    finally:
        release(target)


def test_skipped_store_lines_are_counted_and_strict_stops_at_the_first(tmp_path: Path) -> None:
    body = json.dumps({"claim_id": "4", "url": "https://u.example/null", "url2text": None}) + "\n"
    dump = make.averitec_zip(tmp_path, {"output_dev/4.json": json.dumps(
        {"claim_id": "4", "url": "https://u.example/ok", "url2text": ["Kept."]}) + "\n" + body})
    target = tmp_path / "index"
    output = _index(dump, target)
    quirks = json.loads((target / "manifest.json").read_text())["quirks"]
    assert quirks["skipped"] == 1 and quirks["examples"][0]["where"].endswith("4.json line 2")
    assert "skipped 1" in " ".join(output.split())
    release(target)
    strict = CliRunner().invoke(app, ["index", str(dump), "--index-dir", str(tmp_path / "s"),
                                      "--keyword-only", "--strict"])
    assert strict.exit_code == 2 and "url2text' is null" in " ".join(strict.output.split())
    assert not (tmp_path / "s").exists()
