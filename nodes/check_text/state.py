"""Checking a whole text: its Context, its typed state and the pure verdict rules.

``check_text`` splits a text into sentences, extracts atomic, decontextualised claims with a
check-worthiness label from each, verifies every distinct check-worthy claim with a registered
framework (the *verifier*, Tool-MAD by default) and aggregates the per-claim verdicts into
per-sentence marks, numbered citations and a text-level verdict with counts.

Limits: a text holds at most ``MAX_TEXT_CHARS`` characters (longer input is refused with the
remedy); at most ``max_claims`` distinct check-worthy claims are debated per text, the others are
reported as skipped (counted, never silently dropped).

Lives with the framework's nodes, not in ``factdebate.core``: only this framework
reads it. Shared nodes read what ``factdebate.core.context``'s protocols declare.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

from factdebate.core.context import JudgedContext, knob
from factdebate.core.errors import ConfigError
from factdebate.core.labels import LABEL_SETS, NEI
from factdebate.core.schema_docs import described
from factdebate.core.state import Evidence, ReviewRecord, RoundScore, Turn, add_ledger

MAX_TEXT_CHARS = 20_000
"""Documented size limit of a checked text (about 3,000 words): each sentence costs one
extraction call and each claim a debate; split longer documents and check the parts."""

CLAIM_LABEL_SETS = ("fever", "binary", "averitec")
"""Label sets a text can be checked on (claim verification; not QA)."""

Category = Literal["supported", "refuted", "unverifiable", "no_verdict"]
TextVerdict = Literal["contains refuted claims", "all supported", "unverifiable parts",
                      "no check-worthy claims"]

_OWN_FIELDS = ("framework", "verifier_settings", "max_claims", "extraction_model",
               "citations_per_claim", "prompt_set", "review")
"""Fields of ``CheckTextContext`` that are not handed on to the verifier's Context (``review``:
the text check reviews each claim itself, in text order, nodes/check_text/review_claims.py)."""


@dataclass(kw_only=True)
class CheckTextContext(JudgedContext):
    """The shared Context plus the text-check knobs; the verifier gets the shared fields."""

    framework: str = knob(
        "tool_mad",
        "Framework that verifies each extracted claim (any registered one except check_text), "
        "e.g. tool_mad, madke, mermaid, cot.",
    )
    verifier_settings: dict[str, Any] = field(  # knob() has no dict default
        default_factory=dict,
        metadata={"description": "Settings of the verifier's own Context, e.g. "
                  "{\"max_rounds\": 1, \"scoring_mode\": \"consistency\"} (text: JSON or "
                  "field=value;field=value). Model fields are set with debater_model/judge_model "
                  "instead."},
    )
    max_claims: int = knob(
        20, "Distinct check-worthy claims debated per text; further ones are reported as "
        "skipped.", range=(1, 200))
    extraction_model: str = knob(
        "", "Model spec of claim extraction; empty = debater_model.", model=True)
    citations_per_claim: int = knob(
        3, "Evidence passages cited per verified claim.", range=(0, 20))
    prompt_set: str = knob("check_text", "Prompt set of claim extraction (folder under "
                           "prompts/).", operator=True)

    def validate(self) -> None:
        """The shared checks, a claim label set, a verifier that is not check_text itself."""
        super().validate()
        if LABEL_SETS.resolve(self.label_set) not in CLAIM_LABEL_SETS:
            raise ConfigError(f"label_set={self.label_set!r} is not a claim-verification task",
                              f"check a text with one of {', '.join(CLAIM_LABEL_SETS)}")
        if self.framework.strip().lower().replace("-", "_") == "check_text":
            raise ConfigError("check_text cannot verify its own claims",
                              "set framework to a debate framework, e.g. tool_mad")
        self.verifier_settings = parse_settings(self.verifier_settings)

    @property
    def extraction_model_spec(self) -> str:
        """Model that extracts claims."""
        return self.extraction_model or self.debater_model

    def model_specs(self) -> dict[str, str]:
        """The shared roles plus claim extraction."""
        return {**super().model_specs(), "extraction": self.extraction_model_spec}


def parse_settings(value: Any) -> dict[str, Any]:
    """``verifier_settings`` as a dict: a dict, a JSON object or ``field=value;field=value``."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise ConfigError(f"verifier_settings={text[:80]!r} is not valid JSON",
                                  'write it as {"max_rounds": 1}') from exc
            if isinstance(data, dict):
                return data
        pairs = [p for p in text.split(";") if p.strip()]
        if all("=" in p for p in pairs):
            return {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in pairs)}
    raise ConfigError(f"verifier_settings={str(value)[:80]!r} is not a mapping",
                      "give a JSON object or field=value;field=value")


def verifier_context(ctx: CheckTextContext, cls: type[JudgedContext] | type[Any]) -> Any:
    """The verifier's Context (class ``cls``): the shared fields of ``ctx`` plus its settings.

    Raises:
        ConfigError: A setting ``cls`` lacks, a model field (set debater_model/judge_model), or
            a value out of range (named by the verifier's own checks).
    """
    known = {f.name: f for f in fields(cls)}
    for name in ctx.verifier_settings:
        if name not in known:
            raise ConfigError(f"verifier_settings names {name!r}, not a setting of "
                              f"{cls.__name__}", f"its settings: {', '.join(sorted(known))}")
        if known[name].metadata.get("model"):
            raise ConfigError(f"verifier_settings may not set the model field {name!r}",
                              "set debater_model or judge_model of the text check instead")
    shared = {f.name: getattr(ctx, f.name) for f in fields(ctx)
              if f.name in known and f.name not in _OWN_FIELDS}
    return cls(**{**shared, **ctx.verifier_settings})


def category_of(label: str | None) -> Category:
    """A claim label as supported / refuted / unverifiable (NEI, CONFLICTING) / no_verdict."""
    if label is None:
        return "no_verdict"
    return {"SUPPORTS": "supported", "REFUTES": "refuted"}.get(label, "unverifiable")  # type: ignore[return-value]


def text_verdict(counts: dict[str, int]) -> TextVerdict:
    """The text-level verdict from the claim counts (refuted beats unverifiable beats supported)."""
    if counts.get("refuted"):
        return "contains refuted claims"
    if counts.get("unverifiable") or counts.get("no_verdict") or counts.get("skipped"):
        return "unverifiable parts"
    if counts.get("supported"):
        return "all supported"
    return "no check-worthy claims"


def text_label(verdict: TextVerdict, label_set: str, counts: dict[str, int]) -> str | None:
    """The text-level verdict on the task's label set (FELM: a segment is false if any claim is).

    ``contains refuted claims`` -> REFUTES; ``all supported`` -> SUPPORTS; None when the open
    claims only lack a verdict (the verifier's replies were unreadable: no label is invented);
    otherwise NOT ENOUGH INFO, or SUPPORTS on the binary set, which has no such label (no claim
    was shown false).
    """
    if verdict == "contains refuted claims":
        return "REFUTES"
    if verdict == "all supported":
        return "SUPPORTS"
    if counts.get("no_verdict") and not (counts.get("unverifiable") or counts.get("skipped")):
        return None
    labels = LABEL_SETS.get(label_set).labels
    return NEI if NEI in labels else "SUPPORTS"


class Sentence(TypedDict):
    """One sentence of the checked text and where it is."""

    index: int
    """0-based position in the text."""
    start: int
    """Character offset of its first character in ``text``."""
    end: int
    """Character offset just past its last character (``text[start:end]`` is the sentence)."""
    text: str
    """The sentence."""


class ExtractedClaim(TypedDict):
    """One claim as the extraction of one sentence returned it."""

    sentence: int
    """Index of the sentence it came from."""
    claim: str
    """Atomic, self-contained claim (pronouns resolved, one fact)."""
    check_worthy: bool
    """A verifiable statement of fact (not an opinion, question, hedge or advice)."""
    reason: str
    """Why it is (not) check-worthy."""


class ClaimEntry(TypedDict):
    """A distinct claim of the text (identical claims from several sentences are one entry)."""

    key: str
    """Stable id: a hash of the normalised claim text."""
    claim: str
    """The claim."""
    sentences: list[int]
    """Sentences it was extracted from."""
    check_worthy: bool
    """Check-worthy according to any of its extractions."""
    reason: str
    """The extraction's reason."""
    status: Literal["verify", "skipped", "not_check_worthy"]
    """Debated, over ``max_claims``, or not check-worthy."""


class ClaimResult(TypedDict):
    """The verifier's result for one claim (what the HTML report drills into)."""

    label: str | None
    """Verdict on the task's label set."""
    rationale: str
    """The deciding role's explanation."""
    rounds: int
    """Rounds used."""
    stopped_by: str
    """How the debate ended."""
    turns: list[Turn]
    """Every turn: round, agent, query, evidence, answer, label."""
    scores: dict[str, list[RoundScore]]
    """Per-agent per-round scores."""
    evidence: list[Evidence]
    """The passages the claim's verdict rests on: what its deciding replies cited (the verifier's
    ``verdict_evidence``, with ``cited_by`` and ``stance``), at most ``citations_per_claim``."""
    retrieved: NotRequired[list[Evidence]]
    """Passages the claim's debate retrieved or was shown but did not cite."""
    citation_records: NotRequired[list[dict[str, Any]]]
    """The verifier's per-reply citation records (a claim's ``citations`` are the
    numbers of its passages in the text's citation list)."""
    flags: list[str]
    """The verifier's caveats for this claim."""
    ledger: dict[str, Any]
    """LLM calls and tokens of this claim's debate."""
    review: NotRequired[ReviewRecord | None]
    """The fact-checker's decision on this claim's verdict when the text check's ``review`` is on
    (nodes/check_text/review_claims.py)."""


def merge_results(left: dict[str, ClaimResult] | None,
                  right: dict[str, ClaimResult] | None) -> dict[str, ClaimResult]:
    """Reducer: per-claim results from parallel branches are merged by claim key."""
    return {**(left or {}), **(right or {})}


@described  # docstrings -> Studio field descriptions
class CheckTextInput(TypedDict):
    """What a caller sends: the text (``claim`` is accepted too, as ``verify``/``eval`` send it)."""

    text: NotRequired[str | None]
    """The text to check."""
    claim: NotRequired[str | None]
    """Alias of ``text`` (the evaluation runner's input key)."""
    task: NotRequired[str | None]
    """Label set; overrides the Context's ``label_set`` when given."""


class CheckTextState(CheckTextInput):
    """Everything the text check carries between nodes."""

    sentences: list[Sentence]
    """The text's sentences with their spans."""
    extracted: Annotated[list[ExtractedClaim], operator.add]
    """Claims of every sentence, appended by the parallel extraction branches."""
    claims: list[ClaimEntry]
    """Distinct claims with their status."""
    results: Annotated[dict[str, ClaimResult], merge_results]
    """Claim key -> the verifier's result, written by the parallel verification branches."""
    check: dict[str, Any]
    """The aggregated report (see ``CheckTextOutput.check``)."""
    label: str | None
    """Text-level verdict on the task's label set."""
    rationale: str
    """One-line summary of the counts."""
    round: int
    """Most rounds any claim's debate used."""
    stopped_by: str
    """``check_text``."""
    ledger: Annotated[dict[str, Any], add_ledger]
    """LLM calls and tokens of extraction and every debate."""
    flags: Annotated[list[str], operator.add]
    """Caveats (unreadable extraction replies, skipped claims, the verifiers' flags)."""
    review_on: bool
    """The run asked for a reviewer's decision on each claim (the Context's ``review``, recorded
    by ``split_text`` so a resume that sends no Context still reviews every claim)."""


@described  # docstrings -> Studio field descriptions
class CheckTextOutput(TypedDict):
    """The result: the text-level verdict in the shape every framework returns, plus ``check``."""

    claim: str
    """The checked text (echoed, as every framework echoes its claim)."""
    label: str | None
    """Text-level verdict on the task's label set."""
    rationale: str
    """One-line summary."""
    round: int
    """Most rounds any claim's debate used."""
    stopped_by: str
    """``check_text``."""
    check: dict[str, Any]
    """``text``, ``verdict``, ``counts``, ``sentences`` (span, verdict mark, claim keys,
    citation numbers), ``claims`` (entry + result + citation numbers), ``citations``
    (numbered evidence), ``framework``."""
    ledger: dict[str, Any]
    """Totals."""
    flags: list[str]
    """Caveats."""


class SentenceTask(TypedDict):
    """Input of one extraction branch."""

    sentence: Sentence
    """The sentence to extract from."""
    context: str
    """Preceding text, for resolving pronouns."""


class ClaimTask(TypedDict):
    """Input of one verification branch."""

    key: str
    """Claim key."""
    claim: str
    """The claim."""
    task: str
    """Label set."""
