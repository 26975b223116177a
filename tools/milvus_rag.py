"""Dense retrieval over a Milvus collection (the ``rag`` debater's tool).

The URI is either a Milvus Lite database path (``<index_dir>/milvus.db`` by default; Milvus Lite
stores it as a *directory*, and pymilvus recognises a local URI by its ``.db`` suffix) or a server
URI (``http://host:19530``, optional token in ``MILVUS_TOKEN``). pymilvus' ``MilvusClient`` is used
directly rather than ``langchain_milvus.Milvus``: one client per retriever, one search call per
query, no document-object round trip, and the errors (missing collection, a Lite database held by
another process) can be translated into messages that say what to do.
The collections it writes open in ``langchain_milvus.Milvus`` unchanged (``text`` and ``vector``
are its default field names; docs/deployment.md, "Scaling out").

Besides ``id``, ``title``, ``text`` and ``url`` a collection keeps each passage's ``page`` (page id
as the dataset's gold evidence names it), ``sentences`` (its element ids, a JSON list) and ``pool``
(an AVeriTeC claim id, ``""`` otherwise). ``RetrieverSettings.pool`` limits a search to one pool
with a filter expression ``pool == "<claim id>"`` on the one collection (no collection per claim);
collections written before these fields existed still open, without them.

Vectors are L2-normalised at build time and searched with the COSINE metric, so scores are cosine
similarities in [-1, 1], higher is better.

Vector index: HNSW (``VECTOR_INDEX``), the same graph Milvus Lite's AUTOINDEX builds when faiss is
installed, but named explicitly so a Milvus server builds it too and the manifest records it.
Search uses ``ef = max(EF_SEARCH, 2 * k)``: on the 5,078-passage benchmark corpus (MiniLM) ef=128
returns the exact top-5 for 300 of 300 HoVer claims and 99.8% of the exact top-20 (ef=64, the
AUTOINDEX default used before, gave 99.7% / 98.5%). HNSW needs no training and its cost grows
with log N, so one setting serves the 264-passage demo and a 100k corpus (~1 ms of faiss time).
Milvus Lite's FLAT is not an option for "exact on small corpora": its NumPy brute force
re-normalises every stored vector per query (~4 ms per 1,000 passages). An index built before
this (AUTOINDEX) still opens and is searched with the index's own defaults.
Milvus Lite's per-query overhead is cut by :mod:`factdebate.patches.milvus_lite` (see there).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factdebate.core.errors import (
    BackendUnavailableError,
    ConfigError,
    FactDebateError,
    IndexDamagedError,
)
from factdebate.core.settings import mask_url
from factdebate.core.state import Evidence
from factdebate.tools import index_lock
from factdebate.tools.base import RetrieverSettings, pooled, run_blocking
from factdebate.tools.embeddings import embedding_dimension, get_embeddings

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from pymilvus import MilvusClient

METRIC = "COSINE"
VECTOR_INDEX = {"index_type": "HNSW", "params": {"M": 16, "efConstruction": 200}}
"""Index built on ``vector`` (HNSW build parameters as in Milvus' documentation defaults)."""
EF_SEARCH = 128
"""Minimum HNSW search breadth; ``ef = max(EF_SEARCH, 2 * k)`` (see the module docstring)."""
OUTPUT_FIELDS = ["title", "text", "url", "page", "sentences", "pool"]
# VARCHAR limits are in bytes; indexing.py validates input against them before writing.
MAX_ID_BYTES = 1024
MAX_TITLE_BYTES = 4096
MAX_URL_BYTES = 4096
MAX_TEXT_BYTES = 65535
MAX_POOL_BYTES = 256
_INDEX_REMEDY = "run: factdebate index CORPUS.jsonl"


def is_local_uri(uri: str) -> bool:
    """True for a Milvus Lite path, False for a server URI (``http(s)://``, ``tcp://``...)."""
    return "://" not in uri


_lite_users: dict[str, int] = {}
"""Open clients per Milvus Lite folder in this process. Milvus Lite 3 serves a folder from a
thread inside the first process that opens it and holds the folder's LOCK until that server is
released; ``MilvusClient.close()`` does not release it, so :func:`disconnect` does on last close."""
_lite_lock = threading.Lock()


LOOPBACK_GRPC_OPTIONS = {"grpc.keepalive_time_ms": 300_000}
"""pymilvus pings every 10 s; Milvus Lite's gRPC server (how ``eval --workers`` shares a Lite folder,
``evaluation/workers.py``) keeps gRPC's default minimum ping interval of 5 min and answers faster
pings with GOAWAY "too_many_pings" (logged by every worker, then the channel reconnects). On
loopback a dead peer shows up as a refused connection anyway, so ping no more often than allowed."""


def _is_loopback(uri: str) -> bool:
    host = uri.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1")


def connect(uri: str, *, create: bool = False) -> MilvusClient:
    """Open a ``MilvusClient`` on ``uri`` and translate the failures users can fix.

    Args:
        uri: Milvus Lite path (``*.db``) or server URI.
        create: Allow creating a new Milvus Lite database (index builds only); retrievers never
            create one, so a wrong path is reported instead of silently opening an empty index.

    Returns:
        A connected client; give it back with :func:`disconnect`.

    Raises:
        BackendUnavailableError: No database at a Lite path, the Lite database is locked by
            another process, or the server cannot be reached.
        ConfigError: A local path that does not end in ``.db``.
    """
    from pymilvus import MilvusClient

    if not is_local_uri(uri):
        options = LOOPBACK_GRPC_OPTIONS if _is_loopback(uri) else {}
        try:
            with quiet_milvus_logs():
                return MilvusClient(uri=uri, token=os.environ.get("MILVUS_TOKEN", ""),
                                    grpc_options=options)
        except Exception as exc:
            raise BackendUnavailableError(
                f"cannot connect to Milvus at {mask_url(uri)} ({type(exc).__name__}: "
                f"{mask_url(_first_line(exc))})",
                "start the server, check the URI, or set MILVUS_TOKEN",
            ) from exc
    path = Path(uri).expanduser().absolute()
    if not path.name.endswith(".db"):
        raise ConfigError(
            f"Milvus Lite path {path} must end in '.db'",
            "use e.g. <index_dir>/milvus.db or an http://host:19530 server URI",
        )
    if not create and not path.exists():
        raise BackendUnavailableError(f"no vector index at {path}", _INDEX_REMEDY)
    path.parent.mkdir(parents=True, exist_ok=True)
    from factdebate import patches

    patches.enabled("milvus_lite")
    with _lite_lock:
        try:
            with quiet_milvus_logs():
                client = MilvusClient(uri=str(path), grpc_options=LOOPBACK_GRPC_OPTIONS)
        except Exception as exc:  # pymilvus wraps every Lite failure in one generic message
            raise _lite_open_error(path, exc) from exc
        _lite_users[str(path)] = _lite_users.get(str(path), 0) + 1
    return client


def disconnect(client: MilvusClient, uri: str) -> None:
    """Close ``client``; for Milvus Lite, release the folder when its last client closes."""
    client.close()
    if not is_local_uri(uri):
        return
    key = str(Path(uri).expanduser().absolute())
    with _lite_lock:
        _lite_users[key] = _lite_users.get(key, 1) - 1
        if _lite_users[key] > 0:
            return
        del _lite_users[key]
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(key)


QUIETED_LOGGERS = ("pymilvus.decorators", "pymilvus.client.connection_manager",
                   *(f"milvus_lite.{name}" for name in (
    "server_manager", "adapter.grpc.servicer", "adapter.grpc.server", "engine.collection",
    "engine.recovery", "engine.compaction", "storage.manifest", "storage.wal")))
"""Loggers that print a failed Milvus call's traceback (pymilvus' ``_log_rpc_error``, Milvus
Lite's servicer and server manager: ~50 lines for one unreadable data file; pymilvus' connection
manager: a traceback per reconnect attempt while a server is down). While this module
calls Milvus their records are dropped: every failure is raised as one error naming the index,
the damage and the rebuild command."""


class _Quiet(logging.Filter):
    """Drops every record while :func:`quiet_milvus_logs` blocks are open (any thread)."""

    depth = 0
    lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the record unless a quiet block is open."""
        return _Quiet.depth == 0


_QUIET = _Quiet()
for _name in QUIETED_LOGGERS:
    logging.getLogger(_name).addFilter(_QUIET)


@contextlib.contextmanager
def quiet_milvus_logs() -> Iterator[None]:
    """Mute Milvus' own tracebacks for the calls in the block: the error we raise says it better."""
    with _Quiet.lock:
        _Quiet.depth += 1
    try:
        yield
    finally:
        with _Quiet.lock:
            _Quiet.depth -= 1


def milvus_failure(uri: str, what: str, exc: BaseException) -> BackendUnavailableError:
    """The one-line error of a Milvus server (not Lite) call that failed: names the server.

    A gRPC error (pymilvus passes some through as they are) is named by its status and details:
    its first line is only ``<_InactiveRpcError of RPC that terminated with:``."""
    rpc = _rpc_text(exc)
    cause = f"gRPC {rpc}" if rpc else f"{type(exc).__name__}: {_first_line(exc, 240)}"
    return BackendUnavailableError(
        f"Milvus at {mask_url(uri)} failed to {what} ({mask_url(cause)[:260]})",
        "check that the Milvus server is up and holds the index (FACTDEBATE_MILVUS_URI), "
        "or rebuild it: factdebate index CORPUS.jsonl --milvus-uri URI --replace")


def _rpc_text(exc: BaseException) -> str:
    """``STATUS: details`` of a ``grpc.RpcError`` (``""`` for any other exception)."""
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    if not (callable(code) and callable(details)):
        return ""
    try:
        status = code()
        return f"{getattr(status, 'name', status)}: {details()}"
    except Exception:  # an RpcError without a status (never sent)
        return ""


def _lite_open_error(path: Path, exc: Exception) -> BackendUnavailableError:
    """Why a Milvus Lite folder did not open: held by another process, or damaged."""
    if _lite_folder_locked(path):
        return BackendUnavailableError(
            f"Milvus Lite index {path} is in use by another process (a Milvus Lite folder can be "
            "open in one process at a time)",
            "stop the other process (e.g. a running `langgraph dev` or another factdebate "
            "command) or point --index-dir elsewhere",
        )
    first = (str(exc).splitlines() or [""])[0][:200]
    return IndexDamagedError(
        f"vector index at {path} is damaged: it cannot be opened ({type(exc).__name__}: {first})",
        f"rebuild it: factdebate index CORPUS.jsonl --index-dir {path.parent} --replace "
        "(or point --index-dir elsewhere)",
    )


def _lite_folder_locked(path: Path) -> bool:
    """True if another process holds the folder's LOCK (milvus-lite takes an flock on it)."""
    import fcntl

    try:
        fd = os.open(path / "LOCK", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def create_collection(client: MilvusClient, name: str, dim: int) -> None:
    """Create collection ``name`` (dropping an old one) with a COSINE vector index on ``vector``."""
    from pymilvus import DataType

    if client.has_collection(name):
        client.drop_collection(name)
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_BYTES)
    schema.add_field("title", DataType.VARCHAR, max_length=MAX_TITLE_BYTES)
    schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_BYTES)
    schema.add_field("url", DataType.VARCHAR, max_length=MAX_URL_BYTES)
    schema.add_field("page", DataType.VARCHAR, max_length=MAX_URL_BYTES)
    schema.add_field("sentences", DataType.VARCHAR, max_length=MAX_TEXT_BYTES)
    schema.add_field("pool", DataType.VARCHAR, max_length=MAX_POOL_BYTES)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    index_params = client.prepare_index_params()
    index_params.add_index(field_name="vector", metric_type=METRIC, **VECTOR_INDEX)
    client.create_collection(name, schema=schema, index_params=index_params)


def milvus_row(p: dict[str, Any], vector: list[float]) -> dict[str, Any]:
    """The collection row of passage ``p`` (``page``/``sentences``/``pool`` optional)."""
    import json

    sentences = p.get("sentences") or []
    return {"id": p["id"], "title": p["title"], "text": p["text"], "url": p.get("url") or "",
            "page": p.get("page") or "", "pool": p.get("pool") or "",
            "sentences": json.dumps(sentences, separators=(",", ":")) if sentences else "",
            "vector": vector}


def pool_filter(pool: str) -> str:
    """The filter expression of one pool (quotes and backslashes escaped)."""
    escaped = pool.replace("\\", "\\\\").replace('"', '\\"')
    return f'pool == "{escaped}"'


def index_description() -> dict[str, Any]:
    """What :func:`create_collection` builds, for the index manifest."""
    return {"field": "vector", "metric": METRIC, "index_type": VECTOR_INDEX["index_type"],
            "build_params": dict(VECTOR_INDEX["params"]),
            "search_params": {"ef": f"max({EF_SEARCH}, 2*k)"}}


def vector_index_type(client: MilvusClient, name: str) -> str:
    """Index type on the ``vector`` field of collection ``name`` (``""`` if none or unknown)."""
    try:
        for index_name in client.list_indexes(name):
            info = client.describe_index(name, index_name)
            if info.get("field_name") == "vector":
                return str(info.get("index_type", "")).upper()
    except Exception:  # an old server without describe_index: search with index defaults
        return ""
    return ""


def search_params(index_type: str, k: int) -> dict[str, Any]:
    """Search-time parameters for an index of ``index_type`` asked for ``k`` hits."""
    if index_type == "HNSW":
        return {"ef": max(EF_SEARCH, 2 * k)}
    return {}  # AUTOINDEX (indexes built before HNSW was explicit), FLAT: index defaults


def collection_dimension(client: MilvusClient, name: str) -> int | None:
    """Dimension of the ``vector`` field of collection ``name`` (None if it has none)."""
    for field in client.describe_collection(name).get("fields", []):
        if field.get("name") == "vector":
            return int(field.get("params", {}).get("dim", 0)) or None
    return None


class MilvusRetriever:
    """Cosine search over one Milvus collection; the client is opened once per instance."""

    name = "milvus"

    def __init__(self, uri: str, collection: str, embeddings: Embeddings,
                 expected_rows: int | None = None) -> None:
        """Connect, check that the collection exists, is whole and matches the embedding model.

        Args:
            uri: Milvus Lite path or server URI.
            collection: Collection written by ``factdebate index``.
            embeddings: Model that embeds queries (must be the one the index was built with).
            expected_rows: Passages the index manifest records (None: unknown; then only an
                empty collection counts as damaged - ``factdebate index`` never writes one).

        Raises:
            BackendUnavailableError: No database or no collection, or the database is locked.
            IndexDamagedError: The collection holds no or fewer passages than its manifest says.
            ConfigError: The collection's vectors have another dimension than the model's.
        """
        self.uri = uri
        self.collection = collection
        self._embeddings = embeddings
        self._expected_rows = expected_rows
        self._client: MilvusClient | None = connect(uri)
        try:
            with quiet_milvus_logs():
                self._check_collection()
        except FactDebateError:
            self.close()
            raise
        except Exception as exc:  # pymilvus/grpc: a Lite folder that does not read, a server fault
            self.close()
            if is_local_uri(uri):
                raise self._damaged(f"it cannot be read ({type(exc).__name__}: "
                                    f"{_first_line(exc)})") from exc
            raise milvus_failure(uri, f"open collection {collection!r}", exc) from exc

    def _check_collection(self) -> None:
        client = self._require_client()
        where = f"{mask_url(self.uri)} (collection {self.collection!r})"
        if not client.has_collection(self.collection):
            raise BackendUnavailableError(f"no vector index at {where}", _INDEX_REMEDY)
        stored = collection_dimension(client, self.collection)
        expected = embedding_dimension(self._embeddings)
        if stored != expected:
            raise ConfigError(
                f"vector index at {where} has {stored}-d vectors but the embedding model gives "
                f"{expected}-d",
                "use the --embedding-model the index was built with (see manifest.json) or "
                "rebuild the index",
            )
        try:
            client.load_collection(self.collection)
        except Exception as exc:
            if not is_local_uri(self.uri):
                raise
            raise self._damaged(f"it cannot be loaded ({type(exc).__name__}: "
                                f"{_first_line(exc)})") from exc
        self._check_rows(client)
        self._index_type = vector_index_type(client, self.collection)
        names = {f.get("name") for f in client.describe_collection(self.collection).get("fields", [])}
        self._output = [f for f in OUTPUT_FIELDS if f in names]
        """Fields to read back (a collection written before ``page``/``pool`` existed has fewer)."""

    def _check_rows(self, client: MilvusClient) -> None:
        """A collection whose data files went missing opens fine and answers nothing: refuse it."""
        try:
            rows = int(client.get_collection_stats(self.collection).get("row_count", 0))
        except Exception as exc:
            raise self._damaged(f"its statistics cannot be read ({type(exc).__name__})") from exc
        if rows == 0 or (self._expected_rows is not None and rows != self._expected_rows):
            said = "" if self._expected_rows is None else f", its manifest says {self._expected_rows}"
            raise self._damaged(f"it holds {rows} passages{said}")
        self.passages = rows
        """Passages in the collection (checked against the manifest when it has one)."""

    def _damaged(self, why: str) -> IndexDamagedError:
        return IndexDamagedError(
            f"vector index at {mask_url(self.uri)} (collection {self.collection!r}) is damaged: {why}",
            f"rebuild it: factdebate index CORPUS.jsonl --index-dir "
            f"{Path(self.uri).parent if is_local_uri(self.uri) else '<its folder>'} --replace")

    def _require_client(self) -> MilvusClient:
        if self._client is None:
            raise BackendUnavailableError(f"Milvus retriever on {mask_url(self.uri)} is closed")
        return self._client

    def search_sync(self, query: str, k: int, pool: str = "",
                    vector: list[float] | None = None) -> list[Evidence]:
        """Blocking search: embed ``query`` and return the ``k`` nearest passages, best first.

        Args:
            query: Free text.
            k: Passages wanted.
            pool: Only passages of this knowledge-store pool (``""``: every passage).
            vector: ``query``'s embedding when the caller has it already (:meth:`search`).
        """
        if k < 1 or not query.strip():
            return []
        if pool and "pool" not in self._output:
            raise ConfigError(f"vector index at {mask_url(self.uri)} has no knowledge-store pools",
                              "build it from a store: factdebate index STORE --format averitec-store")
        if vector is None:
            vector = self._embeddings.embed_query(query)
        try:
            with quiet_milvus_logs():
                hits = self._require_client().search(
                    self.collection, data=[vector], limit=k, output_fields=self._output,
                    filter=pool_filter(pool) if pool else "",
                    search_params={"metric_type": METRIC,
                                   "params": search_params(self._index_type, k)},
                )
        except FactDebateError:
            raise
        except Exception as exc:
            if is_local_uri(self.uri):  # Lite reads its files here: unreadable = damaged
                raise self._damaged(f"search failed ({type(exc).__name__}: "
                                    f"{_first_line(exc)})") from exc
            # a server's fault: the retrieve node retries it, then flags it (named, masked)
            failure = milvus_failure(self.uri, "search", exc)
            failure.retryable = True  # type: ignore[attr-defined]  # nodes/llm.is_retryable
            raise failure from exc
        found = [_evidence(hit) for hit in (hits[0] if hits else [])]
        if not found and is_local_uri(self.uri) and not pool:
            # cosine search over a non-empty collection always returns neighbours
            raise self._damaged("a search over its passages returned nothing")
        return found

    async def search(self, query: str, *, k: int, pool: str = "") -> list[Evidence]:
        """Top-``k`` passages for ``query``, best first (runs off the event loop).

        With the bundled MiniLM the query is embedded first on the loop's side
        (``aembed_query``: queued for the encoder thread, no executor thread held while it
        waits), then searched in a worker thread; other models embed inside that thread.
        """
        vector = None
        queued = getattr(self._embeddings, "aembed_queries", None)
        if k >= 1 and query.strip() and queued is not None:
            vector = (await queued([query]))[0]
        return await run_blocking(self.search_sync, query, k, pool, vector)

    def close(self) -> None:
        """Close the client; for Milvus Lite this releases the database for other processes."""
        if self._client is not None:
            client, self._client = self._client, None
            disconnect(client, self.uri)


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an error's message (pymilvus repeats itself inside its own repr)."""
    message = getattr(exc, "message", None)  # MilvusException's own text, without its repr
    text = message if isinstance(message, str) and message else str(exc)
    return (text.splitlines() or [""])[0][:limit]


def _evidence(hit: Any) -> Evidence:
    import json

    entity = hit.get("entity", {})
    sentences = entity.get("sentences") or ""
    return Evidence(  # type: ignore[typeddict-unknown-key]  # the passage contract's keys
        id=str(hit.get("id", entity.get("id", ""))), title=entity.get("title", ""),
        text=entity.get("text", ""), source="milvus", url=entity.get("url", ""),
        score=float(hit.get("distance", 0.0)), page=entity.get("page", ""),
        sentences=json.loads(sentences) if sentences else [], pool=entity.get("pool", ""),
    )


def open_milvus_retriever(settings: RetrieverSettings) -> Any:
    """Registry factory for ``milvus``: the collection at ``settings.milvus_uri`` (one pool of it).

    Raises:
        BackendUnavailableError: The index folder holds a keyword-only index.
    """
    if settings.pool:
        return pooled("milvus", settings)
    _refuse_keyword_only(settings)
    uri = settings.milvus_uri or str(Path(settings.index_dir).expanduser() / "milvus.db")
    retriever = MilvusRetriever(uri, settings.collection, get_embeddings(settings.embedding_model),
                                expected_rows=_manifest_rows(settings, uri))
    index_lock.hold_shared(settings.index_dir)
    return retriever


def _refuse_keyword_only(settings: RetrieverSettings) -> None:
    """A keyword-only index (``factdebate index --keyword-only``) has no vectors: say so."""
    import json

    try:
        manifest = json.loads((Path(settings.index_dir).expanduser() / "manifest.json").read_text(
            encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(manifest, dict) and manifest.get("keyword_only") and is_local_uri(
            settings.milvus_uri or "milvus.db"):
        raise BackendUnavailableError(
            f"index {settings.index_dir} is keyword-only (built with --keyword-only): it has no "
            "vector index", "use --rag-backend keyword, or rebuild it without --keyword-only")


def _manifest_rows(settings: RetrieverSettings, uri: str) -> int | None:
    """Passages the index manifest records for this collection at ``uri`` (None: no manifest)."""
    import json

    root = Path(settings.index_dir).expanduser()
    try:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("collection") != settings.collection:
        return None
    built_at = manifest.get("milvus_uri") or str(root / "milvus.db")
    same = (Path(built_at).expanduser().absolute() == Path(uri).expanduser().absolute()
            if is_local_uri(uri) and is_local_uri(built_at) else built_at == uri)
    rows = manifest.get("passages")
    return rows if same and isinstance(rows, int) else None
