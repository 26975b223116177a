"""The one run configuration object (STYLE.md §3), passed to graphs as ``context_schema``.

Every field has a default and a description that LangGraph Studio renders as a form; CLI flags map
onto these fields one to one. An environment variable may fill a field only while it still holds
its default (``FACTDEBATE_MODEL``, ``FACTDEBATE_INDEX_DIR``, ``FACTDEBATE_SEARCH_BACKEND`` ...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from factdebate.core.errors import ConfigError

ScoringMode = Literal["stability", "consistency", "none"]

DEFAULT_MODEL = "local:smollm2"
MAX_CLAIM_CHARS = 4000
"""Documented size limit of a claim; longer input is rejected (it would not fit the embedded
model's context together with evidence)."""


def factdebate_home() -> Path:
    """Folder for indexes and checkpoints: ``$FACTDEBATE_HOME`` or ``~/.cache/factdebate``."""
    home = os.environ.get("FACTDEBATE_HOME")
    return Path(home).expanduser() if home else Path.home() / ".cache" / "factdebate"


def default_index_dir() -> Path:
    """Where ``factdebate index`` writes and retrievers read when nothing else is configured."""
    return factdebate_home() / "index"


def _describe(default: Any, description: str, env: str | None = None) -> Any:
    meta = {"description": description}
    if env:
        meta["env"] = env
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(kw_only=True)
class Context:
    """Framework knobs, models per role and backends for one run."""

    max_rounds: int = _describe(3, "Maximum debate rounds T before the judge decides (1-10).")
    faithfulness_threshold: float = _describe(
        0.7, "Stability mode: every debater's RAGAS faithfulness must exceed this to stop early."
    )
    relevance_threshold: float = _describe(
        0.8, "Stability mode: every debater's RAGAS answer relevancy must exceed this to stop early."
    )
    top_k: int = _describe(3, "Passages each debater retrieves per query.")
    debaters: list[str] = _describe(
        ["rag", "search"],
        "Debater kinds, one per agent: 'rag' (vector index), 'search' (web search or its offline "
        "stand-in), 'vanilla' (no tool). Two or more, e.g. ['rag','search','vanilla'].",
    )
    query_formulation: bool = _describe(
        True, "Debaters reformulate their retrieval query every round; off = the claim is the query."
    )
    scoring_mode: ScoringMode = _describe(
        "stability",
        "'stability' = RAGAS faithfulness + answer relevancy gate early stopping (Tool-MAD v2); "
        "'consistency' = similarity(evidence, answer) shown to the judge (Tool-MAD v1); 'none'.",
    )
    score_feedback: bool = _describe(
        True,
        "Use the scores for early stopping and show them to the judge; off = the "
        "'w/o scoring feedback' ablation (scores still computed and reported).",
    )
    debater_model: str = _describe(
        DEFAULT_MODEL,
        "Debater model spec: 'local:smollm2' (embedded), 'openai:gpt-4o-mini', "
        "'openai:<name>' with model_base_url for vLLM/Ollama, 'scripted:<scenario>' (tests).",
        env="FACTDEBATE_MODEL",
    )
    query_model: str = _describe("", "Query-formulation model spec; empty = debater_model.")
    judge_model: str = _describe("", "Judge model spec; empty = debater_model.")
    scoring_model: str = _describe("", "RAGAS evaluator LLM spec; empty = judge model.")
    model_base_url: str = _describe(
        "", "Base URL of an OpenAI-compatible server (vLLM, Ollama, LM Studio).",
        env="FACTDEBATE_BASE_URL",
    )
    temperature: float = _describe(0.0, "Sampling temperature of every role (the papers use 0).")
    embedding_model: str = _describe(
        "minilm",
        "Embeddings for the vector index and answer relevancy: 'minilm' (bundled all-MiniLM-L6-v2) "
        "or 'openai:text-embedding-3-small'.",
    )
    cross_encoder: str = _describe(
        "",
        "Consistency mode similarity: a local sentence-transformers cross-encoder path; empty = "
        "cosine of the bundled embeddings (no cross-encoder ships offline).",
    )
    rag_backend: str = _describe(
        "milvus", "Retriever of 'rag' debaters: 'milvus', 'keyword' or 'hybrid' (both, scores fused)."
    )
    search_backend: str = _describe(
        "auto",
        "Retriever of 'search' debaters: 'tavily', 'local_search' (offline keyword stand-in) or "
        "'auto' (Tavily when TAVILY_API_KEY is set, else the stand-in, flagged in the output).",
        env="FACTDEBATE_SEARCH_BACKEND",
    )
    index_dir: str = _describe(
        "", "Folder holding the indexes built by 'factdebate index'; empty = the user cache.",
        env="FACTDEBATE_INDEX_DIR",
    )
    milvus_uri: str = _describe(
        "", "Milvus URI: a Milvus Lite folder or http://host:19530; empty = <index_dir>/milvus.db.",
        env="FACTDEBATE_MILVUS_URI",
    )
    label_set: str = _describe(
        "fever",
        "Task label set: fever (3-way), binary (FEVEROUS/FaVIQ/HoVer), averitec (4-way), medqa "
        "(options), pubmedqa (yes/no/maybe).",
    )
    prompt_set: str = _describe("tool_mad", "Prompt set (folder under prompts/).")
    llm_retries: int = _describe(2, "Retries of a failed model call (exponential back-off).")
    tool_retries: int = _describe(2, "Retries of a failed retrieval call (exponential back-off).")
    tool_timeout_s: float = _describe(20.0, "Timeout of one retrieval call, seconds.")

    def __post_init__(self) -> None:
        for f in fields(self):
            env = f.metadata.get("env")
            if env and os.environ.get(env) and getattr(self, f.name) == _default_of(f):
                setattr(self, f.name, os.environ[env])
        self.validate()

    def validate(self) -> None:
        """Reject values no run could use, naming the field and the accepted range."""
        if not 1 <= self.max_rounds <= 10:
            raise ConfigError(f"max_rounds={self.max_rounds} is out of range", "use 1 to 10")
        if self.top_k < 1:
            raise ConfigError(f"top_k={self.top_k} must be positive", "use 1 or more")
        if len(self.debaters) < 2:
            raise ConfigError(
                f"debaters={self.debaters} needs at least two agents", "e.g. ['rag', 'search']"
            )
        unknown = [d for d in self.debaters if debater_kind(d) not in DEBATER_KINDS]
        if unknown:
            raise ConfigError(
                f"unknown debater kind(s) {unknown}", f"use {', '.join(DEBATER_KINDS)}"
            )
        from factdebate.tools.base import RETRIEVERS  # registers names only; no SDK is imported

        RETRIEVERS.resolve(self.rag_backend)  # unknown names fail here, with a suggestion,
        if self.search_backend != "auto":  # not in the middle of a run (or of every eval item)
            RETRIEVERS.resolve(self.search_backend)
        if self.scoring_mode not in ("stability", "consistency", "none"):
            raise ConfigError(
                f"unknown scoring_mode {self.scoring_mode!r}", "use stability, consistency or none"
            )

    # Role -> model spec, with the documented fall-backs.
    @property
    def query_model_spec(self) -> str:
        """Model that formulates queries."""
        return self.query_model or self.debater_model

    @property
    def judge_model_spec(self) -> str:
        """Model that judges after the last round."""
        return self.judge_model or self.debater_model

    @property
    def scoring_model_spec(self) -> str:
        """Evaluator LLM of the RAGAS metrics."""
        return self.scoring_model or self.judge_model_spec

    @property
    def index_path(self) -> Path:
        """Resolved index folder."""
        return Path(self.index_dir).expanduser() if self.index_dir else default_index_dir()

    @property
    def resolved_milvus_uri(self) -> str:
        """Milvus URI, defaulting to the Milvus Lite folder inside the index folder."""
        return self.milvus_uri or str(self.index_path / "milvus.db")

    def agent_ids(self) -> list[str]:
        """Unique debater ids: a kind used twice becomes ``rag``, ``rag2``."""
        seen: dict[str, int] = {}
        ids = []
        for kind in self.debaters:
            seen[kind] = seen.get(kind, 0) + 1
            ids.append(kind if seen[kind] == 1 else f"{kind}{seen[kind]}")
        return ids

    def tool_kinds(self) -> list[str]:
        """Retriever kinds (``rag``, ``search``) this run may use; ``prepare`` resolves them.

        Tool-MAD: its debaters' kinds. Frameworks whose retrieval is not per debater override it.
        """
        return [debater_kind(agent) for agent in self.agent_ids()]


DEBATER_KINDS = ("rag", "search", "vanilla")


def debater_kind(agent_id: str) -> str:
    """``rag2`` -> ``rag``."""
    return agent_id.rstrip("0123456789")


def _default_of(f: Any) -> Any:
    from dataclasses import MISSING

    if f.default is not MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc]


def context_fields(cls: type[Context] | None = None) -> dict[str, dict[str, Any]]:
    """Field name -> {default, description} of ``cls`` (default ``Context``); for ``--set``/``ls``."""
    return {
        f.name: {"default": _default_of(f), "description": f.metadata.get("description", "")}
        for f in fields(cls or Context)
    }
