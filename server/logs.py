"""No secret in any log line of the server process, and no log line of its own loopback calls.

:func:`install` installs the project's log redaction (``core/log_redaction.py``: every record of
the process created redacted by the one secret filter), wraps the formatter of every handler the
process has then (the console handler langgraph-api and uvicorn configure before the app loads)
in :class:`RedactingFormatter`, so the rendered line itself passes the filter once more - values a
record carries that are not text (an exception object in a structured log event, rendered by the
formatter with ``repr``) included - and drops httpx's request lines of the server's own
in-process calls (``http://api/...``, the per-user run count of :mod:`factdebate.server.limits`):
they never leave the process.
"""

from __future__ import annotations

import logging

from factdebate.core import log_redaction
from factdebate.core.secrets_filter import redact_cut_off

LOOPBACK = " http://api/"
"""How httpx names a request of langgraph_sdk's in-process client (``get_client(url=None)``)."""


class _NoLoopback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            return LOOPBACK not in record.getMessage()
        except Exception:  # noqa: BLE001  # a malformed call: let logging report it
            return True


class RedactingFormatter(logging.Formatter):
    """A formatter whose every line is another formatter's, through the secret filter."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        """Redact what ``inner`` renders (None: logging's default format)."""
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        """``inner.format(record)`` without any secret the process knows; a record ``inner``
        cannot render is one redacted line naming why (logging's own report of a failed
        format prints the record's traceback as it is)."""
        try:
            return redact_cut_off(self.inner.format(record))
        except Exception as exc:  # noqa: BLE001  # a line that says so, never a raw traceback
            return redact_cut_off(f"{record.levelname} {record.name}: {record.msg!r} (this log "
                                  f"line could not be formatted: {type(exc).__name__}: {exc})")


def _handlers() -> list[logging.Handler]:
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                      if isinstance(v, logging.Logger))]
    return list(dict.fromkeys(h for lg in loggers for h in lg.handlers))


def redact_handlers() -> None:
    """Wrap the formatter of every handler of the process in :class:`RedactingFormatter`
    (idempotent; a handler made later gets its records redacted by the record factory)."""
    for handler in _handlers():
        if not isinstance(handler.formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter(handler.formatter))


def install() -> None:
    """Redact every log record created from now on and every line the process's handlers write;
    no loopback request lines (idempotent)."""
    log_redaction.install()
    redact_handlers()
    httpx_log = logging.getLogger("httpx")
    if not any(isinstance(f, _NoLoopback) for f in httpx_log.filters):
        httpx_log.addFilter(_NoLoopback())
