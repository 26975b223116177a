"""Real Milvus Lite + real tantivy + bundled MiniLM over a small corpus written here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import factdebate.tools.indexing as indexing
from factdebate.core.errors import BackendUnavailableError
from factdebate.tools.base import RETRIEVERS, Retriever, RetrieverSettings
from factdebate.tools.indexing import build_indexes, index_exists, read_manifest

PASSAGES = {
    "mars": ("Mars", "Mars is the fourth planet from the Sun. It is often called the Red Planet "
             "because iron oxide on its surface gives it a reddish appearance."),
    "eiffel": ("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower on the Champ de "
               "Mars in Paris, France, designed by the company of engineer Gustave Eiffel."),
    "python": ("Python (programming language)", "Python is a high-level programming language "
               "created by Guido van Rossum and first released in 1991."),
    "everest": ("Mount Everest", "Mount Everest is Earth's highest mountain above sea level, "
                "located in the Mahalangur Himal sub-range of the Himalayas."),
    "amazon": ("Amazon River", "The Amazon River in South America is the largest river by "
               "discharge volume of water in the world."),
    "mozart": ("Wolfgang Amadeus Mozart", "Mozart was a prolific and influential composer of the "
               "Classical period, born in Salzburg in 1756."),
    "photosynthesis": ("Photosynthesis", "Photosynthesis is the process by which green plants "
                       "use sunlight, water and carbon dioxide to produce glucose and oxygen."),
    "titanic": ("RMS Titanic", "RMS Titanic was a British passenger liner that sank in the North "
                "Atlantic Ocean in April 1912 after striking an iceberg."),
    "penicillin": ("Penicillin", "Penicillin was discovered in 1928 by Scottish scientist "
                   "Alexander Fleming, who noticed mould killing bacteria in a culture plate."),
    "great_wall": ("Great Wall of China", "The Great Wall of China is a series of fortifications "
                   "built across the historical northern borders of ancient Chinese states."),
    "shakespeare": ("William Shakespeare", "William Shakespeare was an English playwright and "
                    "poet, author of Hamlet, Macbeth and Romeo and Juliet."),
    "moon": ("Apollo 11", "Apollo 11 was the spaceflight that first landed humans on the Moon, "
             "with Neil Armstrong and Buzz Aldrin walking on the surface in July 1969."),
    "dna": ("DNA", "Deoxyribonucleic acid is a polymer of two chains that coil around each other "
            "to form a double helix carrying genetic instructions."),
    "tokyo": ("Tokyo", "Tokyo is the capital of Japan and one of the most populous metropolitan "
              "areas in the world."),
    "bitcoin": ("Bitcoin", "Bitcoin is a decentralised digital currency invented in 2008 by an "
                "unknown person using the name Satoshi Nakamoto."),
    "sahara": ("Sahara", "The Sahara is a desert spanning North Africa; it is the largest hot "
               "desert in the world."),
    "beethoven": ("Ludwig van Beethoven", "Beethoven was a German composer and pianist whose "
                  "Ninth Symphony includes the choral finale Ode to Joy."),
    "olympics": ("Olympic Games", "The modern Olympic Games are international sporting events "
                 "held every four years, first staged in Athens in 1896."),
    "volcano": ("Mount Vesuvius", "Mount Vesuvius is a volcano near Naples whose eruption in 79 AD "
                "buried the Roman city of Pompeii under ash."),
    "einstein": ("Albert Einstein", "Albert Einstein was a theoretical physicist who developed the "
                 "theory of relativity and received the 1921 Nobel Prize in Physics."),
    "chess": ("Chess", "Chess is a two-player board game played on a checkered board with 64 "
              "squares arranged in an eight-by-eight grid."),
    "coffee": ("Coffee", "Coffee is a brewed drink prepared from roasted coffee beans, the seeds "
               "of berries from Coffea species."),
    "whale": ("Blue whale", "The blue whale is a marine mammal and the largest animal known to "
              "have ever existed, reaching up to 30 metres in length."),
    "internet": ("World Wide Web", "The World Wide Web was invented by Tim Berners-Lee at CERN in "
                 "1989 as an information system of linked hypertext documents."),
    "pyramids": ("Great Pyramid of Giza", "The Great Pyramid of Giza is the oldest of the Seven "
                 "Wonders of the Ancient World, built for the pharaoh Khufu."),
    "insulin": ("Insulin", "Insulin is a peptide hormone produced by beta cells of the pancreas "
                "that regulates the metabolism of carbohydrates."),
    "football": ("FIFA World Cup", "The FIFA World Cup is an international association football "
                 "competition; Brazil has won the tournament five times."),
    "antarctica": ("Antarctica", "Antarctica is Earth's southernmost continent, containing the "
                   "geographic South Pole and covered almost entirely by ice."),
    "guitar": ("Guitar", "The guitar is a fretted musical instrument that typically has six "
               "strings and is played by strumming or plucking."),
    "long": ("Long article", ("Filler sentence about nothing in particular. " * 60)
             + "The hidden keyword zanzibarite appears only in the second chunk."),
}

QUERIES = {
    "mars": "Which planet is called the Red Planet?",
    "penicillin": "Alexander Fleming discovered penicillin in 1928.",
    "moon": "Neil Armstrong walked on the Moon in 1969.",
    "whale": "The blue whale is the largest animal ever.",
    "tokyo": "Tokyo is the capital city of Japan.",
}

HOSTILE = [
    'title:"Mars" AND (planet OR star)', '"unbalanced quote', "(((", ")", "AND", "OR NOT",
    "NOT AND OR", "+-*~^", "body:[a TO z]", "IN [a b]", "\\", "{}", "''", "field: value:", "",
    "   ", "😀 🚀", "a" * 5000, "Mars^3 Eiffel~2", "*", "?", "-Mars", "x\x00y", "name:",
]


def _corpus(path: Path, passages: dict[str, tuple[str, str]]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for doc_id, (title, text) in passages.items():
            f.write(json.dumps({"doc_id": doc_id, "title": title, "text": text, "extra": 1}) + "\n")
    return path


def _settings(index_dir: Path, collection: str = indexing.DEFAULT_COLLECTION) -> RetrieverSettings:
    return RetrieverSettings(
        index_dir=str(index_dir), milvus_uri=str(index_dir / "milvus.db"), collection=collection
    )


def _open(name: str, settings: RetrieverSettings) -> Retriever:
    return RETRIEVERS.get(RETRIEVERS.resolve(name))(settings)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("idx")
    target = root / "index"
    build_indexes(_corpus(root / "corpus.jsonl", PASSAGES), target, batch_size=8)
    return target


@pytest.fixture(scope="module")
def retrievers(index_dir: Path) -> Iterator[dict[str, Retriever]]:
    opened = {name: _open(name, _settings(index_dir)) for name in ("milvus", "keyword",
                                                                   "local_search")}
    yield opened
    for retriever in opened.values():
        retriever.close()  # type: ignore[attr-defined]


def test_manifest_describes_the_build(index_dir: Path) -> None:
    manifest = read_manifest(index_dir)
    assert index_exists(index_dir)
    assert manifest["passages"] == len(PASSAGES) + 1  # "long" is split into two chunks
    assert manifest["documents"] == len(PASSAGES)
    assert (manifest["embedding_model"], manifest["dimension"]) == ("minilm", 384)
    assert len(manifest["corpus_sha256"]) == 64 and manifest["build_seconds"] > 0
    # only the index's lock file (tools/index_lock.py) may sit beside it: no staging leftovers
    assert [p.name for p in index_dir.parent.iterdir() if p.name.startswith(".")] == [".index.lock"]


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["milvus", "keyword", "local_search"])
@pytest.mark.parametrize("doc_id", sorted(QUERIES))
async def test_relevant_passage_ranks_first(
    retrievers: dict[str, Retriever], name: str, doc_id: str
) -> None:
    hits = await retrievers[name].search(QUERIES[doc_id], k=3)
    assert hits[0]["id"] == doc_id
    assert hits[0]["title"] == PASSAGES[doc_id][0] and hits[0]["text"] == PASSAGES[doc_id][1]
    assert {h["source"] for h in hits} == {name}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


@pytest.mark.asyncio
async def test_long_passage_is_chunked_and_searchable(retrievers: dict[str, Retriever]) -> None:
    hits = await retrievers["keyword"].search("zanzibarite", k=5)
    assert [h["id"] for h in hits] == ["long#2"]
    assert hits[0]["title"] == "Long article"


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["milvus", "keyword"])
async def test_hostile_queries_do_not_raise(retrievers: dict[str, Retriever], name: str) -> None:
    for query in HOSTILE:
        hits = await retrievers[name].search(query, k=3)
        assert isinstance(hits, list) and len(hits) <= 3, query
    assert await retrievers[name].search("Mars", k=0) == []
    hits = await retrievers[name].search('title:"Mars" AND (planet OR star)', k=3)
    assert hits[0]["id"] == "mars"


def test_missing_index_and_collection_are_reported(tmp_path: Path, index_dir: Path) -> None:
    for name in ("milvus", "keyword"):
        with pytest.raises(BackendUnavailableError, match="no .*index at") as info:
            _open(name, _settings(tmp_path / "nowhere"))
        assert info.value.remedy == "run: factdebate index CORPUS.jsonl"
    assert not (tmp_path / "nowhere").exists()  # opening never creates an empty database


def test_missing_collection_is_reported(retrievers: dict[str, Retriever], index_dir: Path) -> None:
    # Same process, same database (already open): only the collection name differs.
    with pytest.raises(BackendUnavailableError, match="no vector index at .*'other'"):
        _open("milvus", _settings(index_dir, collection="other"))


def test_second_process_gets_a_clear_lock_error(
    retrievers: dict[str, Retriever], index_dir: Path
) -> None:
    script = textwrap.dedent(f"""
        from factdebate.core.errors import BackendUnavailableError
        from factdebate.tools.milvus_rag import connect
        try:
            connect({str(index_dir / "milvus.db")!r})
        except BackendUnavailableError as exc:
            print("PROBLEM:", exc.problem)
            print("REMEDY:", exc.remedy)
            raise SystemExit(3)
        raise SystemExit(0)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    expected = f"Milvus Lite index {index_dir / 'milvus.db'} is in use by another process"
    assert expected in proc.stdout
    assert "langgraph dev" in proc.stdout and "--index-dir" in proc.stdout


@pytest.mark.asyncio
async def test_rebuild_replaces_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "index"
    first = {k: PASSAGES[k] for k in ("mars", "tokyo", "chess")}
    second = {k: PASSAGES[k] for k in ("whale", "coffee", "guitar", "insulin")}
    old = build_indexes(_corpus(tmp_path / "a.jsonl", first), target)

    def broken_insert(*args: object) -> int:
        raise KeyboardInterrupt  # an interrupted build, mid-embedding

    monkeypatch.setattr(indexing, "_insert", broken_insert)
    with pytest.raises(KeyboardInterrupt):
        build_indexes(_corpus(tmp_path / "b.jsonl", second), target)
    monkeypatch.undo()
    assert read_manifest(target) == old and index_exists(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".index.lock", "a.jsonl", "b.jsonl", "index"]

    new = build_indexes(tmp_path / "b.jsonl", target)
    assert new["corpus_sha256"] != old["corpus_sha256"] and new["passages"] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == [".index.lock", "a.jsonl", "b.jsonl", "index"]
    for name in ("milvus", "keyword"):
        retriever = _open(name, _settings(target))
        try:
            ids = {h["id"] for h in await retriever.search("Mars Tokyo chess whale", k=10)}
        finally:
            retriever.close()  # type: ignore[attr-defined]
        assert ids <= set(second) and ids, name


@pytest.mark.asyncio
async def test_milvus_lite_path_outside_the_index_folder(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "vectors.db"
    corpus = _corpus(tmp_path / "c.jsonl", {k: PASSAGES[k] for k in ("mars", "dna", "chess")})
    for _ in range(2):  # the second build replaces the collection in place (staged + rename)
        manifest = build_indexes(corpus, tmp_path / "index", milvus_uri=str(shared))
    assert manifest["milvus_uri"] == str(shared) and index_exists(tmp_path / "index")
    assert not (tmp_path / "index" / "milvus.db").exists()
    settings = RetrieverSettings(index_dir=str(tmp_path / "index"), milvus_uri=str(shared))
    retriever = _open("milvus", settings)
    try:
        hits = await retriever.search("double helix genetic instructions", k=3)
    finally:
        retriever.close()  # type: ignore[attr-defined]
    assert [h["id"] for h in hits][0] == "dna" and len(hits) == 3
