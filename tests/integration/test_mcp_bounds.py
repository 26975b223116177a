"""The MCP tool server bounds what a client sends and stays stoppable.

Real server processes (streamable HTTP on a free loopback port) on a keyword index written here;
an ``mcp`` ``ClientSession`` calls them. A title or query over the limit is a tool error naming
the limit, returned at once (a 2 MB one-word title used to scan for minutes in the URL masking
of the error text); SIGTERM stops a server whose only request waits on a remote API that never
answers (a loopback socket that accepts and stays silent).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

from factdebate.tools.keyword import write_keyword_index
from factdebate.tools.mcp_server import MAX_QUERY_CHARS, MAX_TITLE_CHARS
from tests.integration.servers import free_port

REPO = Path(__file__).resolve().parents[2]
PASSAGES = [{"id": "e1#0", "title": "Eiffel Tower",
             "text": "The Eiffel Tower is a wrought-iron tower in Paris."}]
GENEROUS_S = 60
"""An upper bound no healthy run comes near (the point is "returns", not how fast)."""


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp_bounds") / "index"
    write_keyword_index(root / "keyword", PASSAGES)
    return root


def start(index_dir: Path, *extra: str, env: dict[str, str] | None = None
          ) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    log_path = index_dir.parent / f"server-{port}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "factdebate.tools.mcp_server", "--index-dir", str(index_dir),
         "--web-backend", "local_search", "--transport", "streamable-http", "--port", str(port),
         *extra],
        cwd=REPO, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
        stderr=log_path.open("w"))
    deadline = time.monotonic() + GENEROUS_S
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}/mcp", log_path
        except OSError:
            assert proc.poll() is None, log_path.read_text()
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("the MCP server did not start")


@pytest.fixture(scope="module")
def server(index_dir: Path) -> Iterator[str]:
    proc, url, _ = start(index_dir)
    yield url
    proc.kill()
    proc.wait(timeout=GENEROUS_S)


async def call(url: str, tool: str, args: dict[str, object]):
    with anyio.fail_after(GENEROUS_S):
        async with streamablehttp_client(url) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(tool, args)


@pytest.mark.parametrize(("tool", "param", "limit"), [
    ("get_article", "title", MAX_TITLE_CHARS), ("get_summary", "title", MAX_TITLE_CHARS),
    ("search_wikipedia", "query", MAX_QUERY_CHARS), ("search_web", "query", MAX_QUERY_CHARS)])
async def test_a_long_argument_is_a_prompt_tool_error_naming_the_limit(server, tool, param,
                                                                       limit):
    result = await call(server, tool, {param: "a" * 2_000_000})
    assert result.isError is True and result.structuredContent is None
    text = result.content[0].text
    assert f"{param} is 2000000 characters long" in text and f"at most {limit}" in text, text
    assert len(text) < 1000  # the argument is not echoed back


async def test_limits_are_in_the_schema_and_a_title_at_the_limit_is_looked_up(server):
    async with streamablehttp_client(server) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        at_limit = await session.call_tool("get_article", {"title": "b" * MAX_TITLE_CHARS})
        found = await session.call_tool("get_article", {"title": "Eiffel Tower"})
    assert tools["get_article"].inputSchema["properties"]["title"]["maxLength"] == MAX_TITLE_CHARS
    assert tools["search_web"].inputSchema["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    assert at_limit.isError is True and "no Wikipedia article titled" in at_limit.content[0].text
    assert found.isError is False and found.structuredContent["evidence"][0]["title"] == \
        "Eiffel Tower"


class SilentApi:
    """A loopback socket that accepts connections, reads the request and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.asked = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/w/api.php"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if conn.recv(65536):
                self.asked.set()

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        self.sock.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def test_sigterm_stops_the_server_busy_with_a_long_title(index_dir):
    proc, url, _ = start(index_dir)
    try:
        async with streamablehttp_client(url) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            spent = cpu_seconds(proc.pid)
            async with anyio.create_task_group() as tg:
                replies: list[object] = []

                async def ask() -> None:
                    title = "a" * 2_000_000
                    replies.append(await session.call_tool("get_article", {"title": title}))

                tg.start_soon(ask)
                # SIGTERM once the reply is back or the server has been busy with it for 2 CPU s
                while not replies and cpu_seconds(proc.pid) < spent + 2:
                    await anyio.sleep(0.05)
                proc.send_signal(signal.SIGTERM)
                code = await anyio.to_thread.run_sync(proc.wait, GENEROUS_S)
                tg.cancel_scope.cancel()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code is not None


def test_sigterm_stops_the_server_while_a_request_waits_on_a_remote_api(index_dir):
    api = SilentApi()
    proc, url, log_path = start(index_dir, "--wiki-backend", "mediawiki",
                                env={"FACTDEBATE_MEDIAWIKI_URL": api.url})
    client = subprocess.Popen(  # a client whose get_article waits on the silent API
        [sys.executable, "-c",
         "import anyio, sys\n"
         "from mcp import ClientSession\n"
         "from mcp.client.streamable_http import streamablehttp_client\n"
         "async def main():\n"
         "    async with streamablehttp_client(sys.argv[1]) as (r, w, _):\n"
         "        async with ClientSession(r, w) as s:\n"
         "            await s.initialize()\n"
         "            await s.call_tool('get_article', {'title': 'Eiffel Tower'})\n"
         "anyio.run(main)\n", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert api.asked.wait(GENEROUS_S), log_path.read_text()
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=GENEROUS_S / 4)  # the API would hold the request for 20 s
    finally:
        for p in (proc, client):
            if p.poll() is None:
                p.kill()
                p.wait()
        api.close()
    assert code is not None
