"""MERMAID's tool server: the toolbox (``tools/toolbox.py``) over the Model Context Protocol.

Run it as its own process::

    python -m factdebate.tools.mcp_server --transport stdio
    python -m factdebate.tools.mcp_server --transport streamable-http --port 8765   # http://127.0.0.1:8765/mcp

Index settings come from the flags or, while a flag is not given, from the same environment
variables the Context reads (``FACTDEBATE_INDEX_DIR``, ``FACTDEBATE_MILVUS_URI``,
``FACTDEBATE_SEARCH_BACKEND``); the online clients read their base-URL overrides
(``FACTDEBATE_MEDIAWIKI_URL`` ...). Every tool returns a JSON list of ``Evidence`` objects as one
text block; a failing tool returns an MCP tool error (``isError``), never a crashed server.
Nothing is printed on stdout (stdio transport uses it for the protocol).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from factdebate.tools.base import RetrieverSettings
from factdebate.tools.toolbox import TOOL_DESCRIPTIONS, Toolbox, ToolboxSettings
from mcp.server.fastmcp import FastMCP

from factdebate.core.context import default_index_dir
from factdebate.core.state import Evidence

SERVER_NAME = "factdebate-tools"


def _serve(fn: Callable[..., Awaitable[list[Evidence]]]) -> Callable[..., Awaitable[str]]:
    """Wrap a toolbox function so it returns its evidence as one JSON text block."""

    @functools.wraps(fn)
    async def tool(**kwargs: Any) -> str:
        return json.dumps(await fn(**kwargs), ensure_ascii=False)

    signature = inspect.signature(fn)
    tool.__signature__ = signature.replace(return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {**{p: v.annotation for p, v in signature.parameters.items()},
                            "return": str}
    return tool


def build_server(settings: ToolboxSettings, *, host: str = "127.0.0.1", port: int = 8000
                 ) -> FastMCP:
    """A FastMCP server exposing every toolbox function under its paper name."""
    server = FastMCP(SERVER_NAME, host=host, port=port, log_level="WARNING")
    toolbox = Toolbox(settings)
    for name, fn in toolbox.functions().items():
        server.add_tool(_serve(fn), name=name, description=TOOL_DESCRIPTIONS[name],
                        structured_output=False)
    return server


def resolve_web_backend(name: str) -> str:
    """``auto`` -> ``tavily`` with a TAVILY_API_KEY, else the offline ``local_search``."""
    if name == "auto":
        return "tavily" if os.environ.get("TAVILY_API_KEY") else "local_search"
    return name


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line flags of the server."""
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m factdebate.tools.mcp_server",
                                description=__doc__.split("\n")[0])
    p.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--index-dir", default=env("FACTDEBATE_INDEX_DIR") or str(default_index_dir()))
    p.add_argument("--milvus-uri", default=env("FACTDEBATE_MILVUS_URI") or "")
    p.add_argument("--embedding-model", default="minilm")
    p.add_argument("--wiki-backend", default="keyword",
                   help="keyword | milvus (local corpus) | mediawiki (online API)")
    p.add_argument("--web-backend", default=env("FACTDEBATE_SEARCH_BACKEND") or "auto",
                   help="auto | tavily | local_search")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Start the server with the parsed flags (blocks until the transport closes)."""
    args = parse_args(argv)
    retriever = RetrieverSettings(
        index_dir=args.index_dir,
        milvus_uri=args.milvus_uri or os.path.join(args.index_dir, "milvus.db"),
        embedding_model=args.embedding_model,
    )
    settings = ToolboxSettings(retriever=retriever, wiki_backend=args.wiki_backend,
                               web_backend=resolve_web_backend(args.web_backend))
    build_server(settings, host=args.host, port=args.port).run(transport=args.transport)


if __name__ == "__main__":
    main()
