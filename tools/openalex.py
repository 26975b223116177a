"""OpenAlex as a debater's retriever: Tool-MAD's medical set-up for PubMedQA (``openalex``).

Both Tool-MAD papers replace the search debater's tool with OpenAlex for PubMedQA: "the agent
extracts keywords from each query, retrieves three relevant abstracts, summarizes them ... and
incorporates the summaries into the debate" (stability paper §IV-D, Fig. 7; consistency paper
App. C.2, Fig. 10). Here:

* keywords: the query's content words (stop words, punctuation and repeats dropped, at most
  ``MAX_KEYWORDS``), joined as the OpenAlex ``search`` string;
* abstracts: the top ``k`` works that have an abstract (``filter=has_abstract:true``; Tool-MAD's
  ``top_k`` is 3, the paper's number), rebuilt from OpenAlex's inverted index;
* summaries: the retriever sets ``summarize = True``; the shared ``search_tool``
  (nodes/retrieval.py) then has the run's debater model summarise each abstract
  (nodes/summarize_evidence.py). The paper uses DistilBART (sshleifer/distilbart-cnn-12-6), which
  is not available offline, so the configured model summarises instead.

Any debater kind can use it: ``search_backend=openalex`` (the paper) or ``rag_backend=openalex``.
The base URL is ``FACTDEBATE_OPENALEX_URL`` (default https://api.openalex.org; tests point it at
a local server). Offline the API is unreachable: the search fails as a recorded tool fault.
"""

from __future__ import annotations

import re

from factdebate.core.state import Evidence
from factdebate.tools.base import RetrieverSettings
from factdebate.tools.web_apis import OpenAlexClient

MAX_KEYWORDS = 8
STOP_WORDS = frozenset("""
a an and are as at be been being but by can could did do does during for from had has have how
if in into is it its may might more most of on or other should such than that the their then there
these this those to was were what when where whether which while who whom why will with would
according after among any based between both each effect effects patients patient study studies
versus vs whose claim question true false yes no not
""".split())
"""Words that carry no topic (English function words and question scaffolding)."""


def keywords(query: str, limit: int = MAX_KEYWORDS) -> list[str]:
    """Content words of ``query`` in order, lowercase, without stop words or repeats."""
    out: list[str] = []
    for word in re.findall(r"[\w][\w\-]*", query.casefold()):
        if len(word) > 1 and word not in STOP_WORDS and not word.isdigit() and word not in out:
            out.append(word)
    return out[:limit]


class OpenAlexRetriever:
    """Keywords -> OpenAlex works with abstracts -> ``Evidence`` (summarised by ``search_tool``)."""

    name = "openalex"
    summarize = True
    """Abstracts are long: ``search_tool`` summarises each with the run's model (the paper's step)."""

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Top-``k`` works with an abstract for the keywords of ``query``."""
        words = keywords(query) or query.split()[:MAX_KEYWORDS]
        if not words:
            return []
        client = OpenAlexClient()  # one per call: an httpx client is bound to its event loop
        try:
            found = await client.search(" ".join(words), k=k, filters="has_abstract:true")
        finally:
            await client.aclose()
        return [e for e in found if e["text"]][:k]


def open_openalex_retriever(settings: RetrieverSettings) -> OpenAlexRetriever:
    """Registry factory (``RETRIEVERS["openalex"]``); OpenAlex needs no local settings."""
    return OpenAlexRetriever()
