"""Shared fixtures: offline environment, scripted models; the ``static`` retriever of graph tests
is the package's own (``factdebate.testing.retrievers``, registered in the core)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("LANGGRAPH_NO_VERSION_CHECK", "true")
os.environ.pop("TAVILY_API_KEY", None)
os.environ.pop("LANGSMITH_TRACING", None)
os.environ.pop("LANGCHAIN_TRACING_V2", None)

from factdebate.testing.retrievers import PASSAGES, StaticRetriever  # noqa: E402, F401
from factdebate.testing.scripted import SCENARIOS, Responder  # noqa: E402
from factdebate.tools.base import RetrieverSettings  # noqa: E402

_counter = itertools.count()


@pytest.fixture
def scenario() -> Iterator[Callable[[Responder], str]]:
    """Register a responder under a fresh scenario name; returns its ``scripted:`` spec."""

    def make(responder: Responder) -> str:
        name = f"test{next(_counter)}"
        SCENARIOS.register(name, lambda: responder)
        return f"scripted:{name}"

    yield make


@pytest.fixture
def static_ctx() -> Callable[..., Any]:
    """A Tool-MAD Context for graph tests: static retriever, the given model spec and overrides."""
    from factdebate.nodes.tool_mad.state import ToolMadContext

    def make(model: str, **overrides: Any) -> ToolMadContext:
        return ToolMadContext(debater_model=model, rag_backend="static", search_backend="static",
                              **overrides)

    return make


def settings_for(tmp_path: Any) -> RetrieverSettings:
    """Retriever settings rooted in a temporary folder."""
    return RetrieverSettings(index_dir=str(tmp_path), milvus_uri=str(tmp_path / "milvus.db"))


MILVUS_SERVER_MODULES = frozenset({
    "tests/integration/test_langchain_retriever.py",
    "tests/integration/test_milvus_server.py",
    "tests/integration/test_milvus_server_langgraph.py",
})
"""The modules with tests on the session's Milvus standalone server (fixture ``milvus_server``):
one block, on one test worker, so that server starts once per run."""


def _scope(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return "milvus_server" if module in MILVUS_SERVER_MODULES else module


def _rank(item: pytest.Item) -> int:
    scope = _scope(item.nodeid)
    return 0 if scope == "milvus_server" else 1 if scope.startswith("tests/integration/") else 2


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Test order: the Milvus-server block first, then the integration modules, then graph and unit
    tests (a stable sort: a module's tests keep their order). Under ``make test``'s two workers
    the modules are handed out in this order, so the long ones start first and the short ones
    fill in. A test on the Milvus server outside ``MILVUS_SERVER_MODULES`` is a usage error."""
    stray = sorted({i.nodeid.split("::", 1)[0] for i in items
                    if "milvus_server" in getattr(i, "fixturenames", ())} - MILVUS_SERVER_MODULES)
    if stray:
        raise pytest.UsageError(f"add {', '.join(stray)} to MILVUS_SERVER_MODULES in tests/conftest.py")
    items.sort(key=_rank)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (``make test``): each module goes to one worker whole, so its
    module-scoped fixtures (``langgraph dev`` servers, indexes) start once - and the modules in
    ``MILVUS_SERVER_MODULES`` go together, as one unit. xdist's own ``loadgroup`` cannot do this
    here: it renames node ids, which pytest 9 no longer lets a plugin do."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return ModuleScheduling(config, log)
