"""The run configuration objects (STYLE.md §3), passed to graphs as ``context_schema``.

``Context`` holds what every framework uses; each framework's Context subclass adds its own knobs
and lives with that framework's nodes (``nodes/<framework>/state.py``, the baselines'
``nodes/baselines/context.py``). ``RoundsContext``/``DebatersContext`` are what the
shared round nodes read of them. Every
field has a default and a description that LangGraph Studio renders as a form; CLI flags map onto
these fields one to one. An environment variable may fill a field only while it still holds its
default (``FACTDEBATE_MODEL``, ``FACTDEBATE_INDEX_DIR``, ``FACTDEBATE_SEARCH_BACKEND`` ...).

Fields are declared with ``factdebate.core.settings.knob``: ranges and choices are validated for
every field in ``__post_init__`` (text from ``--set`` or a server is parsed to the field's type),
and fields that name a process, URL, host, file, folder, credential or contacted service carry
``"operator": True``. On a shared server a client's run may set only the other fields, and model
specs only from the operator's allow-list: ``check_client_settings`` and
``allowed_models_from_env`` below.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol, TypeVar

from factdebate.core.errors import ConfigError, InputError, SettingsRefused
from factdebate.core.labels import LABEL_SETS
from factdebate.core.settings import check_fields, default_of, knob, mask_url, masked_context

__all__ = [
    "DEBATER_KINDS", "DEFAULT_MODEL", "INDEXES", "INDEX_NAME", "MAX_CLAIM_CHARS", "Context",
    "JudgedContext", "allowed_models_from_env", "check_client_settings", "context_fields",
    "debater_kind", "default_index_dir", "factdebate_home", "index_named", "indexes_home", "knob",
    "make_context", "mask_url", "masked_context", "model_allowed", "named_indexes",
    "operator_fields", "resolve_index", "run_fields",
]

C = TypeVar("C", bound="Context")

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


INDEXES = "indexes"
"""Folder under ``$FACTDEBATE_HOME`` holding indexes by name (``<name>/`` each an index folder)."""
INDEX_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
"""A plain index name: no path separator, no leading dot (so never ``..``), at most 100 characters."""
_MANIFEST = "manifest.json"  # tools/index_state.MANIFEST: written last, so it marks a built index


def indexes_home() -> Path:
    """``$FACTDEBATE_HOME/indexes``: the folder of the indexes known by name."""
    return factdebate_home() / INDEXES


def _built(folder: Path) -> bool:
    """True when ``folder`` holds something: a built index, or a damaged one (which the run then
    names with its damage, ``tools/index_state.py``); an empty folder is no index."""
    try:
        return folder.is_dir() and any(folder.iterdir())
    except OSError:
        return False


def named_indexes() -> list[str]:
    """Names of the indexes in :func:`indexes_home` (folders that are not empty), sorted;
    hidden folders (a build under way, ``.<name>.building-*``) are not indexes."""
    try:
        entries = list(indexes_home().iterdir())
    except OSError:
        return []
    return sorted(p.name for p in entries if INDEX_NAME.match(p.name) and _built(p))


def _indexes_there(paths: bool = True) -> str:
    names, where = named_indexes(), f" in {indexes_home()}" if paths else ""
    return f"indexes{where}: {', '.join(names)}" if names else f"no index is built{where} yet"


def index_named(name: str, what: str = "index", *, paths: bool = True) -> Path:
    """The folder of the built index called ``name``: ``$FACTDEBATE_HOME/indexes/<name>``.

    ``name`` must be a plain name (:data:`INDEX_NAME`): a path, ``..`` or an absolute folder is
    refused, so a value a server's client sends never leaves the operator's indexes folder.
    ``paths=False`` keeps the operator's folders out of the error (what a client is told).

    Raises:
        ConfigError: ``name`` is not a plain name, or no index of that name is built (the
            message lists the indexes that are, and suggests the closest name).
    """
    text = name.strip()
    if not INDEX_NAME.match(text):
        raise ConfigError(f"{what} {name!r} is not an index name",
                          "use letters, digits, '.', '_' and '-' (no path: a folder is given "
                          "as index_dir)")
    folder = indexes_home() / text
    if not _built(folder):
        close = difflib.get_close_matches(text, named_indexes(), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        build = (f"; build it: factdebate index DUMP --format FORMAT --index-dir {folder}"
                 if paths else "")
        raise ConfigError(f"{what} {text!r}: no index of that name",
                          f"{hint}{_indexes_there(paths)} (factdebate ls indexes){build}")
    return folder


def resolve_index(value: str, what: str = "--index") -> tuple[Path, str]:
    """``(folder, name)`` of an index given as ``NAME`` or a folder: the one rule of ``verify``,
    ``check``, ``eval``, ``search`` and ``index --info``.

    A plain name (:data:`INDEX_NAME`) is :func:`index_named` (``name`` is it) unless a folder of
    that name in the current directory holds an index, or no index has that name while such a
    folder exists (a dump folder called ``fever-wiki`` does not hide the index ``fever-wiki``);
    anything else (a path separator, ``~``) is that folder, made absolute (``name`` is ``""``).

    Raises:
        InputError: ``value`` is empty, or names a folder that does not exist.
        ConfigError: ``value`` is a name no built index has (the message lists those there are).
    """
    text = value.strip()
    if not text:
        raise InputError(f"{what} is empty", "give an index name (factdebate ls indexes) or a "
                                             "folder")
    here = Path(text)
    if INDEX_NAME.match(text) and (not here.is_dir() or (
            not (here / _MANIFEST).is_file() and _built(indexes_home() / text))):
        return index_named(text, what), text
    folder = here.expanduser().absolute()
    if not folder.is_dir():
        raise InputError(f"{what} {text}: no folder {folder}",
                         f"give an index folder, or a name; {_indexes_there()}")
    return folder, ""


_describe = knob  # the former name of the field helper


class RoundsContext(Protocol):
    """What a shared round node reads of a round-based framework's Context.

    ``open_round`` and the debater fan-out (``nodes/open_round.py``) serve Tool-MAD, MADKE,
    MADAM-RAG, MAD and Du et al.'s debate; each graph binds its own Context class, and the nodes
    read only this.
    """

    max_rounds: int


class DebatersContext(RoundsContext, Protocol):
    """A round-based Context whose debaters speak in parallel branches (Tool-MAD, Du et al.)."""

    def agent_ids(self) -> list[str]:
        """The debaters of a round, in order."""
        ...


@dataclass(kw_only=True)
class Context:
    """What every framework uses: the debater model, sampling, retries, retrieval and task.

    Each framework's own knobs live in its subclass (``ToolMadContext``, ``MadkeContext``,
    ``MermaidContext``, ``MadamRagContext``, the baselines' contexts), which is the graph's
    ``context_schema``, so Studio shows only the fields that graph uses. Fields marked
    ``operator`` name a process, URL, file, folder or service: a server's clients may not set them.
    """

    debater_model: str = knob(
        DEFAULT_MODEL,
        "Model spec of the debaters (and of every role left empty): 'local:smollm2' (embedded), "
        "'openai:gpt-4o-mini', 'openai:<name>' with model_base_url for vLLM/Ollama, "
        "'scripted:<scenario>' (tests).",
        env="FACTDEBATE_MODEL", model=True,
    )
    model_base_url: str = knob(
        "", "Base URL of an OpenAI-compatible server (vLLM, Ollama, LM Studio).",
        env="FACTDEBATE_BASE_URL", operator=True,
    )
    temperature: float = knob(
        0.0, "Sampling temperature of every role (the papers use 0).", range=(0.0, 2.0))
    structured_output: str = knob(
        "auto",
        "How models are asked for JSON: 'json_schema', 'function_calling', 'json_mode', 'text' "
        "(JSON asked for in the prompt, parsed from the reply) or 'auto' (the strongest the server "
        "accepts; a refused method falls back down that list once per model and base URL).",
        env="FACTDEBATE_STRUCTURED_OUTPUT",
        choices=("auto", "json_schema", "function_calling", "json_mode", "text"),
    )
    embedding_model: str = knob(
        "minilm",
        "Embeddings of the vector index and answer relevancy: 'minilm' (bundled all-MiniLM-L6-v2) "
        "or 'openai:text-embedding-3-small'; must match the index.", operator=True,
    )
    rag_backend: str = knob(
        "milvus", "Retriever of the 'rag' tool: 'milvus', 'keyword', 'hybrid' (both, fused), "
        "'wikipedia' (the live MediaWiki API at FACTDEBATE_MEDIAWIKI_URL, no index) or "
        "'langchain' (the retriever or vector store langchain_factory returns).",
        operator=True,
    )
    search_backend: str = knob(
        "auto",
        "Retriever of the 'search' tool: 'tavily', 'local_search' (offline keyword stand-in), "
        "'wikipedia' (live MediaWiki API) or 'auto' (Tavily when TAVILY_API_KEY is set, else the "
        "stand-in, flagged in the output).",
        env="FACTDEBATE_SEARCH_BACKEND", operator=True,
    )
    index_dir: str = knob(
        "", "Folder holding the indexes built by 'factdebate index'; empty = the user cache.",
        env="FACTDEBATE_INDEX_DIR", operator=True,
    )
    index: str = knob(
        "", "Index to search by name: $FACTDEBATE_HOME/indexes/<name> (see 'factdebate ls "
        "indexes'); sets index_dir. A plain name only, never a path, so a server's client may "
        "choose among the operator's named indexes; empty = index_dir.")
    milvus_uri: str = knob(
        "", "Milvus URI: a Milvus Lite folder or http://host:19530; empty = <index_dir>/milvus.db.",
        env="FACTDEBATE_MILVUS_URI", operator=True,
    )
    langchain_factory: str = knob(
        "", "Backend 'langchain': module:callable returning a LangChain BaseRetriever or "
        "VectorStore (a user's existing index), imported and called once per process.",
        env="FACTDEBATE_LANGCHAIN_FACTORY", operator=True,
    )
    pool: str = knob(
        "", "Knowledge-store pool the retrievers search (an AVeriTeC claim id: eval sets it per "
        "claim over an index of AVeriTeC's knowledge store); empty = every passage.")
    label_set: str = knob(
        "fever",
        "Task label set: fever (3-way), binary (FEVEROUS/FaVIQ/HoVer), averitec (4-way), medqa "
        "(options), pubmedqa (yes/no/maybe).",
    )
    prompt_set: str = knob("tool_mad", "Prompt set (folder under prompts/).", operator=True)
    llm_retries: int = knob(
        2, "Retries of a failed model call (exponential back-off).", range=(0, 10))
    tool_retries: int = knob(
        2, "Retries of a failed retrieval call (exponential back-off).", range=(0, 10))
    tool_timeout_s: float = knob(
        20.0, "Timeout of one retrieval call, seconds.", range=(0, 600), open_low=True)
    review: bool = knob(
        False, "Stop before the verdict is final for a fact-checker's review: the run interrupts "
        "at the 'review' node with the draft verdict and is resumed with the reviewer's decision "
        "(approve, edit or reject); needs a checkpointer.")
    inner_checkpoints: bool = knob(
        False, "Write a checkpoint after every node inside a debater's turn in this run, so "
        "that its state can be read, edited and forked there afterwards (Studio's time travel "
        "inside a turn). Without it a run writes them only when it needs them: when it has a "
        "breakpoint inside a turn or resumes a paused run; the CLI never writes them.")

    def __post_init__(self) -> None:
        named_dir = self.index_dir  # before the environment fills it: a folder the caller named
        for f in fields(self):
            env = f.metadata.get("env")
            if env and os.environ.get(env) and getattr(self, f.name) == default_of(f):
                setattr(self, f.name, os.environ[env])
        check_fields(self)  # types (text is parsed), ranges, choices - named in the error
        if self.index:
            self._index_by_name(named_dir)
        self.validate()

    def _index_by_name(self, named_dir: str) -> None:
        """``index_dir`` from ``index`` (a name under the operator's indexes folder); the
        environment's ``FACTDEBATE_INDEX_DIR`` yields to it, a folder the caller named too does
        not (``dataclasses.replace`` passes the folder the name resolved to: that one agrees)."""
        folder = index_named(self.index, "index", paths=False)
        if named_dir and Path(named_dir).expanduser().absolute() != folder.absolute():
            raise ConfigError(f"index={self.index!r} and index_dir both name the index to search",
                              "set one of them")
        self.index = self.index.strip()
        self.index_dir = str(folder)

    def validate(self) -> None:
        """Checks beyond one field's range; subclasses add theirs and call ``super()``."""
        LABEL_SETS.resolve(self.label_set)  # an unknown name fails here, with a suggestion
        self._check_backends()

    def _check_backends(self) -> None:
        from factdebate.core.retrievers import RETRIEVERS  # names only; no SDK is imported

        RETRIEVERS.resolve(self.rag_backend)  # unknown names fail here, with a suggestion,
        if self.search_backend != "auto":  # not in the middle of a run (or of every eval item)
            RETRIEVERS.resolve(self.search_backend)
        if "langchain" in (self.rag_backend, self.search_backend) and not self.langchain_factory:
            raise ConfigError("the langchain retriever backend needs langchain_factory",
                              "set it (or FACTDEBATE_LANGCHAIN_FACTORY) to module:callable "
                              "returning a LangChain BaseRetriever or VectorStore")

    @property
    def index_path(self) -> Path:
        """Resolved index folder."""
        return Path(self.index_dir).expanduser() if self.index_dir else default_index_dir()

    @property
    def resolved_milvus_uri(self) -> str:
        """Milvus URI, defaulting to the Milvus Lite folder inside the index folder."""
        return self.milvus_uri or str(self.index_path / "milvus.db")

    def model_specs(self) -> dict[str, str]:
        """Role -> resolved model spec (empty roles fall back), plus the embeddings."""
        return {"debater": self.debater_model, "embeddings": self.embedding_model}

    def tool_kinds(self) -> list[str]:
        """Retriever kinds (``rag``, ``search``) this run may use; ``prepare`` resolves them."""
        return []

    def start_notes(self) -> list[str]:
        """Notes on choices the Context made for this run (``prepare`` adds them to the flags)."""
        return []

    def judge_score_mode(self) -> str:
        """Scores the judge is shown (a ``score_guides`` key); ``none`` without debate scoring."""
        return "none"


@dataclass(kw_only=True)
class JudgedContext(Context):
    """A Context whose framework has a deciding role (judge, summariser, aggregator, verifier)."""

    judge_model: str = knob(
        "", "Model spec of the deciding role (judge, summariser, aggregator, verifier); "
        "empty = debater_model.", model=True,
    )

    @property
    def judge_model_spec(self) -> str:
        """Model of the deciding role."""
        return self.judge_model or self.debater_model

    def model_specs(self) -> dict[str, str]:
        """The shared roles plus the judge."""
        return {**super().model_specs(), "judge": self.judge_model_spec}


DEBATER_KINDS = ("rag", "search", "vanilla")


def debater_kind(agent_id: str) -> str:
    """``rag2`` -> ``rag``."""
    return agent_id.rstrip("0123456789")


def context_fields(cls: type[Context] | None = None) -> dict[str, dict[str, Any]]:
    """Field name -> {default, description, operator, model, range, env} of ``cls``.

    ``cls`` defaults to the base ``Context``; read by ``--set`` and ``ls context``.
    """
    return {
        f.name: {"default": default_of(f), "description": f.metadata.get("description", ""),
                 "operator": bool(f.metadata.get("operator")),
                 "model": bool(f.metadata.get("model")), "range": f.metadata.get("range"),
                 "env": f.metadata.get("env", "")}
        for f in fields(cls or Context)
    }


def make_context(cls: type[C], values: Mapping[str, Any]) -> C:
    """``cls(**values)`` with one-line errors: a name ``cls`` lacks is a ``ConfigError`` naming it
    (not a ``TypeError``); text values are parsed to the fields' types by the Context itself."""
    known = {f.name for f in fields(cls)}
    for name in values:
        if name not in known:
            raise ConfigError(f"{name!r} is not a setting of {cls.__name__}",
                              f"its settings: {', '.join(sorted(known))}")
    return cls(**values)


def operator_fields(cls: type[Context]) -> frozenset[str]:
    """Fields of ``cls`` only the operator sets (server environment/config, or the local CLI)."""
    return frozenset(f.name for f in fields(cls) if f.metadata.get("operator"))


def run_fields(cls: type[Context]) -> frozenset[str]:
    """Fields of ``cls`` a server's client may set per run."""
    return frozenset(f.name for f in fields(cls)) - operator_fields(cls)


def model_allowed(spec: str, allowed_models: Collection[str]) -> bool:
    """True if ``spec`` is on the allow-list; an entry ending in ``*`` allows that prefix."""
    return any(spec == m or (m.endswith("*") and spec.startswith(m[:-1])) for m in allowed_models)


def check_client_settings(
    cls: type[Context], values: Mapping[str, object], allowed_models: Collection[str]
) -> None:
    """Refuse a server client's run settings that only the operator may choose.

    Raises ``SettingsRefused`` naming the first offending field (in ``values`` order): a field
    ``cls`` does not have, an operator-only field set to anything but its declared default (a
    form that echoes the defaults is harmless: the default defers to the operator's environment),
    or a model spec that is not in ``allowed_models`` (an empty spec, "use the debater model",
    is allowed). Values are not range-checked here; building the Context does that.
    """
    known = {f.name: f for f in fields(cls)}
    for name, value in values.items():
        f = known.get(name)
        if f is None:
            raise SettingsRefused(
                f"{name!r} is not a setting of {cls.__name__}",
                f"settings a run may set: {', '.join(sorted(run_fields(cls)))}", field=name)
        if f.metadata.get("operator") and value != default_of(f):
            raise SettingsRefused(
                f"{name} is an operator-only setting and cannot be set by a run",
                "remove it from the run's context; the server's operator configures it",
                field=name)
        if f.metadata.get("model") and value != "" and not (
                isinstance(value, str) and model_allowed(value, allowed_models)):
            raise SettingsRefused(
                f"{name}={mask_url(str(value))!r} is not on this server's model allow-list",
                f"use one of: {', '.join(sorted(allowed_models))}", field=name)


def allowed_models_from_env() -> frozenset[str]:
    """Model specs a server's clients may choose, from the operator's environment.

    ``FACTDEBATE_ALLOWED_MODELS``: comma-separated specs; an entry ending in ``*`` allows every
    spec with that prefix (``openai:*``). Unset or empty: the model the operator configured,
    ``FACTDEBATE_MODEL``, or the default ``local:smollm2``. ``FACTDEBATE_ALLOW_SCRIPTED=1``
    (test suites) adds ``scripted:*``, the scripted test double; nothing else allows it.
    """
    raw = os.environ.get("FACTDEBATE_ALLOWED_MODELS", "")
    models = {m.strip() for m in raw.split(",") if m.strip()}
    if not models:
        models = {os.environ.get("FACTDEBATE_MODEL") or DEFAULT_MODEL}
    if os.environ.get("FACTDEBATE_ALLOW_SCRIPTED") == "1":
        models.add("scripted:*")
    return frozenset(models)
