"""The debate in the browser: a page at ``/app`` served by the LangGraph server itself.

Mounted through ``langgraph.json`` ``http.app`` (langgraph-api puts these routes before its own,
so only ``/app``, ``/app/...``, ``/factdebate/index`` and ``/factdebate/claimreview/...`` are
claimed here; ``/ui`` is
langgraph-api's). The page is static (``server/static/``: HTML, CSS and ES modules, no CDN) and
talks to the server's own API (threads, runs, streaming) with the user's API key in
``x-api-key``, so the same auth handlers and ownership filters apply: there is no second backend
for debate data.

Two small JSON routes the server API does not offer, under ``/app/api/``:

* ``GET /app/api/options``: the frameworks with the fields a run may set and the operator's model
  allow-list (what the pickers show);
* ``GET /app/api/evals[/results|/transcript]``: evaluation run folders under the operator's
  ``FACTDEBATE_RUNS_DIR`` (:mod:`factdebate.server.evals_browser`);
* ``GET /app/api/reviews[/{thread_id}]`` and ``POST /app/api/reviews/{thread_id}``: the caller's
  (and their team's) runs waiting for review, and a reviewer's decision on one
  (:mod:`factdebate.server.review_queue`).

and one for ``eval --server`` clients: ``GET /factdebate/index``, the identity of the index this
server's runs search (the operator's ``FACTDEBATE_INDEX_DIR``/``FACTDEBATE_MILVUS_URI``), as
``factdebate.evaluation.index_identity.public_identity`` gives it: corpus name and SHA-256,
passages, embedding model, index kinds and parameters, build time, ``status`` (ok, absent,
damaged); never the index folder, the Milvus URI or a credential. ``eval`` records it in
``run.json``; and ``GET /factdebate/claimreview/{thread_id}``, the reviewed verdict of one of the
caller's (or their team's) threads as ClaimReview JSON-LD
(:mod:`factdebate.server.claimreview_route`).

langgraph-api does not run its auth handlers on custom routes unless ``http.enable_custom_route_auth``
is set, and that would also lock the page itself (a browser cannot send a header when it opens a
URL). So the static files are public (they hold no data) and each JSON route (``/app/api/...``,
``/factdebate/index``) checks the key with the project's own ``authenticate`` handler: same keys,
same identities, same 401/403 messages, and Studio's ``x-auth-scheme`` bypass does not apply
here.

Every response under ``/app`` carries a Content-Security-Policy (own files and API only),
``frame-ancestors 'none'``/``X-Frame-Options: DENY`` and ``Referrer-Policy: no-referrer``
(:mod:`factdebate.server.guard`, the app's middleware, which langgraph-api runs on every route).
"""

from __future__ import annotations

import asyncio
import functools
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from langgraph_sdk import Auth
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from factdebate.core.context import Context, allowed_models_from_env, run_fields
from factdebate.core.settings import choices_of, default_of, field_types
from factdebate.evaluation.claimreview import dumps
from factdebate.evaluation.index_identity import INDEX_ROUTE, index_identity, public_identity
from factdebate.graphs.registry import FRAMEWORKS, context_class
from factdebate.server import claimreview_route, evals_browser, review_queue
from factdebate.server.auth import LIMITS, TEAMS, authenticate
from factdebate.server.egress import EgressFilter
from factdebate.server.guard import ServerGuard
from factdebate.server.lifespan import lifespan
from factdebate.server.loopback import loopback
from factdebate.testing.script import SCENARIOS

STATIC = Path(__file__).with_name("static")
TEXT_GRAPH = "check_text"
"""Graph id of the check-a-text graph (text mode), when ``langgraph.json`` serves it."""
_NO_STORE = {"cache-control": "no-store"}


class Denied(Exception):
    """A request to ``/app/api`` without a valid key (status and one-line detail)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


async def identity_of(request: Request) -> str:
    """The identity of the request's API key, checked by the server's own ``authenticate``.

    Raises:
        Denied: No key (401), a wrong key (403), or a server without keys (401).
    """
    headers = {k.lower().encode(): v.encode() for k, v in request.headers.items()}
    try:
        user = await authenticate(headers)
    except Auth.exceptions.HTTPException as exc:
        raise Denied(exc.status_code, str(exc.detail)) from None
    return str(user["identity"])


def api(handler: Any) -> Any:
    """Wrap a JSON route: the caller's identity first, errors as ``{"detail": one line}``."""

    @functools.wraps(handler)
    async def route(request: Request) -> Response:
        try:
            who = await identity_of(request)
            body = await handler(request, who)
            if isinstance(body, Response):  # a route with its own media type
                body.headers.update(_NO_STORE)
                return body
        except Denied as exc:
            return JSONResponse({"detail": exc.detail}, exc.status, headers=_NO_STORE)
        except (evals_browser.Refused, review_queue.Refused) as exc:  # claimreview_route's too
            return JSONResponse({"detail": exc.detail}, exc.status, headers=_NO_STORE)
        return JSONResponse(body, headers=_NO_STORE)

    return route


def _kind(hint: Any) -> str:
    for kind, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if hint is kind:
            return name
    origin = getattr(hint, "__origin__", hint)
    return {list: "list", dict: "dict"}.get(origin, "str")


def _field(f: Any, hint: Any) -> dict[str, Any]:
    default = default_of(f)
    bounds = list(f.metadata["range"]) if f.metadata.get("range") else None
    cap = LIMITS.caps.get(f.name)
    if bounds and cap is not None:  # the page offers what this server accepts
        bounds[1] = min(bounds[1], cap)
    return {"name": f.name, "kind": _kind(hint), "default": default,
            "description": f.metadata.get("description", ""),
            "range": bounds,
            "choices": list(choices_of(f, hint) or []) or None,
            "model": bool(f.metadata.get("model"))}


@functools.cache
def framework_options() -> list[dict[str, Any]]:
    """Every framework with the Context fields a client's run may set (operator-only ones left
    out), in declaration order; number ranges end at the operator's caps."""
    out = []
    for name in FRAMEWORKS.names():
        cls = context_class(name)
        meta = FRAMEWORKS.entry(name).meta
        allowed, hints = run_fields(cls), field_types(cls)
        out.append({
            "name": name, "title": meta.get("title", name), "paper": meta.get("paper", ""),
            "baseline": bool(meta.get("baseline")),
            "fields": [_field(f, hints[f.name]) for f in fields(cls) if f.name in allowed],
        })
    return out


def model_choices(allowed: frozenset[str]) -> list[str]:
    """Allow-list entries as the picker offers them: ``scripted:*`` as its scenarios."""
    out: list[str] = []
    for spec in sorted(allowed):
        if spec == "scripted:*":
            out.extend(f"scripted:{name}" for name in SCENARIOS.names())
        else:
            out.append(spec)
    return out


@api
async def options(request: Request, who: str) -> dict[str, Any]:
    """What the pickers show: frameworks, run fields, the allowed models, the caller."""
    allowed = allowed_models_from_env()
    return {"identity": who, "frameworks": framework_options(), "text_graph": TEXT_GRAPH,
            "models": model_choices(allowed), "allowed_models": sorted(allowed),
            "evals": evals_browser.runs_root() is not None}


@api
async def evals_list(request: Request, who: str) -> dict[str, Any]:
    """The run folders under ``FACTDEBATE_RUNS_DIR``."""
    return await evals_browser.list_runs()


@api
async def evals_results(request: Request, who: str) -> dict[str, Any]:
    """One run folder's record and result rows (``?run=<folder relative to the root>``)."""
    return await evals_browser.results(request.query_params.get("run", ""))


@api
async def evals_transcript(request: Request, who: str) -> dict[str, Any]:
    """One item's final debate state from the run folder's checkpoints (``?run=&item=``)."""
    params = request.query_params
    return await evals_browser.transcript(params.get("run", ""), params.get("item", ""))


@api
async def reviews(request: Request, who: str) -> dict[str, Any]:
    """The runs waiting for the caller's review (theirs and their team's), oldest first
    (``?limit=&offset=``)."""
    limit, offset = review_queue.page_params(request.query_params)
    return await review_queue.list_queue(loopback(), TEAMS.reviewers_of(who), limit, offset)


@api
async def review_item(request: Request, who: str) -> dict[str, Any]:
    """One run waiting for the caller's review."""
    return await review_queue.get_item(loopback(), request.path_params["thread_id"],
                                       TEAMS.reviewers_of(who))


@api
async def review_decision(request: Request, who: str) -> dict[str, Any]:
    """Resume one run waiting for review with the reviewer's decision; answers its outcome."""
    thread_id = review_queue.check_thread_id(request.path_params["thread_id"])
    try:  # the body's size is bounded by the server's request limit (server.guard)
        body = json.loads(await request.body() or b"null")
    except (ValueError, UnicodeDecodeError):
        raise review_queue.Refused(422, "body: not JSON") from None
    return await review_queue.resume(loopback(), thread_id, body, TEAMS.reviewers_of(who), who)


@api
async def claimreview(request: Request, who: str) -> Response:
    """The reviewed verdict of one of the caller's (or their team's) threads as ClaimReview
    JSON-LD; the publisher is the operator's setting."""
    reviews = await claimreview_route.claim_reviews_of(
        loopback(), request.path_params["thread_id"], TEAMS.reviewers_of(who),
        request.query_params)
    return Response(dumps(reviews), media_type=claimreview_route.MEDIA_TYPE)


def served_index() -> dict[str, Any]:
    """The identity of the index this server's runs search, as much of it as a client may know."""
    return public_identity(index_identity(Context()))


@api
async def index(request: Request, who: str) -> dict[str, Any]:
    """The index this server's runs search: corpus name and SHA-256, passages, embedding model,
    index kinds and parameters, build time, status; no folder, no Milvus URI."""
    return await asyncio.to_thread(served_index)


async def to_page(request: Request) -> Response:
    """Redirect /app to /app/, so relative asset URLs resolve under it."""
    # (langgraph-api parses route docstrings as YAML for /docs: a leading backquote breaks it)
    return RedirectResponse(url="/app/", status_code=307)


app = Starlette(routes=[
    Route("/app", to_page, methods=["GET"]),
    Route("/app/api/options", options, methods=["GET"]),
    Route("/app/api/evals", evals_list, methods=["GET"]),
    Route("/app/api/evals/results", evals_results, methods=["GET"]),
    Route("/app/api/evals/transcript", evals_transcript, methods=["GET"]),
    Route("/app/api/reviews", reviews, methods=["GET"]),
    Route("/app/api/reviews/{thread_id}", review_item, methods=["GET"]),
    Route("/app/api/reviews/{thread_id}", review_decision, methods=["POST"]),
    Route(INDEX_ROUTE, index, methods=["GET"]),
    Route(claimreview_route.ROUTE, claimreview, methods=["GET"]),
    Mount("/app", StaticFiles(directory=STATIC, html=True), name="app"),
], lifespan=lifespan,  # the index is found or built before the first request
    middleware=[Middleware(EgressFilter),  # outermost: every byte sent passes the secret filter
                Middleware(ServerGuard)])  # langgraph-api runs both on every route
"""The custom app langgraph-api merges with its own (``langgraph.json`` ``http.app``)."""
