"""Fixtures shared by integration tests: a small real index over the shared corpus, the page's browser."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = os.environ.get("FACTDEBATE_DATA_DIR")


def head(source: Path, n: int, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The first ``n`` passages (lines) of the corpus ``source`` as a corpus file ``name`` of their
    own in a new temporary folder."""
    corpus = tmp_path_factory.mktemp("corpus") / name
    lines = source.read_text(encoding="utf-8").splitlines()[:n]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus


@pytest.fixture(scope="session")
def demo_head_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Milvus Lite + keyword indexes of the demo corpus' first 40 passages (Eiffel Tower and
    Everest among them), for the CLI tests of ``verify`` and ``check``."""
    from factdebate.tools import DEMO_CORPUS_DIR
    from factdebate.tools.base import clear_retriever_cache
    from factdebate.tools.indexing import build_indexes

    corpus = head(DEMO_CORPUS_DIR / "passages.jsonl", 40, tmp_path_factory, "small.jsonl")
    target = tmp_path_factory.mktemp("idx") / "index"
    build_indexes(corpus, target)
    clear_retriever_cache()
    return target


@pytest.fixture(scope="module")
def cli_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus' first 40 passages indexed by the CLI (``factdebate index``, in process),
    one index per test module."""
    from typer.testing import CliRunner

    from factdebate.cli.main import app
    from factdebate.tools import DEMO_CORPUS_DIR

    corpus = head(DEMO_CORPUS_DIR / "passages.jsonl", 40, tmp_path_factory, "small.jsonl")
    target = tmp_path_factory.mktemp("idx") / "index"
    result = CliRunner().invoke(app, ["index", str(corpus), "--index-dir", str(target)])
    assert result.exit_code == 0, result.output
    assert "indexed 40 passages" in result.output
    return target


@pytest.fixture
def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``FACTDEBATE_HOME`` set to the test's own ``tmp_path/home`` (for a module's tests:
    ``pytestmark = pytest.mark.usefixtures("cli_home")``)."""
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture(scope="session")
def wiki_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Milvus Lite + keyword indexes of the first 200 passages of the shared wiki corpus."""
    from factdebate.tools.base import clear_retriever_cache
    from factdebate.tools.indexing import build_indexes

    if not DATA:
        pytest.skip("FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
    corpus = head(Path(DATA) / "corpus" / "wiki.jsonl", 200, tmp_path_factory, "wiki200.jsonl")
    target = tmp_path_factory.mktemp("idx") / "index"
    build_indexes(corpus, target)
    clear_retriever_cache()
    return target


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    """A Milvus standalone server on loopback for the session (``milvus_server.py``): the tests
    that use it run as one block, on one test worker (``MILVUS_SERVER_MODULES`` in
    tests/conftest.py), and it is paused outside that block."""
    from tests.integration.milvus_server import session_server

    yield from session_server(tmp_path_factory, getattr(request.config, "cache", None))


def _uses_milvus_server(item: pytest.Item | None) -> bool:
    return item is not None and "milvus_server" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before a test on the shared Milvus server: start it again if it is paused."""
    if _uses_milvus_server(item):
        from tests.integration.milvus_server import resume_shared

        resume_shared()


_SERVER_MODULES = pytest.StashKey[frozenset[str]]()


def _in_server_block(item: pytest.Item | None) -> bool:
    """True for any test of a module with tests on the shared Milvus server (the modules of
    ``MILVUS_SERVER_MODULES`` in tests/conftest.py, which run together as one block)."""
    if item is None:
        return False
    stash = item.session.stash
    if _SERVER_MODULES not in stash:
        stash[_SERVER_MODULES] = frozenset(i.nodeid.split("::", 1)[0] for i in item.session.items
                                           if _uses_milvus_server(i))
    return item.nodeid.split("::", 1)[0] in stash[_SERVER_MODULES]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """After the last test of the block on the shared Milvus server: pause it (the session fixture
    removes it at the end). The block's few tests without the server (Milvus Lite, argument
    checks) do not pause it: a stop and a start cost more (~5 s + ~7 s) than its idle timers."""
    yield
    if _in_server_block(item) and not _in_server_block(nextitem):
        from tests.integration.milvus_server import pause_shared

        pause_shared()


# -- the web page's browser (tests/integration/chromium.py) --------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One Chromium for the module (Playwright's own download is not used: Debian's binary)."""
    from tests.integration.chromium import CHROMIUM, playwright_api

    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    """A fresh 1280x900 page on the module's ``server``; a script error in it fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, errors  # no script error in the page
