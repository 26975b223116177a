"""API-key authentication for LangGraph server deployments (wired in ``langgraph.json``).

The key comes from the server's environment (``FACTDEBATE_API_KEY``); clients send it as
``x-api-key`` (what ``langgraph_sdk.get_client(api_key=...)`` does) or ``Authorization: Bearer``.
No key sent -> 401; a wrong key -> 403. A server started without ``FACTDEBATE_API_KEY`` refuses
every request (401) unless ``FACTDEBATE_AUTH=off`` is set explicitly, for local development only:
deny by default, so a forgotten variable never exposes a deployment.
"""

from __future__ import annotations

import hmac
import os

from langgraph_sdk import Auth

auth = Auth()


def _presented_key(headers: dict[bytes, bytes]) -> str | None:
    key = headers.get(b"x-api-key")
    if key:
        return key.decode("utf-8", "replace")
    bearer = headers.get(b"authorization", b"").decode("utf-8", "replace")
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip() or None
    return None


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    """Accept the request if it carries the configured API key."""
    expected = os.environ.get("FACTDEBATE_API_KEY", "")
    if not expected:
        if os.environ.get("FACTDEBATE_AUTH", "").lower() == "off":
            return {"identity": "local-development"}
        raise Auth.exceptions.HTTPException(
            status_code=401,
            detail="this server has no FACTDEBATE_API_KEY configured; set it, or "
            "FACTDEBATE_AUTH=off for local development",
        )
    presented = _presented_key(headers)
    if presented is None:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="missing API key: send it in the x-api-key header"
        )
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        raise Auth.exceptions.HTTPException(status_code=403, detail="invalid API key")
    return {"identity": "api-key"}
