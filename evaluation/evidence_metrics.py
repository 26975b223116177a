"""Evidence quality: the passages a verdict cites, scored against the benchmarks' gold evidence.

A finished results row carries ``evidence`` (the passages the verdict's replies cited, in
citation order), ``retrieved`` (every other passage the run saw) and the ledger's citation counts;
its ``gold.evidence`` is the item's gold evidence as :func:`gold_evidence` read it from the
dataset record (never shown to the model). Everything here is pure: rows in, numbers out.

Gold evidence (``{"kind", "level", "sets"}``; ``sets`` are alternative complete evidence sets, each
a list of ``{"page", "sent_id", "text", "page_id"}``; ``page`` is decoded by :func:`page_title`,
``page_id`` is the page as the dataset writes it):

* FEVER (``fever``, ``toolmad_fever``, a FEVER release file): ``evidence_sets`` of ``(page id,
  sentence number)``; page ids (``Soul_Food_-LRB-film-RRB-``) are decoded to titles
  (:func:`page_title`). NOT ENOUGH INFO claims have no set.
* HoVer: the supporting facts ``evidence_sets[0]`` (one set of ``(title, sentence number)``).
* FEVEROUS: ProgramFC's ``evidence`` ``[{title, text}]`` - one set of sentences *with text*, no
  ids; or the release's ``evidence`` ``[{content: ["Title_sentence_3", "Title_cell_0_1_2"]}]`` -
  sets of element ids (:func:`split_feverous_id`), no text.
* SciFact: ``evidence`` ``[{doc_id, sentences}]`` - one set of the evidence abstracts (doc ids);
  a passage is that abstract when its id (before a ``#n`` chunk suffix) or title is the doc id.

Levels. Passages an importer wrote from a dump carry ``page`` (the page id as the dataset's gold
names it) and ``sentences`` (the element ids of that page they hold: FEVER and HoVer sentence
numbers, FEVEROUS ``sentence_3``/``cell_0_1_2``/...). A row is scored at *sentence level by ids*
when its gold names sentence ids and every passage it saw carries them, as the official scorers
match: a gold ``(page, sentence)`` is covered when a cited passage of that page
(:func:`passage_elements`) holds that id. A passage predicts every pair it holds; for the FEVER
score the cited passages contribute their pairs in citation order, each passage's pairs in its own
order, and the scorer's first five are scored (:func:`scorer_predictions`; FEVEROUS: the first
five sentences and first 25 cells, as its scorer truncates). Passages without sentence ids (a
JSONL corpus: one passage per Wikipedia title, the known sentences of the page joined; the demo
corpus) keep *page* (title / abstract) level for FEVER, HoVer and SciFact: the row's ``level`` and
the summary's ``level``/``basis``/``n_page_level`` say which level each figure is. FEVEROUS gold
with text is scored at *sentence level by text*: a gold sentence is covered when a cited passage
*of the same page* (its title, decoded as :func:`passage_pages` names it, equals the gold title
after :func:`page_title`) contains it on word boundaries (:func:`contains_words`: "Bit closed in
1959." does not contain "It closed in 1959."), both after ``[[link|anchor]]`` markup reduction,
Unicode NFC, whitespace normalisation and case folding. A gold sentence without a title is matched
by its text alone.

Metrics of one row (an item without gold evidence sets - a FEVER NOT ENOUGH INFO claim - has
none, and the ``n`` beside every figure counts only items that do):

* page level - predicted pages = the distinct pages of the cited passages. Precision = cited pages
  that are gold pages (of any set) / cited pages; recall = the share of the best-covered gold
  set's pages that were cited; F1 of the two; 0 when nothing is cited (HotpotQA's convention).
  EM = the cited pages are exactly the pages of a gold set (HoVer's document-level EM; with
  HoVer's single set, F1 is HoVer's document-level F1).
* sentence level, by ids - predicted = the distinct ``(page, sentence)`` pairs of the cited
  passages; precision = those that are gold (of any set) / predicted; recall = the share of the
  best-covered gold set's pairs predicted; F1; EM = the predicted pairs are exactly a gold set
  (with HoVer's single set: HoVer's supporting-fact EM and F1).
* sentence level, by text (FEVEROUS with text) - recall = the share of the best-covered gold
  set's sentences contained in a cited passage; precision = cited passages that contain a gold
  sentence / cited passages (the predicted units are passages, not sentences); F1.
* FEVER score (FEVER, FEVEROUS; :func:`score_claim`): the label is right and one complete gold
  set is covered by the *first five* cited passages, with the scorer's evidence precision (over
  the first five predictions) and recall (a complete set covered). Two rules differ on NOT ENOUGH
  INFO claims (``rule`` of the gold evidence, :data:`SCORER_RULES`):

    - ``fever`` (FEVER's scorer, sheffieldnlp/fever-scorer; always used for FEVER): an NEI claim
    needs no evidence (label right = strictly right) and is left out of precision and recall;
    - ``feverous`` (the FEVEROUS scorer, Raldir/FEVEROUS ``feverous_scorer.py``; the default for
    FEVEROUS): every claim, NEI included, needs a complete gold set among the predictions
    (an NEI claim without gold sets is never strictly right) and counts in precision (1.0 without
    predictions) and recall (1.0 without gold sets). ``eval --feverous-rule fever`` scores
    FEVEROUS with FEVER's rule instead.

  By ids, the predictions are the scorer's first five pairs (see "Levels"); by text, a gold
  sentence is covered when one of the first five cited passages of its page contains it; at page
  level a gold ``(page, sentence)`` counts as covered when its page is among the first five cited
  passages: "FEVER score (page level)", an upper bound of the sentence-level score.
  :func:`fever_score` is the FEVER scorer itself on ``(page, line)`` pairs (re-implemented and
  tested against its documented examples).
* retrieval vs citation, at the finest level the gold allows: "gold retrieved" = a complete gold
  set is among all passages the run saw (cited + retrieved), "gold cited" = among the cited
  ones; an item whose gold was retrieved but not cited is the model's miss, one whose gold was
  never retrieved is the retriever's.
* citation hygiene (every dataset): verdicts resting on no cited passage although passages were
  shown, rows where some reply cited a number it was never shown (a hallucinated citation,
  dropped), and labelled replies without a citation.
* the retrieval ceiling (:func:`ceiling_summary`): the share of the items with gold evidence whose
  complete gold set is in the searched index at all (the row's ``gold_in_index``, recorded by the
  runner: ``evaluation/ceiling.py``), page level and sentence level (by ids over an index whose
  passages carry them, by text for gold with text), with its n; every evidence block carries it
  as ``ceiling``/``ceiling_n`` at its own level.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from factdebate.core.labels import NEI

Row = dict[str, Any]

MAX_EVIDENCE = 5
"""Predicted evidence items the FEVER scorer counts (the shared task's rule)."""
FEVER_SCORED = frozenset({"fever", "feverous"})
"""Gold kinds that get the FEVER score."""
SCORER_RULES = {
    "feverous": "FEVEROUS scorer: NOT ENOUGH INFO claims need a complete gold set too and count "
                "in evidence precision/recall",
    "fever": "FEVER scorer: NOT ENOUGH INFO claims need no evidence and are left out of evidence "
             "precision/recall",
}
"""The rules :func:`score_claim` applies to NOT ENOUGH INFO claims, by name."""
FEVEROUS_RULE = "feverous"
"""The rule FEVEROUS is scored with unless a run names another (``eval --feverous-rule``)."""
KIND_NAMES = {"fever": "FEVER", "hover": "HoVer", "feverous": "FEVEROUS", "scifact": "SciFact"}

# -- normalisation ------------------------------------------------------------------------------
_PAGE_TOKENS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{",
                "-RCB-": "}", "-COLON-": ":"}
_WIKI_URL = re.compile(r"^https?://[a-z]+(?:\.m)?\.wikipedia\.org/wiki/([^?#]+)", re.IGNORECASE)
_LINK = re.compile(r"\[\[([^\]|]*)\|([^\]]*)\]\]")
_BARE_LINK = re.compile(r"\[\[([^\]|]*)\]\]")


def page_title(page: Any) -> str:
    """A FEVER/HoVer page id as a corpus title: ``Soul_Food_-LRB-film-RRB-`` -> ``Soul Food (film)``
    (underscores to spaces, ``-LRB-``/``-RRB-``/``-LSB-``/``-RSB-``/``-COLON-`` decoded, NFC)."""
    text = str(page or "")
    for token, char in _PAGE_TOKENS.items():
        text = text.replace(token, char)
    text = unicodedata.normalize("NFC", text.replace("_", " "))
    return " ".join(text.split())


def reduce_markup(text: str) -> str:
    """FEVEROUS ``[[target|anchor]]`` links to their anchor text (``[[target]]`` to the target)."""
    text = _LINK.sub(lambda m: m.group(2), str(text or ""))
    return _BARE_LINK.sub(lambda m: m.group(1).replace("_", " "), text)


def normal_text(text: str) -> str:
    """Text as sentence containment compares it: markup reduced, NFC, single spaces, case-folded."""
    text = unicodedata.normalize("NFC", reduce_markup(text))
    return " ".join(text.split()).casefold()


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def contains_words(haystack: str, needle: str) -> bool:
    """``needle`` occurs in ``haystack`` starting and ending on word boundaries (both normalised
    by the caller): "it closed in 1959." is in "it closed in 1959. it was" but not in "bit closed
    in 1959."."""
    if not needle:
        return False
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = start == 0 or not (_word_char(haystack[start - 1]) and _word_char(needle[0]))
        after = end == len(haystack) or not (_word_char(haystack[end]) and _word_char(needle[-1]))
        if before and after:
            return True
        start = haystack.find(needle, start + 1)
    return False


def passage_pages(passage: dict[str, Any]) -> list[str]:
    """The names a passage's page goes by: its title (decoded, without a `` - Wikipedia`` tail),
    the title in a Wikipedia URL, and its id without a ``#n`` chunk suffix (SciFact doc ids)."""
    names: list[str] = []
    page = page_title(passage.get("page")) if passage.get("page") else ""
    if page:  # the page id the importer kept (the passage contract)
        names.append(page)
    title = page_title(passage.get("title"))
    title = re.sub(r"\s+[-–—|]\s+Wikipedia$", "", title)
    if title:
        names.append(title)
    match = _WIKI_URL.match(str(passage.get("url") or ""))
    if match:
        names.append(page_title(unquote(match.group(1))))
    pid = str(passage.get("id") or "").strip()
    if pid:
        names.append(pid.split("#", 1)[0])
    return list(dict.fromkeys(n for n in names if n))


_FEVEROUS_ID = re.compile(r"^(.+?)_((?:header_)?cell_\d+_\d+_\d+|sentence_\d+|table_caption_\d+"
                          r"|item_\d+_\d+|list_\d+|section_\d+|title)$")
FEVEROUS_CELL_TYPES = frozenset({"cell", "header_cell", "item", "table_caption"})
"""FEVEROUS element types its scorer counts against the cell budget (the rest: sentences)."""
MAX_EVIDENCE_CELLS = 25
"""Predicted table cells, list items and captions the FEVEROUS scorer counts."""


def split_feverous_id(content: str) -> tuple[str, str | None]:
    """A FEVEROUS evidence id as ``(page title, element id)``: ``Aramais Yepiskoposyan_sentence_0``
    -> ``("Aramais Yepiskoposyan", "sentence_0")``, ``Korean Air_cell_1_19_0`` -> ``("Korean Air",
    "cell_1_19_0")``; an id of no known element type is ``(content, None)``."""
    match = _FEVEROUS_ID.match(str(content))
    return (match.group(1), match.group(2)) if match else (str(content), None)


def feverous_type(element: Any) -> str:
    """The element type of a FEVEROUS element id (``cell_0_1_2`` -> ``cell``, ``sentence_3`` ->
    ``sentence``); ``sentence`` for integers (FEVER/HoVer sentence numbers)."""
    if not isinstance(element, str):
        return "sentence"
    for kind in ("header_cell", "table_caption", "cell", "item", "list", "section", "sentence"):
        if element == kind or element.startswith(kind + "_"):
            return kind
    return element


# -- gold evidence of a dataset record ----------------------------------------------------------
def element_id(value: Any) -> int | str | None:
    """A sentence (element) id as gold and passages compare it: FEVER/HoVer sentence numbers as
    integers (``3`` and ``"3"`` alike), FEVEROUS element ids as strings (``sentence_3``,
    ``cell_0_1_2``); None for anything else."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not text:
        return None
    return int(text) if text.isdigit() else text


def _element(page: Any, sent_id: Any = None, text: str | None = None) -> dict[str, Any]:
    return {"page": page_title(page), "sent_id": element_id(sent_id),
            "text": " ".join(reduce_markup(text).split()) if text is not None else None,
            "page_id": str(page or "")}


def _pack(kind: str, sets: Iterable[Iterable[dict[str, Any]]]) -> dict[str, Any]:
    unique: dict[frozenset[tuple[Any, ...]], list[dict[str, Any]]] = {}
    for s in sets:  # FEVER repeats a set once per annotator
        clean = [e for e in s if e["page"] or e["text"]]
        key = frozenset((e["page"], e["sent_id"], e["text"]) for e in clean)
        if clean and key not in unique:
            unique[key] = clean
    return {"kind": kind, "level": "sentence" if kind == "feverous" else "page",
            "sets": list(unique.values())}


def gold_evidence(record: dict[str, Any], dataset: str = "") -> dict[str, Any] | None:
    """The gold evidence of one dataset record (shared schema or release format), or None when
    the dataset has none that passages can be scored against (AVeriTeC's QA pairs, FIRE ...)."""
    family = re.sub(r"_\dhop$", "", str(record.get("dataset") or dataset or "")).lower()
    if "evidence_sets" in record:  # shared schema: FEVER, Tool-MAD FEVER sample, HoVer
        sets = record.get("evidence_sets") or []
        kind = "hover" if family.startswith("hover") else "fever"
        if kind == "hover":
            sets = sets[:1]  # HoVer: the supporting facts are the one set
        return _pack(kind, ([_element(e.get("page"), e.get("sent_id")) for e in s
                             if isinstance(e, dict)] for s in sets if isinstance(s, list)))
    if isinstance(record.get("supporting_facts"), list):  # HoVer release
        facts = [f for f in record["supporting_facts"] if isinstance(f, list | tuple) and f]
        return _pack("hover", [[_element(f[0], f[1] if len(f) > 1 else None) for f in facts]])
    evidence = record.get("evidence")
    if "verifiable" in record and isinstance(evidence, list):  # FEVER release
        return _pack("fever", ([_element(e[2], e[3]) for e in group
                                if isinstance(e, list | tuple) and len(e) >= 4 and e[2] is not None]
                               for group in evidence if isinstance(group, list)))
    if isinstance(evidence, str) and evidence.strip():  # ProgramFC FEVEROUS: "title\ttext" lines
        lines = [line.split("\t", 1) for line in evidence.splitlines() if "\t" in line]
        return _pack("feverous", [[_element(t, None, s) for t, s in lines]])
    if isinstance(evidence, dict):  # SciFact release: {doc_id: [{sentences, label}]}
        return _pack("scifact", [[_element(doc, s) for doc, rats in evidence.items()
                                  for r in rats or [] if isinstance(r, dict)
                                  for s in r.get("sentences") or [None]]])
    if isinstance(evidence, list) and evidence and all(isinstance(e, dict) for e in evidence):
        if all("content" in e for e in evidence):  # FEVEROUS release: element ids per set
            return _pack("feverous", ([_element(*split_feverous_id(c)) for c in e["content"]
                                       if isinstance(c, str)] for e in evidence
                                      if isinstance(e.get("content"), list)))
        if all("title" in e and "text" in e for e in evidence):  # FEVEROUS
            return _pack("feverous", [[_element(e["title"], None, str(e["text"]))
                                       for e in evidence]])
        if all("doc_id" in e for e in evidence):  # SciFact
            return _pack("scifact", [[_element(e["doc_id"], s) for e in evidence
                                      for s in e.get("sentences") or [None]]])
        return None
    if family in ("feverous", "scifact") and isinstance(evidence, list):  # no evidence (NEI)
        return _pack(family, [])
    return None


# -- the FEVER scorer ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ClaimScore:
    """One claim under the FEVER scorer's rules."""

    label_correct: bool
    strict: bool
    """The FEVER score of the claim: label right and evidence complete (NEI: label right)."""
    precision: float | None
    """Evidence precision over the first ``max_evidence`` predictions; None for gold NEI."""
    recall: float | None
    """1 when a complete gold set is covered (or the claim has none); None for gold NEI."""


def score_claim(label: str, predicted_label: str | None, gold_sets: Sequence[Sequence[Any]],
                predicted: Sequence[Any], covers: Callable[[Any, Any], bool], *,
                max_evidence: int | None = MAX_EVIDENCE,
                counted: Callable[[Any], bool] | None = None, rule: str = "fever") -> ClaimScore:
    """The FEVER (``rule="fever"``) or FEVEROUS (``rule="feverous"``) scorer's rules for one claim,
    on any kind of predicted evidence item (:data:`SCORER_RULES`: they differ on NEI claims).

    ``covers(predicted_item, gold_element)`` says whether a prediction covers a gold element:
    equality of ``(page, line)`` pairs in the scorer itself, page or text containment for our
    passages. Only the first ``max_evidence`` predictions count (None: all). ``counted`` picks the
    gold elements precision compares against (the scorer skips those without a line number).
    """
    if rule not in SCORER_RULES:
        raise ValueError(f"unknown scorer rule {rule!r}; known: {', '.join(SCORER_RULES)}")
    nei = label.upper() == NEI and rule == "fever"  # FEVEROUS: NEI is scored like any claim
    correct = label.upper() == str(predicted_label or "").upper()
    shown = list(predicted) if max_evidence is None else list(predicted)[:max_evidence]

    def complete(group: Sequence[Any]) -> bool:
        return all(any(covers(p, g) for p in shown) for g in group)

    strict = correct and (nei or any(complete(group) for group in gold_sets))
    if nei:
        return ClaimScore(correct, strict, None, None)
    gold = [g for group in gold_sets for g in group if counted is None or counted(g)]
    hits = sum(1 for p in shown if any(covers(p, g) for g in gold))
    precision = hits / len(shown) if shown else 1.0
    recall = 1.0 if not gold_sets else float(any(complete(group) for group in gold_sets))
    return ClaimScore(correct, strict, precision, recall)


def _pairs(instance: dict[str, Any], *, need_predictions: bool) -> tuple[list[Any], list[Any]]:
    """Gold sets (``[annotation, id, page, line]`` lists) and predicted ``[page, line]`` pairs."""
    predicted = instance.get("predicted_evidence")
    if predicted is None:
        if need_predictions:
            raise ValueError("predicted evidence must be provided for strict scoring")
        predicted = []
    for p in predicted:
        if not (isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], str)
                and isinstance(p[1], int)):
            raise ValueError("predicted evidence must be a list of [page, line] pairs")
    return list(instance.get("evidence") or []), [list(p) for p in predicted]


def _same_pair(predicted: list[Any], gold: list[Any]) -> bool:
    return predicted == [gold[2], gold[3]]


def _claim(instance: dict[str, Any], max_evidence: int | None) -> ClaimScore:
    label = str(instance["label"])
    nei = label.upper() == NEI
    right = label.upper() == str(instance.get("predicted_label") or "").upper()
    gold, predicted = _pairs(instance, need_predictions=right and not nei)
    return score_claim(label, instance.get("predicted_label"), gold, predicted, _same_pair,
                       max_evidence=max_evidence, counted=lambda g: g[3] is not None)


def is_correct_label(instance: dict[str, Any]) -> bool:
    """The predicted label equals the gold one (case-insensitive)."""
    return str(instance["label"]).upper() == str(instance["predicted_label"]).upper()


def is_strictly_correct(instance: dict[str, Any], max_evidence: int | None = None) -> bool:
    """Label right and, unless the gold label is NEI, a complete gold set among the predictions."""
    return _claim(instance, max_evidence).strict


def evidence_macro_precision(instance: dict[str, Any],
                             max_evidence: int | None = None) -> tuple[float, float]:
    """``(precision, 1)`` of a verifiable claim's predictions ((1.0, 1) with none); NEI ``(0, 0)``."""
    score = _claim(instance, max_evidence)
    return (0.0, 0.0) if score.precision is None else (score.precision, 1.0)


def evidence_macro_recall(instance: dict[str, Any],
                          max_evidence: int | None = None) -> tuple[float, float]:
    """``(1, 1)`` when a complete gold set is predicted (or there is none), else ``(0, 1)``;
    NEI ``(0, 0)``."""
    score = _claim(instance, max_evidence)
    return (0.0, 0.0) if score.recall is None else (score.recall, 1.0)


def fever_score(predictions: Sequence[dict[str, Any]], actual: Sequence[dict[str, Any]] | None = None,
                max_evidence: int | None = MAX_EVIDENCE) -> tuple[float, float, float, float, float]:
    """``(strict score, label accuracy, evidence precision, recall, F1)`` as the FEVER scorer.

    Instances are ``{"label", "predicted_label", "evidence": [[[annotation, id, page, line],
    ...], ...], "predicted_evidence": [[page, line], ...]}``; in blind mode ``label`` and
    ``evidence`` come from ``actual`` (same order). Precision and recall are macro averages over
    the claims whose gold label is not NEI (precision 1.0 and recall 0.0 when there is none).
    Differences from the reference code: bad input raises ``ValueError`` (not ``AssertionError``),
    instances are not modified, and F1 is 0.0 where it would divide by zero.
    """
    if actual is not None and len(actual) != len(predictions):
        raise ValueError("actual data and predicted data length must match")
    strict = correct = 0.0
    precision = precision_n = recall = recall_n = 0.0
    for i, given in enumerate(predictions):
        instance = dict(given)
        if "evidence" not in instance or "label" not in instance:
            if actual is None or "evidence" not in actual[i] or "label" not in actual[i]:
                raise ValueError("in blind evaluation mode, actual labels and evidence are needed")
            instance["evidence"], instance["label"] = actual[i]["evidence"], actual[i]["label"]
        if "predicted_evidence" not in instance:
            raise ValueError("evidence must be provided for the prediction")
        score = _claim(instance, max_evidence)
        correct += score.label_correct
        strict += score.strict
        if score.precision is not None and score.recall is not None:
            precision, precision_n = precision + score.precision, precision_n + 1
            recall, recall_n = recall + score.recall, recall_n + 1
    total = len(predictions)
    pr = precision / precision_n if precision_n else 1.0
    rec = recall / recall_n if recall_n else 0.0
    f1 = 2 * pr * rec / (pr + rec) if pr + rec else 0.0
    return (strict / total if total else 0.0, correct / total if total else 0.0, pr, rec, f1)


# -- one results row ----------------------------------------------------------------------------
@dataclass(frozen=True)
class RowEvidence:
    """Evidence figures of one finished row with gold evidence (None = not defined here)."""

    kind: str
    level: str
    """Level the row is scored at: ``sentence`` (element ids on gold and passages, or FEVEROUS
    sentence text) or ``page``."""
    has_gold: bool
    """The item has gold evidence sets (False: e.g. a NOT ENOUGH INFO claim)."""
    page_precision: float | None = None
    page_recall: float | None = None
    page_f1: float | None = None
    page_em: float | None = None
    sentence_precision: float | None = None
    sentence_recall: float | None = None
    sentence_f1: float | None = None
    sentence_em: float | None = None
    """The cited (page, sentence) pairs are exactly a gold set (HoVer's supporting-fact EM; ids)."""
    basis: str | None = None
    """How sentences are matched at sentence level: ``ids`` or ``text``; None at page level."""
    fever: ClaimScore | None = None
    gold_cited: bool | None = None
    """A complete gold set is among the cited passages (finest level)."""
    gold_retrieved: bool | None = None
    """A complete gold set is among all passages the run saw (cited + retrieved)."""
    recall_retrieved: float | None = None
    """Best-set recall over every passage seen (finest level)."""


def _ok(row: Row) -> bool:
    return row.get("status") == "ok"


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _covers(level: str) -> Callable[[dict[str, Any], dict[str, Any]], bool]:
    """``covers(passage, gold element)`` at ``level`` (sentence: same page, on word boundaries)."""
    if level == "sentence":
        def by_text(passage: dict[str, Any], gold: dict[str, Any]) -> bool:
            if gold.get("page") and gold["page"] not in passage["_pages"]:
                return False
            return contains_words(passage["_norm"], gold.get("_norm") or "")
        return by_text
    return lambda passage, gold: gold["page"] in passage["_pages"]


def _prepared(passages: Iterable[Any]) -> list[dict[str, Any]]:
    return [{**p, "_pages": passage_pages(p), "_norm": normal_text(str(p.get("text") or ""))}
            for p in passages if isinstance(p, dict)]


def _best_recall(sets: list[list[dict[str, Any]]], passages: Sequence[Any],
                 covers: Callable[[Any, dict[str, Any]], bool]) -> float:
    """Share of the best-covered gold set's elements that ``passages`` cover."""
    return max((sum(any(covers(p, g) for p in passages) for g in s) / len(s) for s in sets),
               default=0.0)


def _page_scores(sets: list[list[dict[str, Any]]],
                 cited: list[dict[str, Any]]) -> tuple[float, float, float, float]:
    """Page-level precision, recall, F1 and EM of the cited passages."""
    gold_pages = {g["page"] for s in sets for g in s}
    pages: list[str] = []
    for p in cited:  # a passage is the gold page it names, else its title (or id)
        names = p["_pages"]
        page = next((n for n in names if n in gold_pages), names[0] if names else "")
        if page and page not in pages:
            pages.append(page)
    precision = sum(p in gold_pages for p in pages) / len(pages) if pages else 0.0
    recall = max((len({g["page"] for g in s} & set(pages)) / len({g["page"] for g in s})
                  for s in sets), default=0.0)
    em = float(any(set(pages) == {g["page"] for g in s} for s in sets))
    return precision, recall, _f1(precision, recall), em


def scorer_rule(gold: dict[str, Any]) -> str:
    """The NEI rule a row's gold evidence is scored with: its ``rule`` (set by the run, ``eval
    --feverous-rule``), else ``feverous`` for FEVEROUS and ``fever`` for every other kind."""
    rule = gold.get("rule")
    if rule in SCORER_RULES:
        return str(rule)
    return FEVEROUS_RULE if gold.get("kind") == "feverous" else "fever"


def passage_elements(passage: dict[str, Any]) -> list[tuple[str, int | str]]:
    """The ``(page, element id)`` pairs a passage holds, in its own order: its ``page`` (decoded
    as :func:`page_title`) with each of its ``sentences``; empty for a passage without them."""
    sentences = passage.get("sentences")
    if not passage.get("page") or not isinstance(sentences, list):
        return []
    page = page_title(passage["page"])
    return [(page, sid) for sid in map(element_id, sentences) if sid is not None]


def _pairs_of(passages: Iterable[dict[str, Any]]) -> list[tuple[str, int | str]]:
    """The distinct ``(page, element id)`` pairs of ``passages``: each passage's in its order,
    the passages in theirs."""
    return list(dict.fromkeys(pair for p in passages for pair in passage_elements(p)))


def scorer_predictions(pairs: Sequence[tuple[str, int | str]],
                       kind: str) -> list[tuple[str, int | str]]:
    """The predicted evidence the FEVER scorer counts, from the cited passages' pairs in citation
    order (:func:`_pairs_of`): the first :data:`MAX_EVIDENCE`; for FEVEROUS, as its scorer
    truncates, the first :data:`MAX_EVIDENCE` sentences (and other non-cell elements) and the
    first :data:`MAX_EVIDENCE_CELLS` cells, header cells, list items and table captions."""
    if kind != "feverous":
        return list(pairs[:MAX_EVIDENCE])
    out, sentences, cells = [], 0, 0
    for pair in pairs:
        if feverous_type(pair[1]) in FEVEROUS_CELL_TYPES:
            if cells < MAX_EVIDENCE_CELLS:
                cells += 1
                out.append(pair)
        elif sentences < MAX_EVIDENCE:
            sentences += 1
            out.append(pair)
    return out


def _same_element(pair: tuple[str, int | str], gold: dict[str, Any]) -> bool:
    return pair == (gold["page"], gold["sent_id"])


def _ids_available(row: Row, seen: list[dict[str, Any]]) -> bool:
    """Every passage the row saw carries element ids; a row that saw none asks its index (the
    ceiling's ``ids``: the searched index's passages carry them)."""
    if seen:
        return all(passage_elements(p) for p in seen)
    return bool((row.get("gold_in_index") or {}).get("ids"))


def score_row(row: Row) -> RowEvidence | None:
    """The evidence figures of a finished row with gold evidence and citation data, else None."""
    gold = (row.get("gold") or {}).get("evidence") if _ok(row) else None
    if not isinstance(gold, dict) or not isinstance(row.get("evidence"), list):
        return None  # no gold evidence, or a row written before citations existed
    kind = str(gold.get("kind") or "")
    sets = [[{"page": str(g.get("page") or ""), "sent_id": element_id(g.get("sent_id")),
              "_norm": normal_text(str(g["text"])) if g.get("text") else ""}
             for g in s if isinstance(g, dict)] for s in gold.get("sets") or [] if s]
    sets = [s for s in sets if s]
    cited = _prepared(row.get("evidence") or [])
    seen = cited + _prepared(row.get("retrieved") or [])
    gold_ids = bool(sets) and all(g["sent_id"] is not None for s in sets for g in s)
    if gold_ids and _ids_available(row, seen):
        basis: str | None = "ids"
    elif str(gold.get("level")) == "sentence" and (not sets or any(g["_norm"] for s in sets
                                                                   for g in s)):
        basis = "text"
    else:
        basis = None
    level = "sentence" if basis else "page"
    label = (row.get("gold") or {}).get("label")
    fever = None
    if basis == "ids":
        cited_units: list[Any] = _pairs_of(cited)
        seen_units: list[Any] = _pairs_of(seen)
        covers: Callable[[Any, dict[str, Any]], bool] = _same_element
        predicted, cap = scorer_predictions(cited_units, kind), None
    else:
        cited_units, seen_units, covers = cited, seen, _covers(level)
        predicted, cap = cited, MAX_EVIDENCE
    if kind in FEVER_SCORED and isinstance(label, str):
        fever = score_claim(label, (row.get("prediction") or {}).get("label"), sets, predicted,
                            covers, max_evidence=cap, rule=scorer_rule(gold))
    if not sets:
        return RowEvidence(kind, level, False, basis=basis, fever=fever)
    precision, recall, f1, em = _page_scores(sets, cited)
    out: dict[str, Any] = {"page_precision": precision, "page_recall": recall, "page_f1": f1,
                           "page_em": em}
    if level == "sentence":
        hits = sum(1 for u in cited_units if any(covers(u, g) for s in sets for g in s))
        s_precision = hits / len(cited_units) if cited_units else 0.0
        s_recall = _best_recall(sets, cited_units, covers)
        out |= {"sentence_precision": s_precision, "sentence_recall": s_recall,
                "sentence_f1": _f1(s_precision, s_recall)}
        if basis == "ids":
            out["sentence_em"] = float(any(set(cited_units) == {(g["page"], g["sent_id"])
                                                                for g in s} for s in sets))
    return RowEvidence(
        kind, level, True, basis=basis, fever=fever, **out,
        gold_cited=_best_recall(sets, cited_units, covers) == 1.0,
        gold_retrieved=_best_recall(sets, seen_units, covers) == 1.0,
        recall_retrieved=_best_recall(sets, seen_units, covers))


# -- citation hygiene (every dataset) -----------------------------------------------------------
def has_citation_data(row: Row) -> bool:
    """A finished row written with citations (``evidence`` present)."""
    return _ok(row) and isinstance(row.get("evidence"), list)


def uncited_verdict(row: Row) -> bool | None:
    """The verdict rests on no cited passage although passages were shown; None when the row has
    no verdict, saw no passage or has no citation data."""
    if not has_citation_data(row):
        return None
    pred = row.get("prediction") or {}
    if pred.get("label") is None and not pred.get("answers"):
        return None
    if not row.get("evidence") and not row.get("retrieved"):
        return None
    return not row["evidence"]


def unshown_citations(row: Row) -> int | None:
    """Citation numbers the run's replies cited without having been shown them (dropped)."""
    if not has_citation_data(row):
        return None
    from_records = sum(len(c.get("unshown") or []) for c in row.get("citations") or []
                       if isinstance(c, dict))
    return max(int((row.get("ledger") or {}).get("citations_unshown") or 0), from_records)


def hallucinated(row: Row) -> bool | None:
    """Some reply of the run cited a passage it was never shown."""
    count = unshown_citations(row)
    return None if count is None else count > 0


def reply_counts(row: Row) -> tuple[int, int] | None:
    """``(labelled replies without a citation, labelled replies)`` from the ledger."""
    if not has_citation_data(row):
        return None
    ledger = row.get("ledger") or {}
    uncited, cited = int(ledger.get("replies_uncited") or 0), int(ledger.get("replies_cited") or 0)
    return uncited, uncited + cited


# -- run summary --------------------------------------------------------------------------------
def _mean(values: Iterable[float | bool | None]) -> tuple[float | None, int]:
    known = [float(v) for v in values if v is not None]
    return (sum(known) / len(known) if known else None), len(known)


def _block(scored: list[RowEvidence], fields: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = 0
    for key, attr in fields.items():
        out[key], n = _mean(getattr(s, attr) for s in scored)
    out["n"] = n
    return out


def headline(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """The one evidence figure of a run for tables: FEVER score (FEVER, FEVEROUS), else page F1."""
    if not summary:
        return None
    fever = summary.get("fever")
    if fever and fever.get("score") is not None:
        name = "FEVER score" + (" (page level)" if fever.get("level") == "page" else "")
        return {"name": name, "key": "fever_score", "value": fever["score"], "n": fever["n"],
                **_ceiling_of(fever)}
    page = summary.get("page")
    if page and page.get("f1") is not None:
        return {"name": "evidence F1 (page level)", "key": "evidence_f1", "value": page["f1"],
                "n": page["n"], **_ceiling_of(page)}
    return None


def _ceiling_of(block: dict[str, Any]) -> dict[str, Any]:
    return {k: block[k] for k in ("ceiling", "ceiling_n") if k in block}


def evidence_summary(rows: list[Row]) -> dict[str, Any] | None:
    """The evidence figures of a run's rows, each with its n (None when no row has citation data
    or gold evidence). See the module docstring for the definitions."""
    ok = [r for r in rows if _ok(r)]
    with_data = [r for r in ok if has_citation_data(r)]
    gold_rows = [r for r in ok if isinstance((r.get("gold") or {}).get("evidence"), dict)]
    if not with_data and not gold_rows:
        return None
    pairs = [(r, s) for r, s in ((r, score_row(r)) for r in with_data) if s is not None]
    scored = [s for _, s in pairs]
    gold = [s for s in scored if s.has_gold]
    kinds = sorted({str(r["gold"]["evidence"].get("kind")) for r in gold_rows})
    levels = ({s.level for s in gold} if gold else
              {str(r["gold"]["evidence"].get("level") or "page") for r in gold_rows})
    level = "sentence" if levels == {"sentence"} else "page"
    bases = sorted({str(s.basis) for s in gold if s.basis}) if level == "sentence" else []
    summary: dict[str, Any] = {
        "gold_kind": kinds[0] if len(kinds) == 1 else ("+".join(kinds) or None),
        "level": level if gold_rows else None,
        "basis": "+".join(bases) or None,
        "n_page_level": sum(1 for s in gold if s.level == "page"),
        "n_finished": len(ok), "n_scored": len(scored), "n_with_gold": len(gold),
        "n_without_gold": len(scored) - len(gold),
        "n_no_citation_data": len(ok) - len(with_data),
        "page": None, "sentence": None, "fever": None, "hover": None, "retrieval": None,
    }
    if gold:
        summary["page"] = _block(gold, {"precision": "page_precision", "recall": "page_recall",
                                        "f1": "page_f1", "em": "page_em"})
        if level == "sentence":
            fields = {"precision": "sentence_precision", "recall": "sentence_recall",
                      "f1": "sentence_f1"}
            if bases == ["ids"]:
                fields["em"] = "sentence_em"
            summary["sentence"] = _block(gold, fields)
        if kinds == ["hover"]:  # HoVer's supporting-fact EM/F1 at the finest level scored
            finest = summary["sentence"] if bases == ["ids"] else summary["page"]
            summary["hover"] = {"em": finest["em"], "f1": finest["f1"], "n": finest["n"],
                                "level": "sentence" if bases == ["ids"] else "page",
                                "page_em": summary["page"]["em"],
                                "page_f1": summary["page"]["f1"]}
        retrieved, n = _mean(s.gold_retrieved for s in gold)
        cited, _ = _mean(s.gold_cited for s in gold)
        missed_by_model = sum(1 for s in gold if s.gold_retrieved and not s.gold_cited)
        summary["retrieval"] = {
            "level": level, "n": n, "gold_retrieved": retrieved, "gold_cited": cited,
            "retrieved_not_cited": missed_by_model / n,
            "not_retrieved": sum(1 for s in gold if not s.gold_retrieved) / n,
            "recall_retrieved": _mean(s.recall_retrieved for s in gold)[0],
            "recall_cited": _mean(s.sentence_recall if level == "sentence" else s.page_recall
                                  for s in gold)[0]}
    fever = [s.fever for s in scored if s.fever is not None]
    if fever:
        precision, n_verifiable = _mean(f.precision for f in fever)
        recall, _ = _mean(f.recall for f in fever)
        summary["fever"] = {
            "score": _mean(f.strict for f in fever)[0], "n": len(fever), "level": level,
            "max_evidence": MAX_EVIDENCE,
            "label_accuracy": _mean(f.label_correct for f in fever)[0],
            "precision": precision, "recall": recall,
            "f1": _f1(precision, recall) if precision is not None and recall is not None else None,
            "n_verifiable": n_verifiable,
            "rule": "+".join(sorted({scorer_rule(r["gold"]["evidence"]) for r in gold_rows
                                     if r["gold"]["evidence"].get("kind") in FEVER_SCORED}))}
    uncited, n_verdicts = _mean(uncited_verdict(r) for r in with_data)
    halluc, n_rows = _mean(hallucinated(r) for r in with_data)
    replies = [c for c in (reply_counts(r) for r in with_data) if c is not None]
    n_replies = sum(total for _, total in replies)
    summary["citations"] = {
        "uncited_verdicts": uncited, "n_verdicts": n_verdicts,
        "hallucinated": halluc, "n_rows": n_rows,
        "unshown_total": sum(unshown_citations(r) or 0 for r in with_data),
        "uncited_replies": (sum(u for u, _ in replies) / n_replies) if n_replies else None,
        "n_replies": n_replies}
    summary["ceiling"] = ceiling_summary([r for r, s in pairs if s.has_gold], level)
    _attach_ceiling(summary)
    summary["headline"] = headline(summary)
    summary["notes"] = evidence_notes(summary)
    return summary


def ceiling_summary(rows: list[Row], level: str = "page") -> dict[str, Any] | None:
    """The retrieval ceiling of rows with gold evidence sets: the share whose complete gold set
    is in the index at all (``gold_in_index``, ``evaluation/ceiling.py``), page level and
    sentence level (ids or text, where known), each with its n; ``share``/``n`` at ``level``
    (the level the rows were scored at). None when no row recorded it (a run on a server, or
    rows without it)."""
    recorded = [r["gold_in_index"] for r in rows if isinstance(r.get("gold_in_index"), dict)]
    if not recorded:
        return None

    def block(values: list[bool]) -> dict[str, Any] | None:
        if not values:
            return None
        return {"share": sum(values) / len(values), "in_index": sum(values), "n": len(values)}

    page = block([bool(g.get("page")) for g in recorded])
    sentence = block([bool(g["sentence"]) for g in recorded if g.get("sentence") is not None])
    finest = sentence if level == "sentence" and sentence else page
    return {"level": "sentence" if finest is sentence else "page", "page": page,
            "sentence": sentence, "share": finest["share"] if finest else None,
            "n": finest["n"] if finest else 0, "n_rows": len(rows)}


def _ceiling_at(ceiling: dict[str, Any] | None, level: str) -> dict[str, Any] | None:
    if not ceiling:
        return None
    return ceiling.get(level) or ceiling.get("page")


def _attach_ceiling(summary: dict[str, Any]) -> None:
    """Put the ceiling (``ceiling``, ``ceiling_n``) beside every evidence figure block (none
    when no row recorded ``gold_in_index``)."""
    ceiling = summary.get("ceiling")
    if not ceiling:
        return
    for key, level in (("page", "page"), ("sentence", "sentence"), ("hover", None),
                       ("fever", None), ("retrieval", None)):
        block = summary.get(key)
        if not block:
            continue
        at = _ceiling_at(ceiling, level or block.get("level") or "page")
        block["ceiling"] = at["share"] if at else None
        block["ceiling_n"] = at["n"] if at else None


def evidence_notes(summary: dict[str, Any]) -> list[str]:
    """What a reader must know next to the figures (levels, exclusions)."""
    notes = []
    kind = str(summary.get("gold_kind") or "")
    basis = str(summary.get("basis") or "")
    if summary.get("level") == "page" and kind:
        name = KIND_NAMES.get(kind, kind)
        mixed = (f" ({summary['n_page_level']} item(s) saw passages without sentence ids)"
                 if summary.get("n_page_level") else "")
        notes.append(f"{name} gold evidence gives sentence ids, but the passages the run saw "
                     f"carry none{mixed}: evidence is scored at page (title/document) level "
                     "only, no sentence level."
                     + (" FEVER score (page level): a gold (page, sentence) counts as covered when "
                        "its page is among the first 5 cited passages - an upper bound of the "
                        "official sentence-level score." if kind == "fever" else ""))
    if summary.get("level") == "sentence" and "ids" in basis:
        notes.append("Sentence level by ids, as the official scorers match: a gold (page, "
                     "sentence) - FEVEROUS: (page, element id) such as cell_0_1_2 - is covered "
                     "when a cited passage of that page holds that id; a passage predicts every "
                     "(page, sentence) it holds. FEVER score: the cited passages contribute their "
                     "pairs in citation order, each passage's in its own order, and the first 5 "
                     "pairs are the scorer's predictions (FEVEROUS: the first 5 sentences and the "
                     "first 25 cells, list items and captions).")
    if summary.get("level") == "sentence" and "text" in basis:
        notes.append("Sentence level by text: a gold sentence is covered when a cited passage of "
                     "the same page contains it on word boundaries ([[link|anchor]] markup "
                     "reduced, whitespace normalised, case folded); FEVER score: a gold set is "
                     "covered when each of its sentences is in one of the first 5 cited passages.")
    rule = (summary.get("fever") or {}).get("rule")
    if rule:
        notes.append("FEVER score rule: " + "; ".join(SCORER_RULES[r] for r in rule.split("+")
                                                      if r in SCORER_RULES) + ".")
    if summary.get("n_without_gold"):
        counted = {"fever": " (the FEVER score counts them: NEI needs no evidence)",
                   "feverous": " (the FEVEROUS score counts them as never strictly right: NEI "
                               "needs evidence)"}.get(str(rule), "")
        notes.append(f"{summary['n_without_gold']} finished item(s) have no gold evidence set "
                     "(e.g. NOT ENOUGH INFO) and are left out of precision/recall/F1"
                     + (counted if summary.get("fever") else "") + ".")
    if summary.get("n_no_citation_data"):
        notes.append(f"{summary['n_no_citation_data']} finished row(s) carry no citation data "
                     "(written before citations existed) and are left out.")
    return notes


# -- per-item values for the metric registry and paired comparisons ----------------------------
def item_value(name: str) -> Callable[[Row], float | None]:
    """``row -> value`` of an evidence metric (None where it is not defined)."""
    def get(row: Row) -> float | None:
        if name in ("uncited_verdicts", "hallucinated_citations"):
            value = uncited_verdict(row) if name == "uncited_verdicts" else hallucinated(row)
            return None if value is None else float(value)
        scored = score_row(row)
        if scored is None:
            return None
        fever = scored.fever
        value: Any = {
            "evidence_precision": scored.page_precision, "evidence_recall": scored.page_recall,
            "evidence_f1": scored.page_f1, "evidence_em": scored.page_em,
            "evidence_sentence_precision": scored.sentence_precision,
            "evidence_sentence_recall": scored.sentence_recall,
            "evidence_sentence_f1": scored.sentence_f1,
            "evidence_sentence_em": scored.sentence_em,
            "fever_score": fever.strict if fever else None,
            "fever_evidence_precision": fever.precision if fever else None,
            "fever_evidence_recall": fever.recall if fever else None,
            "gold_retrieved": scored.gold_retrieved, "gold_cited": scored.gold_cited,
            "retrieved_recall": scored.recall_retrieved,
        }[name]
        return None if value is None else float(value)
    return get


def fever_evidence_f1(rows: list[Row]) -> float | None:
    """F1 of the FEVER scorer's macro evidence precision and recall over ``rows``."""
    precision, _ = _mean(item_value("fever_evidence_precision")(r) for r in rows)
    recall, _ = _mean(item_value("fever_evidence_recall")(r) for r in rows)
    return None if precision is None or recall is None else _f1(precision, recall)


def uncited_replies(rows: list[Row]) -> float | None:
    """Labelled replies that cited nothing / labelled replies, over ``rows``."""
    counts = [c for c in (reply_counts(r) for r in rows) if c is not None]
    total = sum(t for _, t in counts)
    return sum(u for u, _ in counts) / total if total else None


ITEM_METRICS: dict[str, str] = {
    "evidence_precision": "Evidence precision of the cited passages, page level (gold items)",
    "evidence_recall": "Evidence recall of the cited passages, page level (best gold set)",
    "evidence_f1": "Evidence F1 of the cited passages, page level (HoVer: document-level F1)",
    "evidence_em": "Cited pages are exactly a gold set's pages (HoVer document-level EM)",
    "evidence_sentence_precision": "Sentence level: cited (page, sentence) pairs that are gold "
                                   "(ids), or cited passages containing a gold sentence (text)",
    "evidence_sentence_recall": "Sentence level: gold sentences a cited passage holds (ids) or "
                                "contains (text), best gold set",
    "evidence_sentence_f1": "F1 of sentence-level evidence precision and recall",
    "evidence_sentence_em": "Cited (page, sentence) pairs are exactly a gold set (HoVer "
                            "supporting-fact EM; sentence ids only)",
    "fever_score": "FEVER score: label right and a complete gold set in the scorer's first 5 "
                   "predictions (NEI: label right); page level where passages carry no "
                   "sentence ids",
    "fever_evidence_precision": "FEVER scorer's evidence precision (first 5 cited, verifiable)",
    "fever_evidence_recall": "FEVER scorer's evidence recall (complete set, verifiable claims)",
    "gold_retrieved": "A complete gold set among all passages the run saw (retriever)",
    "gold_cited": "A complete gold set among the cited passages (model)",
    "retrieved_recall": "Gold evidence recall over all passages seen (cited + retrieved)",
    "uncited_verdicts": "Verdicts resting on no cited passage although passages were shown",
    "hallucinated_citations": "Rows where a reply cited a passage it was never shown (dropped)",
}
"""Per-item evidence metrics (mean over the rows where defined) registered in ``metrics.py``."""
