"""LangChain vector stores and retrievers as debaters' tools, and ``factdebate index`` collections
opened by ``langchain_milvus``.

Real components: ``langchain_milvus.Milvus`` over Milvus Lite and over the session's Milvus
standalone server (``milvus_server``), LangChain's ``InMemoryVectorStore``, the bundled MiniLM
embeddings, the ``factdebate`` CLI in-process with the scripted model. The factories below are what
an operator names with ``--set langchain_factory=module:callable``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.citations import passage_key
from factdebate.core.context import check_client_settings
from factdebate.core.errors import SettingsRefused
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.tools import DEMO_CORPUS_DIR
from factdebate.tools.base import clear_retriever_cache
from factdebate.tools.embeddings import get_embeddings

runner = CliRunner()
HERE = "tests.integration.test_langchain_retriever"
USER_DOCS = [
    ("u-eiffel", "Eiffel Tower", "The Eiffel Tower is a wrought-iron tower in Paris, France."),
    ("u-nile", "Nile", "The Nile flows north through Egypt into the Mediterranean Sea."),
    ("u-berlin", "Berlin", "Berlin is the capital and largest city of Germany."),
    ("u-everest", "Mount Everest", "Mount Everest is the highest mountain above sea level."),
]


def in_memory_store() -> Any:
    """Factory: a user's LangChain in-memory vector store over USER_DOCS (bundled embeddings)."""
    from langchain_core.vectorstores import InMemoryVectorStore

    return InMemoryVectorStore.from_texts(
        [text for _, _, text in USER_DOCS], embedding=get_embeddings("minilm"),
        metadatas=[{"title": title, "url": f"https://example.org/{i}"} for i, title, _ in USER_DOCS],
        ids=[i for i, _, _ in USER_DOCS])


def users_milvus_retriever() -> Any:
    """Factory: a retriever over a collection ``langchain_milvus`` built itself (at
    $USER_MILVUS_URI), as a user's existing index is."""
    from langchain_milvus import Milvus

    store = Milvus(embedding_function=get_embeddings("minilm"), collection_name="user_docs",
                   connection_args={"uri": os.environ["USER_MILVUS_URI"]})
    return store.as_retriever(search_kwargs={"k": 2})


def not_a_retriever() -> Any:
    """Factory returning something that is neither a retriever nor a store."""
    return {"not": "a retriever"}


@pytest.fixture(scope="module")
def keyword_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small factdebate index: the 'search' debater's local keyword stand-in reads it."""
    folder = tmp_path_factory.mktemp("lc-index")
    lines = (DEMO_CORPUS_DIR / "passages.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    (folder / "c.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["index", str(folder / "c.jsonl"), "--index-dir",
                                 str(folder / "index")])
    assert result.exit_code == 0, result.output
    return folder / "index"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    yield
    clear_retriever_cache()


def verify_over(index_dir: Path, factory: str, model: str = "scripted:agree") -> Any:
    return runner.invoke(app, ["verify", "The Eiffel Tower is in Paris.", "--index-dir",
                               str(index_dir), "--set", "rag_backend=langchain", "--set",
                               f"langchain_factory={factory}", "--model", model, "--json"])


def check_citations(out: dict[str, Any], expected_first: str) -> None:
    """As for the built-in tools: the passages shown carry the store's ids, the verdict rests on
    what its replies cited, every citation record points at a shown passage."""
    rag = [e for t in out["turns"] if t["agent"] == "rag" for e in t["evidence"]]
    assert rag and rag[0]["id"] == expected_first and rag[0]["source"] == "langchain"
    assert out["ledger"]["tool_calls"].get("langchain") == 1
    assert out["evidence"], out["flags"]
    assert expected_first in {e["id"] for e in out["evidence"]}
    for e in out["evidence"]:
        assert e["cited_by"] and e["stance"] == "supports"
    cited = {passage_key(e) for e in out["evidence"]}
    assert not cited & {passage_key(e) for e in out["retrieved"]}
    shown = {passage_key(e) for t in out["turns"] for e in t["evidence"]}
    assert shown == cited | {passage_key(e) for e in out["retrieved"]}
    rag_record = next(c for c in out["citations"] if c["by"] == "rag")
    assert rag_record["passages"] and not rag_record["unshown"]
    assert {passage_key(p) for p in rag_record["passages"]} <= shown
    assert out["ledger"]["citations_unshown"] == 0


def test_debate_over_an_in_memory_vector_store(keyword_index):
    result = verify_over(keyword_index, f"{HERE}:in_memory_store")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["label"] == "SUPPORTS"
    check_citations(out, "u-eiffel")
    top = next(t for t in out["turns"] if t["agent"] == "rag")["evidence"][0]
    assert top["title"] == "Eiffel Tower" and top["url"] == "https://example.org/u-eiffel"
    assert 0.3 < top["score"] <= 1.0  # cosine similarity from the store


def test_debate_over_a_collection_langchain_milvus_built(keyword_index, milvus_server, tmp_path,
                                                         monkeypatch):
    from langchain_milvus import Milvus

    from tests.integration.milvus_server import fresh_database

    uri = fresh_database(milvus_server, "lcuser")
    Milvus.from_texts([t for _, _, t in USER_DOCS], get_embeddings("minilm"),
                      metadatas=[{"title": title, "doc_id": i} for i, title, _ in USER_DOCS],
                      collection_name="user_docs", connection_args={"uri": uri})
    monkeypatch.setenv("USER_MILVUS_URI", uri)
    result = verify_over(keyword_index, f"{HERE}:users_milvus_retriever")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    rag = next(t for t in out["turns"] if t["agent"] == "rag")["evidence"]
    assert len(rag) == 3 and rag[0]["title"] == "Eiffel Tower"  # the debate's k, not search_kwargs'
    check_citations(out, "u-eiffel")


def test_a_factdebate_index_opens_in_langchain_milvus_unchanged_on_lite(tmp_path):
    _opens_in_langchain_milvus_unchanged(tmp_path, str(tmp_path / "index" / "milvus.db"), [])


@pytest.mark.slow  # a build on the server (~30 s): the slow tier; the Lite one above stays
def test_a_factdebate_index_opens_in_langchain_milvus_unchanged_on_the_server(milvus_server,
                                                                            tmp_path):
    from tests.integration.milvus_server import fresh_database

    uri = fresh_database(milvus_server, "lcopen")
    _opens_in_langchain_milvus_unchanged(tmp_path, uri, ["--milvus-uri", uri])


def _opens_in_langchain_milvus_unchanged(tmp_path, uri, args):
    from langchain_milvus import Milvus

    from factdebate.tools.base import RetrieverSettings, get_retriever

    lines = (DEMO_CORPUS_DIR / "passages.jsonl").read_text(encoding="utf-8").splitlines()[:30]
    (tmp_path / "c.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    built = runner.invoke(app, ["index", str(tmp_path / "c.jsonl"), "--index-dir",
                                str(tmp_path / "index"), *args])
    assert built.exit_code == 0, built.output

    store = Milvus(embedding_function=get_embeddings("minilm"),
                   collection_name="factdebate_passages", connection_args={"uri": uri})
    hits = store.similarity_search_with_score("Eiffel Tower in Paris", k=5)
    doc, score = hits[0]
    assert doc.metadata["id"] == "demo-0001" and doc.metadata["title"] == "Eiffel Tower"
    assert doc.page_content.startswith("The Eiffel Tower")
    ours = get_retriever("milvus", RetrieverSettings(index_dir=str(tmp_path / "index"),
                                                     milvus_uri=uri)).search_sync(
        "Eiffel Tower in Paris", 5)
    assert [d.metadata["id"] for d, _ in hits] == [e["id"] for e in ours]
    assert [s for _, s in hits] == pytest.approx([e["score"] for e in ours], abs=1e-5)
    keyed = Milvus(embedding_function=get_embeddings("minilm"), primary_field="id",
                   collection_name="factdebate_passages", connection_args={"uri": uri})
    assert keyed.get_pks("title == 'Mount Everest'") == ["demo-0002"]  # rows by key: primary_field


def test_factory_problems_are_one_line_errors(keyword_index):
    for factory, code, text in [
        ("", 2, "needs langchain_factory"),
        ("no_colon_here", 2, "is not of the form module:callable"),
        ("tests.integration.nowhere:f", 2, "does not import"),
        (f"{HERE}:not_a_retriever", 2, "returned a dict, not a LangChain BaseRetriever"),
    ]:
        result = verify_over(keyword_index, factory)
        errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
        assert result.exit_code == code and len(errors) == 1 and text in errors[0], result.output
        clear_retriever_cache()


def test_langchain_factory_is_operator_only():
    with pytest.raises(SettingsRefused, match="langchain_factory is an operator-only setting"):
        check_client_settings(ToolMadContext, {"langchain_factory": f"{HERE}:in_memory_store"},
                              {"scripted:*"})
    with pytest.raises(SettingsRefused, match="rag_backend is an operator-only setting"):
        check_client_settings(ToolMadContext, {"rag_backend": "langchain"}, {"scripted:*"})
