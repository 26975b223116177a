"""No secret in any log line of a factdebate process (the CLI's and the LangGraph server's).

The operator's URLs may carry credentials (``FACTDEBATE_BASE_URL=http://user:pass@host/v1``, a
Milvus or MCP URL) and a provider's error may quote the request's ``Authorization`` header (a 401
that repeats ``Bearer sk-...`` or ``Basic base64(user:pass)``); the HTTP clients log each request
line with its URL, the retry policy (``core/retry``) logs each retried fault, langgraph-api logs
every failed run with its exception and traceback. :func:`install` wraps the logging record
factory once per process, so every record, from any library and through any handler (structlog's
renderer included), is created redacted by the project's one secret filter
(:func:`factdebate.core.secrets_filter.redact`): its message (structured dict messages: their
values), and, when the traceback of its exception holds a secret, that traceback, rendered and
redacted into the message (the exception itself is then dropped from the record, so no handler
renders it again; a structured event stays a dict, the redacted traceback under its
``exception`` key unless it carries one already). The CLI installs it in its entry point, the
server in its auth module (``server/logs.py``).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from factdebate.core.secrets_filter import redact, redact_value

_INSTALLED = "_factdebate_redacts"


def redact_record(record: logging.LogRecord) -> None:
    """Redact ``record`` in place: message, arguments, and the traceback it carries."""
    msg = record.msg
    if isinstance(msg, dict):
        record.msg = redact_value(msg)
    elif isinstance(msg, str) or record.args:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001  # a malformed call: leave it to logging's own report
            text = None
        if text is not None:
            clean = redact(text)
            if clean != text:
                record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None:
        rendered = "".join(traceback.format_exception(*record.exc_info))
        clean = redact(rendered)
        if clean != rendered:
            if isinstance(record.msg, dict):  # structlog's event: it stays one, for its formatter
                record.msg = {"exception": clean.rstrip(), **record.msg}
            else:
                record.msg = f"{record.getMessage()}\n{clean.rstrip()}"
            record.args, record.exc_info, record.exc_text = None, None, None


def install() -> None:
    """Redact every log record created from now on (idempotent)."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, _INSTALLED, False):
        return

    def redacting_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        redact_record(record)
        return record

    setattr(redacting_factory, _INSTALLED, True)
    logging.setLogRecordFactory(redacting_factory)
