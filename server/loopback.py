"""The server's own in-process client (``langgraph_sdk`` with no URL: root path ``/noauth``).

The server's calls to itself - counting a user's runs and objects, pruning a thread's history,
reading a thread's status - go through it; no request leaves the process. One client per event
loop, shared by ``server.limits``, ``server.usage`` and ``server.trace_metadata``.
"""

from __future__ import annotations

import asyncio
from typing import Any

_clients: dict[int, Any] = {}

LOOPBACK_ROOT = "/noauth"
"""The ASGI ``root_path`` of the in-process client's requests (langgraph_sdk sets it; a request
from outside cannot: langgraph-api's auth middleware skips authentication on it for that reason)."""


def is_loopback(scope: Any) -> bool:
    """Whether ASGI ``scope`` is a request of the server's own in-process client: its reply goes
    to the server's code, never to a client (the rule langgraph-api's auth bypass applies,
    ``root_path`` ``/noauth`` or below it with a mount prefix)."""
    root = scope.get("root_path") or ""
    return root == LOOPBACK_ROOT or root.startswith(LOOPBACK_ROOT + "/")


def loopback() -> Any:
    """langgraph_sdk's in-process client of this very server; one per event loop."""
    from langgraph_sdk import get_client

    loop = id(asyncio.get_running_loop())
    if loop not in _clients:
        _clients[loop] = get_client(url=None, api_key=None)
    return _clients[loop]
