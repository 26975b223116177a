"""httpx clients whose replies are bounded in bytes, decoded: for the model and embedding providers.

The OpenAI SDK (used by ``ChatOpenAI`` for ``openai:`` models and every OpenAI-compatible server,
and by ``tools/embeddings_provider.py``) reads a whole reply into memory; a server that answers
with gigabytes - a broken proxy, a hostile endpoint, a gzip bomb - would grow the process with it.
A client from :func:`bounded_client` / :func:`bounded_async_client` wraps each reply's byte stream
in a response hook, before the body is read: a ``gzip``/``deflate`` body is decoded here (the
``Content-Encoding`` header removed, so httpx does not decode it again) and the decoded bytes are
counted; past the limit (``core/input_limits``: ``provider_reply_bytes``) reading stops with
:class:`ReplyTooLarge`. The request asks for ``identity, gzip, deflate`` only, so a body in
another encoding is counted as it arrives. A streamed completion is bounded the same way, in
total. The SDK reports the stop as a connection error whose cause is :class:`ReplyTooLarge`; the
retry policy does not retry it (``core/retry.is_retryable``) and the run's error names the limit
(``core/faults.backend_error``).
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from factdebate.core import input_limits

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
ACCEPT_ENCODING = "identity, gzip, deflate"


class ReplyTooLarge(RuntimeError):
    """A reply passed its size limit (decoded bytes); reading stopped there."""


class _Counter:
    """Decodes (``gzip``/``deflate``) and counts a reply's bytes against ``limit``."""

    def __init__(self, url: str, limit: int, setting: str, encoding: str | None) -> None:
        self.url, self.limit, self.setting, self.size = url, limit, setting, 0
        self.decoder = zlib.decompressobj(_WBITS[encoding]) if encoding else None

    def feed(self, chunk: bytes) -> bytes:
        if self.decoder is None:
            return self._count(chunk)
        out = []
        data = chunk
        while data:
            piece = self.decoder.decompress(data, self.limit - self.size + 1)
            out.append(self._count(piece))
            data = self.decoder.unconsumed_tail
        return b"".join(out)

    def end(self) -> bytes:
        return self._count(self.decoder.flush()) if self.decoder is not None else b""

    def _count(self, piece: bytes) -> bytes:
        self.size += len(piece)
        if self.size > self.limit:
            raise ReplyTooLarge(f"the reply from {_origin(self.url)} passed {self.limit} bytes "
                                f"(decoded); reading stopped ({self.setting})")
        return piece


def _origin(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}" + (f":{parsed.port}" if parsed.port else "")


class _Bounded(httpx.SyncByteStream):
    def __init__(self, inner: Any, counter: _Counter) -> None:
        self.inner, self.counter = inner, counter

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            out = self.counter.feed(chunk)
            if out:
                yield out
        tail = self.counter.end()
        if tail:
            yield tail

    def close(self) -> None:
        self.inner.close()


class _AsyncBounded(httpx.AsyncByteStream):
    def __init__(self, inner: Any, counter: _Counter) -> None:
        self.inner, self.counter = inner, counter

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            out = self.counter.feed(chunk)
            if out:
                yield out
        tail = self.counter.end()
        if tail:
            yield tail

    async def aclose(self) -> None:
        await self.inner.aclose()


def _counter(response: httpx.Response, limit_name: str) -> _Counter:
    """The counter of ``response``'s body; a body announced over the limit stops here, before
    a byte of it is read."""
    item = input_limits.LIMITS_BY_NAME[limit_name]
    limit = input_limits.limit(limit_name)
    url = str(response.request.url)
    encoding = response.headers.get("content-encoding", "").strip().lower() or None
    if encoding == "identity":
        encoding = None
    declared = response.headers.get("content-length", "")
    if encoding is None and declared.isdigit() and int(declared) > limit:
        raise ReplyTooLarge(f"the reply from {_origin(url)} announced {int(declared)} bytes, over "
                            f"the limit of {limit} ({item.setting}); not read")
    if encoding in _WBITS:
        del response.headers["content-encoding"]  # decoded here; httpx must not decode again
        response.headers.pop("content-length", None)
    else:
        encoding = None  # another encoding: counted as it arrives
    return _Counter(url, limit, item.setting, encoding)


def bounded_client(limit_name: str = "provider_reply_bytes", **kwargs: Any) -> httpx.Client:
    """An ``httpx.Client`` (``kwargs`` as httpx takes them) whose replies stop at the limit."""

    def hook(response: httpx.Response) -> None:
        response.stream = _Bounded(response.stream, _counter(response, limit_name))

    headers = {"Accept-Encoding": ACCEPT_ENCODING, **kwargs.pop("headers", {})}
    return httpx.Client(headers=headers, event_hooks={"response": [hook]}, **kwargs)


def bounded_async_client(limit_name: str = "provider_reply_bytes",
                         **kwargs: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose replies stop at the limit (as :func:`bounded_client`)."""

    async def hook(response: httpx.Response) -> None:
        response.stream = _AsyncBounded(response.stream, _counter(response, limit_name))

    headers = {"Accept-Encoding": ACCEPT_ENCODING, **kwargs.pop("headers", {})}
    return httpx.AsyncClient(headers=headers, event_hooks={"response": [hook]}, **kwargs)
