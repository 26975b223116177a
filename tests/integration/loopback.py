"""Loopback servers for the integration tests: a stand-in HTTP handler served from a thread of the
test process, and the MCP tool server (``factdebate.tools.mcp_server``) as a process of its own over
streamable HTTP.

Both listen on ``127.0.0.1`` on a port the OS hands out free and are stopped when their ``with``
block ends, so a module-scoped fixture is a ``with`` around its ``yield``; :func:`stand_in` is that
fixture for a handler that needs nothing else.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration.servers import REPO, free_port


@contextmanager
def serve_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free loopback port (a thread per request); yields
    ``127.0.0.1:PORT`` (the caller adds the scheme, credentials or path it needs)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def stand_in(handler: type[BaseHTTPRequestHandler], scope: str = "module") -> Any:
    """A fixture serving ``handler`` (:func:`serve_http`) that yields ``http://127.0.0.1:PORT``;
    it takes the name it is assigned to (``server = stand_in(Handler)``)."""

    @pytest.fixture(scope=scope)
    def fixture() -> Iterator[str]:
        with serve_http(handler) as host:
            yield f"http://{host}"

    return fixture


@contextmanager
def mcp_http_server(args: Sequence[str], env: dict[str, str], log: Path | None = None,
                    timeout: float = 60.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """``python -m factdebate.tools.mcp_server ARGS`` over streamable HTTP on a free port, with
    environment ``env`` and its stderr in ``log`` (discarded without one).

    Yields the server's MCP URL and its process once the port accepts connections (a server that
    exits first fails the test with its log); the process is ended when the block ends.
    """
    port = free_port()
    err = log.open("w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "-m", "factdebate.tools.mcp_server", *args,
         "--transport", "streamable-http", "--port", str(port)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, (log.read_text() if log
                                             else "the MCP server exited at start")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=10)
        if log:
            err.close()
