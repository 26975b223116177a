"""ClaimReview JSON-LD checked by a real JSON-LD processor (PyLD) against schema.org's vocabulary
as rdflib ships it (``rdflib.namespace.SDO``), offline.

The markup keeps ``"@context": "https://schema.org"``; PyLD's document loader here serves, for
that URL (and ``http://schema.org``), a context derived from SDO: every term to its IRI,
``@vocab`` ``https://schema.org/``, the URL-valued properties typed ``@id``.
"""

from __future__ import annotations

import functools
from typing import Any

SCHEMA = "https://schema.org/"
IRI_VALUED = ("url", "sameAs")
"""Properties whose value is a URL (schema.org range URL): typed ``@id``."""


@functools.cache
def vocabulary() -> frozenset[str]:
    """The IRIs of every schema.org term rdflib's SDO namespace defines."""
    from rdflib.namespace import SDO

    return frozenset(f"{SCHEMA}{term}" for term in SDO.__annotations__)


@functools.cache
def schema_context() -> dict[str, Any]:
    """The JSON-LD context served for ``https://schema.org``, derived from SDO."""
    from rdflib.namespace import SDO

    ctx: dict[str, Any] = {"@vocab": SCHEMA}
    for term in SDO.__annotations__:
        ctx[term] = ({"@id": f"{SCHEMA}{term}", "@type": "@id"} if term in IRI_VALUED
                     else f"{SCHEMA}{term}")
    return {"@context": ctx}


def loader(url: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """PyLD document loader: schema.org's context offline; any other URL is an error."""
    if url.rstrip("/") in ("https://schema.org", "http://schema.org"):
        return {"contentType": "application/ld+json", "contextUrl": None, "documentUrl": url,
                "document": schema_context()}
    raise ValueError(f"no network in the tests: {url}")


def _expected_iri(key: str) -> str:
    entry = schema_context()["@context"].get(key)
    if isinstance(entry, dict):
        return str(entry["@id"])
    return str(entry) if entry else f"{SCHEMA}{key}"


def _walk(compact: Any, expanded: Any, where: str, problems: list[str]) -> None:
    if isinstance(compact, list):
        exp = expanded if isinstance(expanded, list) else [expanded]
        if len(compact) != len(exp):
            problems.append(f"{where}: {len(compact)} values became {len(exp)}")
        for n, (c, e) in enumerate(zip(compact, exp, strict=False)):
            _walk(c, e, f"{where}[{n}]", problems)
        return
    if not isinstance(compact, dict):
        return
    node = expanded[0] if isinstance(expanded, list) and len(expanded) == 1 else expanded
    if not isinstance(node, dict):
        problems.append(f"{where}: not a node after expansion")
        return
    for t in node.get("@type", []):
        if t not in vocabulary():
            problems.append(f"{where}: @type {t} is not a schema.org term")
    keys = [k for k in compact if not k.startswith("@")]
    for key in keys:
        iri = _expected_iri(key)
        if iri not in node:
            problems.append(f"{where}.{key}: dropped by the expansion")
        elif iri not in vocabulary():
            problems.append(f"{where}.{key}: {iri} is not a schema.org term")
        else:
            value = compact[key]
            _walk(value, node[iri] if isinstance(value, list) else node[iri][0],
                  f"{where}.{key}", problems)
    extra = [k for k in node if not k.startswith("@") and k not in {_expected_iri(x)
                                                                   for x in keys}]
    problems += [f"{where}: expansion added {k}" for k in extra]


def schema_problems(document: Any) -> list[str]:
    """What a JSON-LD document (a ClaimReview, or a list of them) does wrong against schema.org:
    expansion errors, properties or types outside the vocabulary, properties dropped."""
    from pyld import jsonld

    try:
        expanded = jsonld.expand(document, {"documentLoader": loader})
    except jsonld.JsonLdError as exc:
        return [f"expansion failed: {exc}"]
    problems: list[str] = []
    docs = document if isinstance(document, list) else [document]
    if len(expanded) != len(docs):
        return [f"{len(docs)} objects expanded to {len(expanded)}"]
    for n, (c, e) in enumerate(zip(docs, expanded, strict=True)):
        _walk(c, e, f"[{n}]", problems)
    return problems
