"""The interface MERMAID's executor calls tools through, and its two implementations.

``ToolProvider``: ``list_tools()`` -> names and descriptions, ``call(name, text)`` -> evidence.

* ``McpToolProvider``: the tools of an MCP server (``tools/mcp_server.py``), loaded with
  ``langchain-mcp-adapters`` (``MultiServerMCPClient``). One session is kept open per event loop by
  a background task that owns it (MCP sessions must be entered and left in the same task, while
  graph nodes run in their own tasks), so a stdio server is spawned once per run, not per call.
* ``InProcessToolProvider``: the same toolbox functions called directly - for graph tests and
  for deployments that do not want a second process.

Providers are cached per (configuration, event loop): HTTP clients and MCP sessions belong to the
loop that opened them.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from dataclasses import dataclass
from typing import Any, Protocol

from factdebate.core.errors import BackendUnavailableError
from factdebate.core.secrets_filter import redact
from factdebate.core.settings import mask_url
from factdebate.core.state import Evidence
from factdebate.tools.toolbox import TOOL_DESCRIPTIONS, Toolbox, ToolboxSettings

SERVER_KEY = "factdebate"


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the executor's prompt lists it."""

    name: str
    description: str


class ToolProvider(Protocol):
    """What the executor needs of a toolset."""

    async def list_tools(self) -> list[ToolSpec]:
        """Every tool the provider serves."""
        ...

    async def call(self, name: str, text: str) -> list[Evidence]:
        """Run tool ``name`` with ``text`` as its main argument (query or title)."""
        ...


class UnknownToolError(LookupError):
    """The executor asked for a tool the provider does not serve."""


def masked_fault(exc: Exception) -> Exception:
    """``exc``, or an error of the same kind whose message has no secret the process knows and
    the credentials of URLs masked (``factdebate.core.secrets_filter.redact``).

    Tool errors become MCP error texts and MERMAID's ``tool fault`` flags (state, checkpoints,
    traces, output); an operator's ``http://user:pass@mirror`` must not travel with them.
    The masked copy keeps the class when its constructor takes a message, else it is a
    ``RuntimeError`` naming the class; it is raised ``from None`` (the original chain holds the
    unmasked text).
    """
    text = str(exc)
    clean = redact(text)
    if clean == text:
        return exc
    try:
        copy = type(exc)(clean)
    except Exception:  # noqa: BLE001 - constructors with required keywords (httpx errors ...)
        return RuntimeError(f"{type(exc).__name__}: {clean}")
    return copy if str(copy) == clean else RuntimeError(f"{type(exc).__name__}: {clean}")


def _evidence_from(content: Any) -> list[Evidence]:
    """Parse a tool's JSON text reply (a string or LangChain text blocks) into evidence."""
    if isinstance(content, list):
        content = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    data = json.loads(content) if content else []
    return [Evidence(id=str(d.get("id", "")), title=str(d.get("title", "")),
                     text=str(d.get("text", "")), source=str(d.get("source", "")),
                     url=str(d.get("url", "")), score=float(d.get("score", 0.0) or 0.0))
            for d in data]


class InProcessToolProvider:
    """The toolbox functions, called directly."""

    def __init__(self, settings: ToolboxSettings) -> None:
        """Open the toolbox (lazily: nothing is read until a tool is called)."""
        self._functions = Toolbox(settings).functions()

    async def list_tools(self) -> list[ToolSpec]:
        """All toolbox tools."""
        return [ToolSpec(n, TOOL_DESCRIPTIONS[n]) for n in self._functions]

    async def call(self, name: str, text: str) -> list[Evidence]:
        """Call the function with ``text`` as its first parameter."""
        if name not in self._functions:
            raise UnknownToolError(name)
        fn = self._functions[name]
        first = next(iter(inspect.signature(fn).parameters))
        try:
            return await fn(**{first: text})
        except Exception as exc:
            masked = masked_fault(exc)
            if masked is exc:
                raise
            raise masked from None


class McpToolProvider:
    """Tools of one MCP server, over a session held open by a background task."""

    def __init__(self, connection: dict[str, Any]) -> None:
        """``connection``: a langchain-mcp-adapters connection (stdio or streamable_http)."""
        self.connection = connection
        self._tools: dict[str, Any] = {}
        self._ready: asyncio.Future[None] | None = None
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    async def _own_session(self) -> None:
        from langchain_mcp_adapters.client import MultiServerMCPClient
        from langchain_mcp_adapters.tools import load_mcp_tools

        assert self._ready is not None
        try:
            client = MultiServerMCPClient({SERVER_KEY: self.connection})  # type: ignore[dict-item]
            async with client.session(SERVER_KEY) as session:
                tools = await load_mcp_tools(session, handle_tool_errors=False)
                self._tools = {t.name: t for t in tools}
                self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:  # reported to the caller waiting on _ready
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else
                                          RuntimeError(f"MCP session ended: {exc!r}"))

    async def _open(self) -> None:
        if self._ready is None:
            self._closing = asyncio.Event()
            self._ready = asyncio.get_running_loop().create_future()
            self._owner = asyncio.create_task(self._own_session(), name="mcp-session")
        try:
            await asyncio.shield(self._ready)
        except Exception as exc:
            self._ready = None  # the next call tries to connect again
            where = self.connection.get("url") or " ".join(
                [str(self.connection.get("command", "")), *self.connection.get("args", [])[:4]])
            raise BackendUnavailableError(
                mask_url(f"MCP tool server {where} cannot be reached ({type(exc).__name__}: "
                         f"{exc})")[:400],
                "start it (python -m factdebate.tools.mcp_server --transport streamable-http --port P) and "
                "check mcp_url / mcp_command, or use tool_provider=in_process",
            ) from exc

    async def list_tools(self) -> list[ToolSpec]:
        """Tools the server lists."""
        await self._open()
        return [ToolSpec(t.name, t.description or "") for t in self._tools.values()]

    async def call(self, name: str, text: str) -> list[Evidence]:
        """Call the MCP tool with ``text`` as its first required argument."""
        await self._open()
        if name not in self._tools:
            raise UnknownToolError(name)
        tool = self._tools[name]
        schema = tool.args_schema if isinstance(tool.args_schema, dict) else \
            tool.args_schema.model_json_schema()
        params = schema.get("required") or list(schema.get("properties", {}))
        try:
            return _evidence_from(await tool.ainvoke({params[0]: text}))
        except Exception as exc:  # a server of another version may not mask its error texts
            masked = masked_fault(exc)
            if masked is exc:
                raise
            raise masked from None

    async def aclose(self) -> None:
        """End the session (a stdio server process exits with it)."""
        self._closing.set()
        if self._owner is not None:
            await asyncio.gather(self._owner, return_exceptions=True)


_cache: dict[tuple[str, int], ToolProvider] = {}


def cached_provider(key: str, factory: Any) -> ToolProvider:
    """The provider for ``key`` on the running loop (created with ``factory()`` on first use)."""
    loop = asyncio.get_running_loop()
    for stale in [k for k, p in _cache.items() if k[1] != id(loop) and _loop_closed(p)]:
        _cache.pop(stale, None)
    cache_key = (key, id(loop))
    if cache_key not in _cache:
        provider = factory()
        provider._loop = loop  # type: ignore[attr-defined]
        _cache[cache_key] = provider
    return _cache[cache_key]


def _loop_closed(provider: Any) -> bool:
    loop = getattr(provider, "_loop", None)
    return loop is None or loop.is_closed()
