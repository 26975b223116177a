"""MERMAID's MCP tool server as an MCP client sees it, over real sessions.

The server runs as its own process (streamable HTTP on a free loopback port, or spawned over
stdio) on a keyword index written here; an ``mcp`` ``ClientSession`` lists and calls its tools.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from factdebate.tools.keyword import write_keyword_index
from factdebate.tools.mcp_server import DEFAULT_PORT, QuietDisconnects, parse_args
from factdebate.tools.toolbox import OFFLINE_TOOLS, ONLINE_ONLY_TOOLS
from tests.integration.loopback import mcp_http_server
from tests.integration.servers import REPO, free_port

PASSAGES = [
    {"id": "e1#0", "title": "Eiffel Tower", "text": "The Eiffel Tower is a wrought-iron tower in "
     "Paris. It was completed in 1889. It is 330 metres tall. It was the tallest structure."},
    {"id": "e2#0", "title": "Eiffel Tower Restaurant", "text": "The Eiffel Tower Restaurant is in "
     "Las Vegas. It serves French food."},
    {"id": "m1#0", "title": "Mount Everest", "text": "Mount Everest is the highest mountain."},
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp_tools") / "index"
    write_keyword_index(root / "keyword", PASSAGES)
    return root


def server_args(index_dir: Path, *extra: str) -> list[str]:
    return ["-m", "factdebate.tools.mcp_server", "--index-dir", str(index_dir),
            "--web-backend", "local_search", *extra]


@pytest.fixture(scope="module")
def http_server(index_dir: Path) -> Iterator[tuple[str, Path]]:
    log_path = index_dir.parent / "server.log"
    with mcp_http_server(server_args(index_dir)[2:],
                         {**os.environ,
                          "FACTDEBATE_OPENALEX_URL": f"http://127.0.0.1:{free_port()}"},
                         log_path) as (url, _):
        yield url, log_path


async def test_tools_as_a_client_lists_them(http_server):
    url, _ = http_server
    async with streamablehttp_client(url) as (read, write, _), \
            ClientSession(read, write) as session:
        init = await session.initialize()
        assert "search_wikipedia first" in (init.instructions or "")
        assert "local corpus index" in init.instructions
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(OFFLINE_TOOLS) | set(ONLINE_ONLY_TOOLS) == set(tools)
    for tool in tools.values():
        for name, prop in tool.inputSchema["properties"].items():
            assert prop.get("description"), (tool.name, name)
        assert tool.outputSchema and "evidence" in tool.outputSchema["properties"], tool.name
        assert tool.annotations.readOnlyHint is True and tool.annotations.destructiveHint is False
        online = tool.name in ONLINE_ONLY_TOOLS  # wiki = local index, web = local stand-in
        assert tool.annotations.openWorldHint is online, tool.name
        assert ("Needs network access" in tool.description) is online
    limit = tools["search_wikipedia"].inputSchema["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 50, 5)


async def test_missing_article_is_an_error_result_not_another_article(http_server):
    url, _ = http_server
    async with streamablehttp_client(url) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        missing = await session.call_tool("get_summary", {"title": "Eiffel Tower Hotel"})
        found = await session.call_tool("get_summary", {"title": "eiffel_tower"})
        restaurant = await session.call_tool("get_article", {"title": "Eiffel Tower Restaurant"})
    assert missing.isError is True
    assert "no Wikipedia article titled 'Eiffel Tower Hotel'" in missing.content[0].text
    assert "Las Vegas" not in missing.content[0].text and missing.structuredContent is None
    assert found.isError is False
    [summary] = found.structuredContent["evidence"]
    assert summary["title"] == "Eiffel Tower" and summary["source"] == "summary"
    assert summary["text"].startswith("The Eiffel Tower is a wrought-iron") \
        and "tallest" not in summary["text"]  # the first three sentences
    assert '"title": "Eiffel Tower"' in found.content[0].text  # the same evidence as JSON text
    assert restaurant.structuredContent["evidence"][0]["title"] == "Eiffel Tower Restaurant"


def test_an_abrupt_client_disconnect_logs_no_traceback(http_server):
    url, log_path = http_server
    client = (
        "import asyncio, os, sys\n"
        "from mcp import ClientSession\n"
        "from mcp.client.streamable_http import streamablehttp_client\n"
        "async def main():\n"
        "    async with streamablehttp_client(sys.argv[1]) as (r, w, _):\n"
        "        async with ClientSession(r, w) as s:\n"
        "            await s.initialize()\n"
        "            asyncio.create_task(s.call_tool('search_scholar', {'query': 'x'}))\n"
        "            await asyncio.sleep(0.3)\n"
        "            os._exit(0)\n"
        "asyncio.run(main())\n")
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", client, url], timeout=60,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
    time.sleep(1.0)
    assert "Traceback" not in log_path.read_text()


def test_disconnect_records_become_one_info_line():
    try:
        raise anyio.ClosedResourceError
    except anyio.ClosedResourceError:
        record = logging.LogRecord("mcp.server.streamable_http", logging.ERROR, __file__, 1,
                                   "Error in message router", (), sys.exc_info())
    logger = logging.getLogger("mcp.server.streamable_http")
    logger.setLevel(logging.INFO)
    assert QuietDisconnects().filter(record) is True
    assert record.exc_info is None and record.levelname == "INFO"
    assert record.getMessage() == "MCP client disconnected (ClosedResourceError)"
    try:
        raise ValueError("a real bug")
    except ValueError:
        other = logging.LogRecord("mcp.server.streamable_http", logging.ERROR, __file__, 1,
                                  "boom", (), sys.exc_info())
    assert QuietDisconnects().filter(other) is True and other.exc_info is not None


async def test_offline_server_does_not_list_online_only_tools(index_dir: Path):
    params = StdioServerParameters(command=sys.executable,
                                   args=server_args(index_dir, "--offline"), cwd=str(REPO),
                                   env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
    assert names == set(OFFLINE_TOOLS)


def test_default_port_is_not_a_local_model_servers():
    taken = {1234, 5000, 5001, 7860, 8000, 8080, 8765, 11434}  # LM Studio ... Ollama
    assert DEFAULT_PORT not in taken and parse_args([]).port == DEFAULT_PORT
