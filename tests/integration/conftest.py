"""Fixtures shared by integration tests: a small real index over the shared corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = os.environ.get("FACTDEBATE_DATA_DIR")


@pytest.fixture(scope="session")
def demo_head_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Milvus Lite + keyword indexes of the demo corpus' first 40 passages (Eiffel Tower and
    Everest among them), for the CLI tests of ``verify`` and ``check``."""
    from factdebate.tools import DEMO_CORPUS_DIR
    from factdebate.tools.base import clear_retriever_cache
    from factdebate.tools.indexing import build_indexes

    corpus = tmp_path_factory.mktemp("corpus") / "small.jsonl"
    lines = (DEMO_CORPUS_DIR / "passages.jsonl").read_text(encoding="utf-8").splitlines()[:40]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path_factory.mktemp("idx") / "index"
    build_indexes(corpus, target)
    clear_retriever_cache()
    return target


@pytest.fixture(scope="session")
def wiki_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Milvus Lite + keyword indexes of the first 200 passages of the shared wiki corpus."""
    from factdebate.tools.base import clear_retriever_cache
    from factdebate.tools.indexing import build_indexes

    if not DATA:
        pytest.skip("FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
    corpus = tmp_path_factory.mktemp("corpus") / "wiki200.jsonl"
    lines = (Path(DATA) / "corpus" / "wiki.jsonl").read_text(encoding="utf-8").splitlines()[:200]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path_factory.mktemp("idx") / "index"
    build_indexes(corpus, target)
    clear_retriever_cache()
    return target


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    """A Milvus standalone server on loopback for the whole session (``milvus_server.py``)."""
    from tests.integration.milvus_server import session_server

    yield from session_server(tmp_path_factory, getattr(request.config, "cache", None))


HEAVY_FIXTURES = frozenset({"milvus_server"})
"""Fixtures whose tests run in the slow tier (``make test-slow``, which CI runs too): a Milvus
standalone server takes a core for the whole session."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests using a heavy fixture are marked ``slow``: the default run stays well under 15 min."""
    for item in items:
        if HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
