"""Credentials in URLs are masked in every log line of the server process (issue #21, item 6).

The operator's URLs may carry credentials (``FACTDEBATE_BASE_URL=http://user:pass@host/v1``, a
Milvus or MCP URL). The HTTP clients log each request line with the full URL (httpx: ``HTTP
Request: POST http://user:pass@host/v1/chat/completions "HTTP/1.1 200 OK"``), and langgraph-api
prints those records into the server log. :func:`install` wraps the logging record factory once
per process, so every record, from any library and through any handler (langgraph-api's structlog
renderer included), is created with :func:`factdebate.core.context.mask_url` applied to its
message: ``http://user:***@host``. Structured (dict) messages get their string values masked.

The server's own in-process calls (``http://api/...``, the per-user run count of
:mod:`factdebate.server.limits`) are not logged as HTTP requests: they never leave the process.
"""

from __future__ import annotations

import logging
from typing import Any

from factdebate.core.context import mask_url

_INSTALLED = "_factdebate_masks_urls"
LOOPBACK = " http://api/"
"""How httpx names a request of langgraph_sdk's in-process client (``get_client(url=None)``)."""


class _NoLoopback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            return LOOPBACK not in record.getMessage()
        except Exception:  # noqa: BLE001  # a malformed call: let logging report it
            return True


def _masked_message(record: logging.LogRecord) -> None:
    msg = record.msg
    if isinstance(msg, dict):
        record.msg = {k: mask_url(v) if isinstance(v, str) else v for k, v in msg.items()}
        return
    if not isinstance(msg, str) and not record.args:
        return
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001  # a malformed call: leave it to logging's own report
        return
    masked = mask_url(text)
    if masked != text:
        record.msg, record.args = masked, None


def install() -> None:
    """Mask credentials in URLs of every log record created from now on (idempotent)."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, _INSTALLED, False):
        return

    def masking_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        _masked_message(record)
        return record

    setattr(masking_factory, _INSTALLED, True)
    logging.setLogRecordFactory(masking_factory)
    logging.getLogger("httpx").addFilter(_NoLoopback())
