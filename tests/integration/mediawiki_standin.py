"""A MediaWiki stand-in on loopback: the Action API calls ``tools/wikipedia_live.py`` makes.

A real HTTP server (``ThreadingHTTPServer`` on 127.0.0.1) answering ``GET /w/api.php`` with
MediaWiki's ``formatversion=2`` JSON:

* ``action=query&list=search&srsearch=Q&srlimit=N``: the pages sharing most words with ``Q``;
* ``action=query&prop=extracts|revisions&titles=T``: the page's plain text and revision id
  (``missing`` for an unknown title).

``StandIn.mode`` makes it misbehave: ``"500"`` answers HTTP 500, ``"html"`` an HTML page with
status 200, ``"hang"`` waits ``hang_s``
before answering, ``"maxlag"`` answers MediaWiki's maxlag error (``Retry-After: 1``) ``lagged``
times and then normally. Every request is recorded (``StandIn.seen``: its parameters, its
``User-Agent`` and the time it arrived).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

PAGES: dict[str, dict[str, Any]] = {
    "Eiffel Tower": {"revision": 1_100_001, "text": (
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
        "It is named after the engineer Gustave Eiffel, whose company designed and built the "
        "tower.\n\n"
        "== History ==\n"
        "Construction of the tower began in 1887 and was completed in 1889, as the entrance arch "
        "to the 1889 World's Fair.\n"
        "== Design ==\n"
        "The tower is 330 metres tall, about the same height as an 81-storey building.\n"
        "== See also ==\n"
        "List of tallest towers in Paris\n"
        "== References ==\n"
        "Eiffel Tower official site.\n")},
    "Gustave Eiffel": {"revision": 1_100_002, "text": (
        "Gustave Eiffel was a French civil engineer. His company built the Eiffel Tower in Paris "
        "for the 1889 World's Fair.\n")},
    "Paris": {"revision": 1_100_003, "text": (
        "Paris is the capital and largest city of France. Landmarks of Paris include the Eiffel "
        "Tower and the Louvre.\n")},
}


class StandIn(BaseHTTPRequestHandler):
    """The handler; class attributes hold the behaviour and the requests seen."""

    mode = "ok"
    hang_s = 5.0
    lagged = 0
    seen: list[dict[str, Any]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        """Answer one Action API request."""
        url = urlparse(self.path)
        params = {k: v[-1] for k, v in parse_qs(url.query).items()}
        StandIn.seen.append({"path": url.path, "params": params, "at": time.monotonic(),
                             "agent": self.headers.get("User-Agent", "")})
        if StandIn.mode == "500":
            return self._send(500, {"error": "internal"})
        if StandIn.mode == "html":  # a captive portal, or a URL that is no api.php
            return self._send(200, "<html>Sign in to the network</html>")
        if StandIn.mode == "hang":
            time.sleep(StandIn.hang_s)
        if StandIn.mode == "maxlag" and StandIn.lagged > 0:
            StandIn.lagged -= 1
            return self._send(200, {"error": {"code": "maxlag", "lag": 7,
                                              "info": "Waiting for a replica: 7 seconds lagged"}},
                              {"Retry-After": "1", "X-Database-Lag": "7"})
        if url.path != "/w/api.php" or params.get("action") != "query":
            return self._send(200, {"error": {"code": "badvalue", "info": "unknown action"}})
        if params.get("list") == "search":
            return self._send(200, {"batchcomplete": True, "query": {"search": search(
                params.get("srsearch", ""), int(params.get("srlimit", 10)))}})
        title = params.get("titles", "")
        page = PAGES.get(title)
        if page is None:
            return self._send(200, {"query": {"pages": [{"ns": 0, "title": title,
                                                          "missing": True}]}})
        return self._send(200, {"batchcomplete": True, "query": {"pages": [{
            "pageid": abs(hash(title)) % 10_000, "ns": 0, "title": title,
            "extract": page["text"], "revisions": [{"revid": page["revision"],
                                                    "parentid": page["revision"] - 1}]}]}})

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (its timeout) before the answer

    def log_message(self, *args: Any) -> None:
        """Quiet."""


def search(query: str, limit: int) -> list[dict[str, Any]]:
    """Titles ranked by the words they share with ``query`` (only pages sharing one)."""
    words = set(re.findall(r"\w+", query.casefold()))
    scored = []
    for title, page in PAGES.items():
        overlap = len(words & set(re.findall(r"\w+", f"{title} {page['text']}".casefold())))
        if overlap:
            scored.append((-overlap, title))
    return [{"ns": 0, "title": t} for _, t in sorted(scored)[:limit]]


def reset(mode: str = "ok", *, lagged: int = 0) -> None:
    """Forget the requests seen; behave as ``mode`` from now on."""
    StandIn.mode, StandIn.lagged, StandIn.seen = mode, lagged, []


@contextmanager
def running() -> Iterator[str]:
    """Serve on a free loopback port; yields the API URL (``http://127.0.0.1:P/w/api.php``)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/w/api.php"
    finally:
        httpd.shutdown()
        httpd.server_close()
