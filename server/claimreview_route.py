"""``GET /factdebate/claimreview/{thread_id}``: a thread's reviewed verdict as ClaimReview JSON-LD.

The markup is built by :mod:`factdebate.evaluation.claimreview`, the code of ``factdebate export
claimreview``: one ``ClaimReview`` (a JSON object), or for a ``check_text`` thread one per
reviewed claim (a JSON list), served as ``application/ld+json``.

Security: the caller's key is checked by the project's ``authenticate`` (the route's wrapper in
:mod:`factdebate.server.webapp`), and the thread is read through
:mod:`factdebate.server.review_queue`'s ownership check: the caller's own threads and their
team's (``FACTDEBATE_TEAMS``); anyone else's thread is 404, as a missing one. The publishing
organisation and page are the operator's settings (:data:`ORG_ENV`, :data:`URL_ENV`; ``{thread_id}``
in the URL is replaced by the thread's id): no client sets them, and the route takes no query
parameter (422). A thread whose verdict is not published - not reviewed, rejected, waiting for
review, running - is 409 with one line saying why.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from factdebate.core.errors import InputError
from factdebate.evaluation import claimreview as cr
from factdebate.server import review_queue
from factdebate.server.review_queue import Refused

ROUTE = "/factdebate/claimreview/{thread_id}"
ORG_ENV = "FACTDEBATE_CLAIMREVIEW_ORG"
"""The name of the organisation publishing the reviews (the ClaimReview's ``author``)."""
URL_ENV = "FACTDEBATE_CLAIMREVIEW_URL"
"""The http(s) URL of the page the reviews are published on; ``{thread_id}`` is replaced."""
MEDIA_TYPE = "application/ld+json"


def operator_publisher(thread_id: str, env: Mapping[str, str] | None = None) -> cr.Publisher:
    """The operator's :class:`~factdebate.evaluation.claimreview.Publisher` for ``thread_id``.

    Raises:
        Refused: 503 when the operator has not set (or mis-set) :data:`ORG_ENV`/:data:`URL_ENV`.
    """
    env = os.environ if env is None else env
    org, url = env.get(ORG_ENV, ""), env.get(URL_ENV, "")
    if not org.strip() or not url.strip():
        raise Refused(503, f"ClaimReview publishing is not set up on this server: the operator "
                      f"sets {ORG_ENV} and {URL_ENV}")
    try:
        return cr.publisher(org, url.replace("{thread_id}", thread_id))
    except InputError:
        raise Refused(503, f"ClaimReview publishing is misconfigured on this server: {URL_ENV} "
                      "is not an http(s) URL") from None


def _why_not(thread_id: str, chosen: Any) -> str:
    reasons = chosen.left_out
    if reasons.get("rejected") and len(reasons) == 1:
        why = "the reviewer rejected its verdict"
    elif reasons.get("unreviewed") and len(reasons) == 1:
        why = "its verdict is not reviewed"
    else:
        why = f"no reviewed verdict to publish ({chosen.left_out_line()})"
    return f"thread {thread_id} has no ClaimReview: {why}"


async def claim_reviews_of(client: Any, thread_id: str, reviewers_of: Collection[str],
                           query: Mapping[str, str], env: Mapping[str, str] | None = None,
                           ) -> list[dict[str, Any]]:
    """The ClaimReview objects of ``thread_id`` for a caller who may review ``reviewers_of``.

    Raises:
        Refused: 422 for a query parameter or an id that is not a UUID, 404 for a thread the
            caller may not see (or none), 409 for one without a published verdict, 503 when the
            operator has not set the publisher.
    """
    if query:
        raise Refused(422, f"{sorted(query)[0][:60]}: this route takes no query parameter (the "
                      "publisher is the operator's setting)")
    thread_id = review_queue.check_thread_id(thread_id)
    thread = await review_queue.visible_thread(client, thread_id, reviewers_of)
    pub = operator_publisher(thread_id, env)
    if review_queue.review_payload(thread) is not None:
        raise Refused(409, f"thread {thread_id} has no ClaimReview: it is waiting for review")
    if thread.get("status") == "busy":
        raise Refused(409, f"thread {thread_id} has no ClaimReview: a run is under way")
    values = thread.get("values") if isinstance(thread.get("values"), Mapping) else {}
    if not values:
        raise Refused(409, f"thread {thread_id} has no ClaimReview: it holds no verdict")
    verdicts = cr.verdicts_of_state(dict(values), thread_id)
    kept, chosen = cr.collect(verdicts)
    if not kept:
        raise Refused(409, _why_not(thread_id, chosen))
    reviews, _ = cr.claim_reviews(verdicts, pub)
    return reviews
