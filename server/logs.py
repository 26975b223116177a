"""No secret in any log line of the server process, and no log line of its own loopback calls.

:func:`install` installs the project's log redaction (``core/log_redaction.py``: every record of
the process created redacted by the one secret filter) and drops httpx's request lines of the
server's own in-process calls (``http://api/...``, the per-user run count of
:mod:`factdebate.server.limits`): they never leave the process.
"""

from __future__ import annotations

import logging

from factdebate.core import log_redaction

LOOPBACK = " http://api/"
"""How httpx names a request of langgraph_sdk's in-process client (``get_client(url=None)``)."""


class _NoLoopback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            return LOOPBACK not in record.getMessage()
        except Exception:  # noqa: BLE001  # a malformed call: let logging report it
            return True


def install() -> None:
    """Redact every log record created from now on; no loopback request lines (idempotent)."""
    log_redaction.install()
    httpx_log = logging.getLogger("httpx")
    if not any(isinstance(f, _NoLoopback) for f in httpx_log.filters):
        httpx_log.addFilter(_NoLoopback())
