"""Every live source's HTTP reply is bounded (tools/web_apis.py ``_Client._get``): a reply over
the size limit stops where the limit is (decoded bytes, so a gzip bomb stops too), and redirects
are followed only within the configured URL's host and port - a listener on another loopback
port receives nothing. Real HTTP servers on loopback; the clients are the product's own
(``MediaWikiClient``, the base of live Wikipedia's retriever and MERMAID's wiki tools)."""

from __future__ import annotations

import asyncio
import gzip
import json
import resource

import pytest

from factdebate.core.errors import ConfigError
from factdebate.evaluation.bench_hostile import QuietHandler
from factdebate.tools.web_apis import MediaWikiClient, RedirectRefused, ReplyTooLarge
from tests.integration.loopback import serve_http

BIG = 64 << 20  # the body the stand-in sends in 1 MiB writes, more than any limit tested here
BOMB = b""
"""A gzip bomb, ~256 KB on the wire, 256 MiB decoded: made before the module's first test by
:func:`_gzip_bomb`, not at import (every collection would pay for it)."""
received: list[str] = []  # paths the *other* listener was asked for


@pytest.fixture(scope="module", autouse=True)
def _gzip_bomb() -> None:
    global BOMB
    BOMB = gzip.compress(b"\0" * (256 << 20), compresslevel=9)


class Wiki(QuietHandler):
    """``/ok``: a small JSON reply; ``/big``: 64 MiB; ``/bomb``: a gzip bomb; ``/away``: a
    redirect to the listener in ``Wiki.elsewhere``; ``/home``: a redirect to ``/ok``."""

    elsewhere = ""

    def do_GET(self):  # noqa: N802 - the stdlib's name
        path = self.path.split("?")[0]
        if path == "/ok":
            body = json.dumps({"query": {"search": [{"title": "Paris"}]}}).encode()
            self.reply(200, body, {"Content-Type": "application/json"})
        elif path == "/big":
            self.stream(b"", BIG, b"", length=False)
        elif path == "/bomb":
            self.reply(200, BOMB, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        elif path == "/away":
            self.reply(302, b"", {"Location": f"{Wiki.elsewhere}/stolen?srsearch=claim"})
        elif path == "/home":
            self.reply(301, b"", {"Location": "/ok"})
        else:
            self.reply(404, b"{}", {})


class Elsewhere(QuietHandler):
    def do_GET(self):  # noqa: N802
        received.append(self.path)
        self.reply(200, b"{}")


@pytest.fixture(scope="module")
def wiki():
    with serve_http(Wiki) as host, serve_http(Elsewhere) as other:
        Wiki.elsewhere = f"http://{other}"
        yield f"http://{host}"


def _get(base: str, path: str) -> bytes:
    async def go() -> bytes:
        client = MediaWikiClient(base)
        try:
            return (await client._get(path, {"srsearch": "claim"})).content
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_a_small_reply_and_a_same_host_redirect_are_read(wiki):
    assert json.loads(_get(wiki, "ok"))["query"]["search"][0]["title"] == "Paris"
    assert json.loads(_get(wiki, "home"))["query"]["search"][0]["title"] == "Paris"


def test_a_reply_over_the_limit_stops_at_the_limit(wiki, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_LIVE_MAX_REPLY_BYTES", str(2 << 20))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ReplyTooLarge, match=r"(passed|over the limit of) 2097152 bytes"):
        _get(wiki, "big")
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grew_mib < 48, grew_mib  # far below the 64 MiB the server offered


def test_a_gzip_bomb_is_counted_decoded_and_stops(wiki, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_LIVE_MAX_REPLY_BYTES", str(4 << 20))
    assert len(BOMB) < 1 << 20
    with pytest.raises(ReplyTooLarge, match="decoded"):
        _get(wiki, "bomb")


def test_a_redirect_to_another_port_reaches_nothing(wiki):
    received.clear()
    with pytest.raises(RedirectRefused, match="only redirects within"):
        _get(wiki, "away")
    assert received == []


def test_a_bad_limit_setting_is_one_config_error(wiki, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_LIVE_MAX_REPLY_BYTES", "lots")
    with pytest.raises(ConfigError, match="FACTDEBATE_LIVE_MAX_REPLY_BYTES='lots'"):
        _get(wiki, "ok")
