"""The session's Milvus server for the tests (``milvus_server`` in conftest.py) and a database per
test on it; the server itself is :class:`factdebate.evaluation.milvus_standalone.MilvusStandalone`."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from factdebate.evaluation.milvus_standalone import MilvusStandalone, milvus_unavailable

__all__ = ["MilvusStandalone", "fresh_database", "pause_shared", "resume_shared", "session_server"]

_SHARED: list[MilvusStandalone] = []
"""The session's server once started: paused between blocks of tests that use it."""


def session_server(tmp_path_factory: Any, cache: Any) -> Iterator[MilvusStandalone]:
    """The body of the session-scoped ``milvus_server`` fixture (tests/integration/conftest.py):
    one server for the session, its binary unpacked once into pytest's cache, stopped at the end.
    Skips (one line) where the package cannot run here."""
    import pytest

    reason = milvus_unavailable()
    if reason:
        pytest.skip(reason)
    server = MilvusStandalone(tmp_path_factory.mktemp("milvus-server"),
                              cache_dir=cache.mkdir("milvus-server-2.3.5") if cache else None)
    server.start()
    _SHARED.append(server)
    try:
        yield server
    finally:
        _SHARED.remove(server)
        server.remove()


def pause_shared() -> None:
    """Stop the session's server while tests that do not use it run (an idle Milvus standalone
    still spends CPU on its coordinators' timers); its data folder and ports stay."""
    for server in _SHARED:
        server.stop()


def resume_shared() -> None:
    """Start the session's server again, on its data folder and ports, if it is paused."""
    for server in _SHARED:
        if server.pid is None:
            server.start()


_databases = itertools.count()


def fresh_database(server: MilvusStandalone, name: str) -> str:
    """Create database ``<name>_<n>`` on ``server`` and return its URI: a test's own namespace,
    so tests sharing the session's server never see each other's collections."""
    from pymilvus import MilvusClient

    db = f"{name}_{next(_databases)}"
    client = MilvusClient(uri=server.uri)
    try:
        client.create_database(db)
    finally:
        client.close()
    return f"{server.uri}/{db}"
