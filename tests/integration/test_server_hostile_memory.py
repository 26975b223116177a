"""A hostile wiki cannot grow a shared server: a real ``langgraph dev`` whose operator chose live
Wikipedia for the search tool (``FACTDEBATE_SEARCH_BACKEND=wikipedia``) serves runs while the
wiki answers a 300 MB extract, a gzip bomb and a redirect to another port. Each run ends with a
verdict and the fault in its flags; the server's resident memory after the hostile runs is back
within 10% of what it was after the benign runs before them, and the other listener received
nothing. Loopback stand-ins; the scripted model double."""

from __future__ import annotations

import json
import time
import zlib
from urllib.parse import parse_qs, urlparse

import pytest

from factdebate.evaluation.bench_hostile import QuietHandler
from factdebate.evaluation.bench_soak import tree_rss_mb
from tests.integration.loopback import serve_http
from tests.integration.servers import needs_langgraph, start_langgraph_dev, stop_server, tiny_index, warm_home

pytestmark = [needs_langgraph, pytest.mark.slow]

BIG = 300 << 20
hits_elsewhere: list[str] = []


def _bomb(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * (1 << 20)
    return b"".join([*(packer.compress(chunk) for _ in range(size >> 20)), packer.flush()])


BOMB = b""
"""The 1 GiB gzip bomb (~1 MB on the wire): made before the module's test by :func:`_gzip_bomb`,
not at import (compressing it takes seconds, which every collection would pay)."""


@pytest.fixture(scope="module", autouse=True)
def _gzip_bomb() -> None:
    global BOMB
    BOMB = _bomb(1 << 30)


class Wiki(QuietHandler):
    """``mode``: ok (a small page), extract (300 MB), bomb, redirect (to ``elsewhere``)."""

    mode = "ok"
    elsewhere = ""

    def do_GET(self):  # noqa: N802 - http.server's name
        params = {k: v[-1] for k, v in parse_qs(urlparse(self.path).query).items()}
        if params.get("list") == "search":
            return self.reply(200, json.dumps({"query": {"search": [{"title": "Eiffel Tower"}]}})
                              .encode())
        if Wiki.mode == "ok":
            page = {"title": "Eiffel Tower", "revisions": [{"revid": 1}],
                    "extract": "The Eiffel Tower is in Paris. It was completed in 1889."}
            return self.reply(200, json.dumps({"query": {"pages": [page]}}).encode())
        if Wiki.mode == "bomb":
            return self.reply(200, BOMB, {"Content-Encoding": "gzip"})
        if Wiki.mode == "redirect":
            return self.reply(302, b"", {"Location": f"{Wiki.elsewhere}/w/api.php?"
                                                     f"{urlparse(self.path).query}"})
        self.stream(b'{"query": {"pages": [{"title": "Eiffel Tower", "extract": "', BIG, b'"}]}}',
                    length=False)  # a 300 MB extract, streamed without a length


class Elsewhere(QuietHandler):
    def do_GET(self):  # noqa: N802
        hits_elsewhere.append(self.path)
        self.reply(200, b"{}")


def _run(url: str) -> dict:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    return client.runs.wait(None, "tool_mad", input={"claim": "The Eiffel Tower is in Paris."},
                            context={"debater_model": "scripted:agree", "max_rounds": 1,
                                     "scoring_mode": "none"}, raise_error=False)


def test_hostile_wiki_replies_leave_the_server_as_it_was(tmp_path):
    with serve_http(Wiki) as wiki, serve_http(Elsewhere) as other:
        Wiki.elsewhere = f"http://{other}"
        env = {"FACTDEBATE_HOME": str(warm_home(tmp_path / "home")), "FACTDEBATE_AUTH": "off",
               "FACTDEBATE_ALLOW_SCRIPTED": "1", "FACTDEBATE_INDEX_DIR": str(tiny_index(tmp_path)),
               "FACTDEBATE_SEARCH_BACKEND": "wikipedia",
               "FACTDEBATE_MEDIAWIKI_URL": f"http://{wiki}/w/api.php",
               "FACTDEBATE_WIKIPEDIA_CACHE_TTL_S": "0", "FACTDEBATE_MEDIAWIKI_RATE": "0"}
        proc, url = start_langgraph_dev(tmp_path, env)
        try:
            Wiki.mode = "ok"
            for _ in range(4):  # warm: imports, the model double, the index, the wiki client
                assert _run(url).get("label"), "a benign run gives a verdict"
            time.sleep(2)
            before = tree_rss_mb(proc.pid)
            peak = before
            for mode in ("extract", "bomb", "redirect", "extract", "bomb", "redirect"):
                Wiki.mode = mode
                out = _run(url)
                assert out.get("label"), (mode, out)
                assert any("tool" in str(f).lower() for f in out.get("flags") or []), (mode, out)
                peak = max(peak, tree_rss_mb(proc.pid))
            time.sleep(3)
            after = tree_rss_mb(proc.pid)
        finally:
            stop_server(proc)
    print(f"server RSS MB: before {before}, peak seen {peak}, after {after} "
          f"({after / before:.3f} of before)")
    assert after <= before * 1.10, (before, peak, after)
    assert hits_elsewhere == []
