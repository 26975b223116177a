"""Reviewed verdicts as schema.org ``ClaimReview`` JSON-LD, the markup fact-check indexes read.

``factdebate export claimreview THREAD|RUN_DIR --org NAME --url URL`` writes one ``ClaimReview``
per verdict a reviewer approved or edited; a machine verdict is published unreviewed only with
``--unreviewed`` (its markup then says so: ``reviewBody`` :data:`UNREVIEWED_NOTE`), and a
rejected one never at all (:func:`collect` counts what it left out and why). The properties
(schema.org/ClaimReview; Google's fact-check markup reads the same ones):

* ``@context`` ``https://schema.org``, ``@type`` ``ClaimReview``;
* ``claimReviewed`` the claim; ``url`` the page the review is published on (``--url``, with
  ``#claim-N`` when a file holds several); ``datePublished`` the day of the decision;
* ``author`` the publishing ``Organization`` (``--org``, its ``url`` the site of ``--url``);
* ``reviewRating`` a ``Rating``: ``alternateName`` the textual verdict, ``ratingValue`` on a 1-5
  scale (``bestRating`` 5, ``worstRating`` 1; :data:`RATINGS`), ``ratingExplanation`` the
  rationale;
* ``itemReviewed`` a ``Claim``: ``appearance``, ``firstAppearance`` and ``author`` where known
  (``--appearance``, ``--claim-author``, or the verdict's own ``appearance``/``claim_author``);
* ``citation`` the evidence URLs the verdict rests on (the reviewer's evidence when an edit
  chose it); ``ClaimReview`` is a ``CreativeWork``, which has ``citation``.

Label -> rating, per label set (pubmedqa/medqa answers are not claims and have none):

========================  ===========  ======
label                     alternateName rating
========================  ===========  ======
SUPPORTS                  True          5
CONFLICTING (averitec)    Mixed         3
NOT ENOUGH INFO           Unproven      3
REFUTES                   False         1
========================  ===========  ======
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from factdebate.core.errors import InputError
from factdebate.core.labels import NEI, get_label_set
from factdebate.evaluation.reviewed import (
    PUBLISHED,
    Selection,
    final_label,
    review_of,
    thread_states,
)

SCHEMA_CONTEXT = "https://schema.org"
BEST, WORST = 5, 1
RATINGS: dict[str, tuple[str, int]] = {
    "SUPPORTS": ("True", 5), "CONFLICTING": ("Mixed", 3), NEI: ("Unproven", 3),
    "REFUTES": ("False", 1),
}
"""Canonical label -> (textual rating, value on the 1-5 scale)."""
CLAIM_LABEL_SETS = ("fever", "binary", "averitec")
"""Label sets whose verdicts are ratings of a claim."""

REQUIRED = ("@context", "@type", "claimReviewed", "reviewRating", "url")
"""Properties a ClaimReview must have (Google's fact-check markup: claimReviewed, reviewRating,
url)."""
RECOMMENDED = ("author", "datePublished", "itemReviewed")
UNREVIEWED_NOTE = ("Unreviewed machine verdict: no person reviewed this rating; it is the "
                   "automated claim checker's.")
"""What the markup of an unreviewed verdict says (``reviewBody``, and first in the rating's
``ratingExplanation``); its author is the publishing organisation, never a reviewer."""
RATING_REQUIRED = ("@type", "alternateName")
RATING_RECOMMENDED = ("ratingValue", "bestRating", "worstRating")


@dataclass
class Publisher:
    """Who publishes the reviews and where."""

    org: str
    url: str
    appearances: tuple[str, ...] = ()
    claim_author: str = ""


def publisher(org: str | None, url: str | None, appearances: list[str] | None = None,
              claim_author: str | None = None) -> Publisher:
    """A checked :class:`Publisher`; one line naming the problem otherwise."""
    if not org or not org.strip():
        raise InputError("export claimreview needs --org: a ClaimReview names the organisation "
                         "that publishes it (author)", "pass --org 'Your Desk'")
    if not url or not _http_url(url):
        raise InputError(f"export claimreview needs --url, an http(s) URL of the page the reviews "
                         f"are published on (got {url!r})" if url else
                         "export claimreview needs --url: a ClaimReview names the page it is "
                         "published on (url)", "pass --url https://example.org/fact-checks/123")
    for link in appearances or []:
        if not _http_url(link):
            raise InputError(f"--appearance {link!r} is not an http(s) URL",
                             "name the page where the claim appeared")
    return Publisher(org.strip(), url.strip(), tuple(appearances or ()),
                     (claim_author or "").strip())


def _http_url(text: str) -> bool:
    parts = urlsplit(text.strip())
    return parts.scheme in ("http", "https") and bool(parts.netloc)


@dataclass
class Verdict:
    """One verdict to publish: a claim with its label, rationale, evidence and review."""

    key: str
    claim: str
    label: str | None
    rationale: str
    evidence: list[dict[str, Any]]
    review: dict[str, Any] | None
    task: str
    extra: dict[str, Any] = field(default_factory=dict)


def verdicts_of_rows(rows: list[dict[str, Any]], task: str) -> list[Verdict]:
    """A run folder's finished rows as verdicts (error rows have none)."""
    return [Verdict(key=str(r.get("item_id")), claim=str(r.get("claim") or ""),
                    label=(r.get("prediction") or {}).get("label"),
                    rationale=str((r.get("prediction") or {}).get("rationale") or ""),
                    evidence=list(r.get("evidence") or []), review=review_of(r),
                    task=str(r.get("task") or task), extra=r)
            for r in rows if r.get("status") == "ok"]


def _claim_review(values: dict[str, Any], entry: dict[str, Any], n: int) -> dict[str, Any] | None:
    """The review of claim ``n`` of a checked text: on the claim, or in the state's ``review``
    (a list in claim order, or a mapping by claim key or number)."""
    if isinstance(entry.get("review"), dict):
        return entry["review"]
    reviews = values.get("review")
    if isinstance(reviews, list) and n - 1 < len(reviews) and isinstance(reviews[n - 1], dict):
        return reviews[n - 1]
    if isinstance(reviews, dict) and "decision" not in reviews:
        found = reviews.get(str(entry.get("key"))) or reviews.get(str(n))
        return found if isinstance(found, dict) else None
    return None


def verdicts_of_state(values: dict[str, Any], thread: str, task: str = "fever") -> list[Verdict]:
    """A thread's final state as verdicts: one per verified claim of a checked text
    (``check``), else the one verdict of the claim."""
    task = str(values.get("task") or task)
    check = values.get("check")
    if isinstance(check, dict) and isinstance(check.get("claims"), list):
        found = []
        for n, entry in enumerate(check["claims"], start=1):
            if not isinstance(entry, dict) or entry.get("status", "verify") != "verify":
                continue
            review = _claim_review(values, entry, n)
            found.append(Verdict(key=f"{thread}#{n}", claim=str(entry.get("claim") or ""),
                                 label=entry.get("label"),
                                 rationale=str(entry.get("rationale") or ""),
                                 evidence=list(entry.get("evidence") or []),
                                 review=review if review and review.get("decision") else None,
                                 task=task, extra=entry))
        return found
    review = values.get("review")
    return [Verdict(key=thread, claim=str(values.get("claim") or ""), label=values.get("label"),
                    rationale=str(values.get("rationale") or ""),
                    evidence=list(values.get("verdict_evidence") or values.get("evidence") or []),
                    review=review if isinstance(review, dict) and review.get("decision") else None,
                    task=task, extra=values)]


def collect(verdicts: list[Verdict], *, unreviewed: bool = False,
            ) -> tuple[list[tuple[Verdict, str]], Selection]:
    """The publishable verdicts with their reviewer's label, and what was left out, counted:
    ``unreviewed``, ``rejected``, ``no_rating`` (a label set without ratings, or no label).
    With ``unreviewed`` the verdicts no reviewer decided are kept too, with the machine's label
    (:func:`claim_review` marks them); rejected ones never are."""
    chosen = Selection(rows=len(verdicts))
    kept: list[tuple[Verdict, str]] = []
    for v in verdicts:
        decision = (v.review or {}).get("decision")
        if v.review is None and not unreviewed:
            chosen.left_out["unreviewed"] += 1
        elif v.review is None:
            label = _rated_label(v)
            if label is None:
                chosen.left_out["no_rating"] += 1
            else:
                kept.append((v, label))
        elif decision == "reject":
            chosen.left_out["rejected"] += 1
        elif decision not in PUBLISHED:
            chosen.left_out["unknown_decision"] += 1
        else:
            label = _rated_label(v)
            if label is None:
                chosen.left_out["no_rating"] += 1
            else:
                kept.append((v, label))
    return kept, chosen


def _rated_label(v: Verdict) -> str | None:
    if v.task not in CLAIM_LABEL_SETS:
        return None
    raw = final_label({"prediction": {"label": v.label}}, v.review or {})
    label = get_label_set(v.task).normalise(raw) if raw else None
    return label if label in RATINGS else None


def _cited_urls(v: Verdict) -> list[str]:
    chosen = ((v.review or {}).get("changed") or {}).get("evidence_ids")
    wanted = {str(i) for i in chosen} if isinstance(chosen, list) else None
    urls: list[str] = []
    for e in v.evidence:
        if not isinstance(e, dict) or (wanted is not None and str(e.get("id")) not in wanted):
            continue
        url = str(e.get("url") or "")
        if _http_url(url) and url not in urls:
            urls.append(url)
    return urls


def _site(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


def claim_review(v: Verdict, label: str, pub: Publisher, *, anchor: str = "") -> dict[str, Any]:
    """The ``ClaimReview`` object of one reviewed verdict (module doc)."""
    text, value = RATINGS[label]
    rating: dict[str, Any] = {"@type": "Rating", "ratingValue": value, "bestRating": BEST,
                              "worstRating": WORST, "alternateName": text}
    if v.rationale:
        rating["ratingExplanation"] = v.rationale
    item: dict[str, Any] = {"@type": "Claim"}
    appearances = list(pub.appearances) or [str(a) for a in _as_list(v.extra.get("appearance"))
                                             if _http_url(str(a))]
    first = v.extra.get("first_appearance")
    if appearances:
        item["appearance"] = [{"@type": "CreativeWork", "url": a} for a in appearances]
        item["firstAppearance"] = {"@type": "CreativeWork", "url": str(first) if first and
                                   _http_url(str(first)) else appearances[0]}
    author = pub.claim_author or str(v.extra.get("claim_author") or "")
    if author:
        item["author"] = {"@type": "Person", "name": author}
    review = v.review or {}
    if v.review is None:  # only with --unreviewed: the markup itself says so
        rating["ratingExplanation"] = f"{UNREVIEWED_NOTE} {v.rationale}".strip()
    published = {
        "@context": SCHEMA_CONTEXT, "@type": "ClaimReview",
        "url": pub.url + (f"#{anchor}" if anchor and "#" not in pub.url else ""),
        "claimReviewed": v.claim,
        "author": {"@type": "Organization", "name": pub.org, "url": _site(pub.url)},
        "reviewRating": rating, "itemReviewed": item,
    }
    at = str(review.get("at") or "")
    if at:
        published["datePublished"] = at[:10]
    elif v.review is None:
        from datetime import UTC, datetime

        published["datePublished"] = datetime.now(UTC).date().isoformat()
        published["reviewBody"] = UNREVIEWED_NOTE
    citations = _cited_urls(v)
    if citations:
        published["citation"] = citations
    return published


def _as_list(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def claim_reviews(verdicts: list[Verdict], pub: Publisher, *, unreviewed: bool = False,
                  ) -> tuple[list[dict[str, Any]], Selection]:
    """The ``ClaimReview`` objects of the publishable verdicts and what was left out
    (``unreviewed``: :func:`collect`).

    Raises:
        InputError: none is publishable (the line says how many were left out and why).
    """
    kept, chosen = collect(verdicts, unreviewed=unreviewed)
    if not kept:
        raise InputError(f"no reviewed verdict to publish ({len(verdicts)} verdict(s); "
                         f"{chosen.left_out_line()})",
                         "a verdict is published once a reviewer approved or edited it")
    several = len(kept) > 1
    return [claim_review(v, label, pub, anchor=f"claim-{n}" if several else "")
            for n, (v, label) in enumerate(kept, start=1)], chosen


def check_claim_review(obj: Any) -> list[str]:
    """Problems of one ClaimReview object against the required and recommended properties
    (empty when it has them all, well formed)."""
    if not isinstance(obj, dict):
        return ["not a JSON object"]
    problems = [f"missing {p}" for p in (*REQUIRED, *RECOMMENDED) if not obj.get(p)]
    if obj.get("@type") != "ClaimReview":
        problems.append(f"@type is {obj.get('@type')!r}, not 'ClaimReview'")
    if str(obj.get("@context", "")).rstrip("/") not in ("https://schema.org", "http://schema.org"):
        problems.append("@context is not schema.org")
    if obj.get("url") and not _http_url(str(obj["url"])):
        problems.append("url is not an http(s) URL")
    rating = obj.get("reviewRating")
    if isinstance(rating, dict):
        problems += [f"reviewRating: missing {p}" for p in (*RATING_REQUIRED, *RATING_RECOMMENDED)
                     if rating.get(p) in (None, "")]
        if rating.get("@type") != "Rating":
            problems.append("reviewRating: @type is not 'Rating'")
        values = [rating.get(k) for k in ("worstRating", "ratingValue", "bestRating")]
        if all(isinstance(x, int) for x in values) and not values[0] <= values[1] <= values[2]:
            problems.append("reviewRating: ratingValue is outside worstRating..bestRating")
    author = obj.get("author")
    if isinstance(author, dict) and (author.get("@type") not in ("Organization", "Person")
                                     or not author.get("name")):
        problems.append("author: needs @type Organization or Person and a name")
    item = obj.get("itemReviewed")
    if isinstance(item, dict) and item.get("@type") != "Claim":
        problems.append("itemReviewed: @type is not 'Claim'")
    date = str(obj.get("datePublished") or "")
    if date and not (len(date) >= 10 and date[4] == "-" and date[7] == "-"):
        problems.append("datePublished is not an ISO 8601 date")
    return problems


def dumps(reviews: list[dict[str, Any]]) -> str:
    """The JSON-LD text: one object, or a list of them; no control character raw (the same JSON
    value, safe to print to a terminal)."""
    from factdebate.core.control_chars import json_text

    data: Any = reviews[0] if len(reviews) == 1 else reviews
    return json_text(data, indent=2) + "\n"


# -- reading the verdicts ------------------------------------------------------------------------
async def thread_values_local(thread: str, db: Path) -> dict[str, Any]:
    """The final state of ``thread`` in the SQLite checkpoint file ``db``.

    Raises:
        InputError: the file does not exist, or holds no such thread.
    """
    if not db.is_file():
        raise InputError(f"checkpoint file {db} does not exist",
                         "name the --checkpoint-db the run used")
    found = await thread_states(db, [thread])
    if thread not in found:
        raise InputError(f"no thread {thread!r} in {db}",
                         "name a --thread-id that ran with this --checkpoint-db")
    return found[thread]


async def thread_values_server(thread: str, url: str, api_key: str | None) -> dict[str, Any]:
    """The final state of ``thread`` on a LangGraph server.

    Raises:
        InputError: the server has no such thread.
        BackendUnavailableError: the server does not answer or refuses the key.
    """
    import httpx
    from langgraph_sdk import get_client

    from factdebate.core.errors import BackendUnavailableError
    from factdebate.core.settings import mask_url

    client = get_client(url=url, api_key=api_key)
    try:
        state = await client.threads.get_state(thread)
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code in (404, 422):
            raise InputError(f"server {mask_url(url)} has no thread {thread!r}",
                             "name a thread id of that server") from exc
        raise BackendUnavailableError(
            f"server {mask_url(url)} refused the thread's state (HTTP "
            f"{exc.response.status_code})", "check --server and FACTDEBATE_API_KEY") from exc
    except httpx.TransportError as exc:
        raise BackendUnavailableError(f"server {mask_url(url)} does not answer ({exc})",
                                      "check --server") from exc
    return dict(state.get("values") or {})
