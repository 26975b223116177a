"""Provider and index faults as the project's readable errors.

A model server's or Milvus' own exception type reaches a CLI user as "the run stopped
(OpenAIAPIError: ...)" and a LangGraph server client as "An internal error occurred" (langgraph-api
shows the message of a ``FactDebateError``, a ``RuntimeError``, and hides other types').
:func:`backend_error` names the backend, the URL (credentials masked) and what failed.
"""

from __future__ import annotations

from factdebate.core.bounded_http import ReplyTooLarge
from factdebate.core.errors import BackendUnavailableError, exception_chain
from factdebate.core.settings import mask_url


def _first_line(exc: BaseException, limit: int = 240) -> str:
    message = getattr(exc, "message", None)  # openai's and pymilvus' own text, without a repr
    text = message if isinstance(message, str) and message else str(exc)
    return (text.strip().splitlines() or [type(exc).__name__])[0][:limit]


def backend_error(exc: BaseException) -> BackendUnavailableError | None:
    """A readable error naming the backend behind a provider or index fault, or None.

    Model servers (OpenAI and OpenAI-compatible: ``openai``/``langchain_openai`` errors: the URL
    that failed, the HTTP status or "cannot be reached") and Milvus (``pymilvus``, grpc) errors are
    recognised anywhere in the cause chain (:func:`exception_chain`); a ``FactDebateError`` in the
    chain is returned as it is when it is already a ``BackendUnavailableError``. Credentials in
    URLs are masked (``factdebate.core.settings.mask_url``). Used where a fault would otherwise
    reach a user as a bare library type (the CLI's "the run stopped"; LangGraph's API shows a
    ``FactDebateError``'s message and replaces other exceptions' with "An internal error
    occurred").
    """
    chain = list(exception_chain(exc))
    too_large = next((e for e in chain if isinstance(e, ReplyTooLarge)), None)
    if too_large is not None:  # the SDK reports it as a connection error: name the real cause
        return BackendUnavailableError(
            f"the model server's reply was too large: {too_large}",
            "check the model server; raise FACTDEBATE_PROVIDER_MAX_REPLY_BYTES only if such "
            "replies are expected")
    for seen in chain:
        if isinstance(seen, BackendUnavailableError):
            return seen
        module = type(seen).__module__.split(".", 1)[0]
        if module in ("openai", "langchain_openai"):
            request = getattr(seen, "request", None)
            url = mask_url(str(getattr(request, "url", "") or "")) or "its URL"
            status = getattr(seen, "status_code", None)
            body = getattr(seen, "body", None)
            said = body.get("error", body) if isinstance(body, dict) else None  # openai unwraps it
            said = said.get("message") if isinstance(said, dict) else None
            text = mask_url(str(said)[:240] if said else _first_line(seen))
            what = (f"the model server at {url} answered HTTP {status}" if isinstance(status, int)
                    else f"the model server is unreachable at {url}")
            return BackendUnavailableError(
                f"{what} ({type(seen).__name__}: {text})",
                "check that the model server runs and answers (--base-url / "
                "FACTDEBATE_BASE_URL, the model name, its API key)")
        if module in ("pymilvus", "grpc"):
            return BackendUnavailableError(
                f"Milvus failed ({type(seen).__name__}: {mask_url(_first_line(seen))})",
                "check the Milvus server or the index folder; a damaged index is rebuilt with "
                "factdebate index CORPUS.jsonl --index-dir DIR --replace")
    return None
