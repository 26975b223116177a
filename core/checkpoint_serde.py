"""Checkpoints are read as data: a serializer that refuses anything naming code.

LangGraph's default checkpoint serializer (``JsonPlusSerializer``, langgraph-checkpoint 4.x) stores
objects as msgpack extension values naming ``module`` and ``name`` and, when reading, imports
``module`` and *calls* ``name`` with the stored arguments, for any name (a warning is all,
unless ``LANGGRAPH_STRICT_MSGPACK`` is set; even then a refused value silently turns into its raw
arguments). A checkpoint file is not always this process's own - a run folder sent by someone
else (``eval --resume``, ``compare``, the reports), the evaluation browser's
``FACTDEBATE_RUNS_DIR``, a ``--checkpoint-db`` anyone could write - and a value naming
``os.system`` there ran a command in the reader.

:class:`CheckpointSerializer` writes exactly what LangGraph's does and reads in two steps:

1. every value is checked first, without constructing anything: each msgpack extension must name a
   type of :data:`ALLOWED_TYPES` (this project's :data:`PROJECT_TYPES`, LangChain's message
   classes and ``Document``, LangGraph's ``Send``/``Overwrite``/``Interrupt``/``Command``, and
   standard value types: ``datetime``, ``UUID``, ``Decimal``, sets, ``deque``, ``ZoneInfo``), a
   method call must be ``datetime.fromisoformat``; a legacy ``json`` value may only hold LangChain
   constructors of those types; ``pickle`` and unknown encodings are refused;
2. then LangGraph's own decoder runs in strict mode (``allowed_msgpack_modules``: those types and
   LangGraph's own safe list), a second fence.

Anything else raises :class:`~factdebate.core.errors.UnsupportedDataError`, "unsupported data in
FILE (...)": one line on the CLI (exit 3), a readable 4xx from the web API. Nothing is imported or
called on the way. The same error names every other way a crafted file can fail to be a checkpoint,
so none of them surfaces as a library's exception: a value an allowed type refuses to be built from
(``Decimal("x")``, a LangChain message with fields of the wrong type), JSON nested deeper than
Python recurses, a checkpoint that decodes to something other than LangGraph's checkpoint mapping
(bytes, a list, a ``Decimal``, a ``deque``; ``channel_values`` that are not a mapping), metadata that
is not a JSON object, and a SQLite file without LangGraph's tables or columns (an empty file, a
database of something else). Savers get those checks from :func:`reading_as_data`; readers that
serve checkpoints to others pass ``max_bytes`` and are refused a larger value before it is decoded.
:func:`final_values`, what the reports and the evaluation browser read, also checks the state keys
they use against the graphs' own types (``DebateState`` in ``core/state.py``) and that they are
JSON data: a turn that is a number or ``turns`` that are bytes are refused, never a
crash in the report or the web page.

Graph states of this project are ``TypedDict`` classes of plain values (strings, numbers, lists, dicts)
and what LangGraph adds (``Send``, ``Overwrite``): ``tests/integration/test_integrity_checkpoints.py``
decodes what real runs of every framework write and fails if a type outside the allow-list
appears - a new object type kept in a state must be added to :data:`PROJECT_TYPES`.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import functools
import json
import sqlite3
import types
import typing
import uuid
import zoneinfo
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ormsgpack
from langchain_core import messages as lc_messages
from langchain_core.documents import Document
from langgraph import types as lg_types
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from typing_extensions import is_typeddict

from factdebate.core.errors import FactDebateError, UnsupportedDataError


def _key(cls: type) -> tuple[str, str]:
    """``(module, class)`` as LangGraph's serializer writes it for an instance of ``cls``."""
    return cls.__module__, cls.__name__


PROJECT_TYPES: frozenset[tuple[str, str]] = frozenset()
"""``(module, class)`` of this project's own classes that graph states hold as objects. None
today (states hold plain values); add a class here when a state starts keeping one."""

LANGCHAIN_TYPES: frozenset[tuple[str, str]] = frozenset(
    _key(getattr(lc_messages, name)) for name in (
        "BaseMessage", "BaseMessageChunk", "HumanMessage", "HumanMessageChunk", "AIMessage",
        "AIMessageChunk", "SystemMessage", "SystemMessageChunk", "ChatMessage", "ChatMessageChunk",
        "ToolMessage", "ToolMessageChunk", "FunctionMessage", "FunctionMessageChunk",
        "RemoveMessage") if hasattr(lc_messages, name)) | {_key(Document)}
"""LangChain's message classes and ``Document``: what message-holding states store."""

LANGGRAPH_TYPES: frozenset[tuple[str, str]] = frozenset(
    _key(getattr(lg_types, name)) for name in ("Send", "Overwrite", "Interrupt", "Command", "TimeoutPolicy")
    if hasattr(lg_types, name))
"""What LangGraph itself writes into checkpoints (``Send`` packets, ``Overwrite`` updates ...)."""

DATA_TYPES: frozenset[tuple[str, str]] = frozenset(_key(cls) for cls in (
    datetime.datetime, datetime.date, datetime.time, datetime.timedelta, datetime.timezone,
    uuid.UUID, decimal.Decimal, set, frozenset, collections.deque, zoneinfo.ZoneInfo))
"""Value types of the standard library, constructed from their own data only."""

ALLOWED_TYPES: frozenset[tuple[str, ...]] = PROJECT_TYPES | LANGCHAIN_TYPES | LANGGRAPH_TYPES | \
    DATA_TYPES
ALLOWED_METHODS: frozenset[tuple[str, str, str]] = frozenset(
    {("datetime", "datetime", "fromisoformat")})
"""The one method call LangGraph's serializer writes (a ``datetime`` from its ISO text)."""

# langgraph.checkpoint.serde.jsonplus's extension codes
_CONSTRUCTORS = {0, 1, 2, 4, 5}  # single arg, positional, keywords, pydantic v1, pydantic v2
_METHOD, _NUMPY, _DELTA = 3, 6, 7
_PLAIN_TYPES = ("null", "bytes", "bytearray")
_OPTION = ormsgpack.OPT_NON_STR_KEYS

REMEDY = ("factdebate never writes that, and nothing in it was run: open only checkpoints you "
          "trust, or start a new run (another --checkpoint-db or --out)")


class _Foreign(Exception):
    """A value the allow-list refuses (``what`` names it); raised only inside this module."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def _named(payload: Any, size: int) -> tuple[str, ...]:
    if not isinstance(payload, (list, tuple)) or len(payload) < size:
        raise _Foreign("a malformed extension value")
    names = tuple(payload[i] for i in range(size))
    if not all(isinstance(n, str) for n in names):
        raise _Foreign("a malformed extension value")
    return names


def check_msgpack(data: bytes, allowed: Iterable[tuple[str, ...]] = ALLOWED_TYPES) -> None:
    """Raise :class:`_Foreign` unless every extension value in ``data`` is allowed.

    Decodes without constructing anything: the hook returns ``None`` for every extension after
    checking its name (and, recursively, everything inside it). ormsgpack replaces an exception
    raised in a hook with its own ``ValueError``, so the first refusal is kept aside.
    """
    allowed = frozenset(allowed)
    refused: list[str] = []

    def hook(code: int, payload: bytes) -> None:
        if refused:
            raise _Foreign(refused[0])
        try:
            inner = ormsgpack.unpackb(payload, ext_hook=hook, option=_OPTION)
            if code in _CONSTRUCTORS:
                module, name = _named(inner, 2)
                if (module, name) not in allowed:
                    raise _Foreign(f"a value naming {module}.{name}")
            elif code == _METHOD:
                module, name = _named(inner, 2)
                method = inner[3] if len(inner) > 3 else None
                if (module, name, method) not in ALLOWED_METHODS:
                    raise _Foreign(f"a value naming {module}.{name}.{method}")
            elif code == _NUMPY:
                if not (isinstance(inner, (list, tuple)) and len(inner) == 4
                        and isinstance(inner[0], str) and "O" not in inner[0]):
                    raise _Foreign("a numpy array of objects")
            elif code != _DELTA:
                raise _Foreign(f"msgpack extension type {code}")
        except _Foreign as exc:
            if not refused:
                refused.append(exc.what)
            raise
        except (ValueError, TypeError) as exc:  # ormsgpack's wrapper of a nested refusal
            if not refused:
                refused.append(f"unreadable data ({type(exc).__name__})")
            raise _Foreign(refused[0]) from None

    try:
        ormsgpack.unpackb(data, ext_hook=hook, option=_OPTION)
    except (ValueError, TypeError) as exc:  # MsgpackDecodeError is a ValueError
        if refused:
            raise _Foreign(refused[0]) from None
        raise _Foreign(f"unreadable data ({type(exc).__name__}: {str(exc)[:80]})") from None


def check_json(data: bytes, allowed: Iterable[tuple[str, ...]] = ALLOWED_TYPES) -> None:
    """Raise :class:`_Foreign` unless the LangChain constructors in legacy ``json`` data are allowed.

    ``lc: 2`` constructors name ``module`` and class: allowed as in msgpack. ``lc: 1`` ones name
    LangChain's serializable classes by namespace: only the message and document classes of the
    allow-list, by class name. Secrets (revived from the environment) and anything else are refused.
    """
    allowed = frozenset(allowed)
    lc_names = {t[-1] for t in allowed if t[0].startswith("langchain_core.")}

    def hook(obj: dict[str, Any]) -> dict[str, Any]:
        if "lc" not in obj or "type" not in obj:
            return obj
        kind, ids = obj.get("type"), obj.get("id")
        if kind == "constructor" and isinstance(ids, list) and ids and \
                all(isinstance(i, str) for i in ids):
            if obj.get("lc") == 2 and (".".join(ids[:-1]), ids[-1]) in allowed:
                return obj
            if obj.get("lc") == 1 and ids[0] in ("langchain", "langchain_core") and \
                    ids[-1] in lc_names:
                return obj
            raise _Foreign(f"a value naming {'.'.join(ids)}")
        raise _Foreign(f"a LangChain {kind!s:.20} value")

    try:
        json.loads(data, object_hook=hook)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise _Foreign(f"unreadable data ({type(exc).__name__})") from None
    except RecursionError:
        raise _Foreign("JSON nested too deeply") from None


class CheckpointSerializer(JsonPlusSerializer):
    """LangGraph's serializer that reads checkpoints as data (see the module docstring).

    ``source`` names the file (or database) in errors. Writing is LangGraph's own, unchanged.
    LangGraph may widen the allow-list with the types of a graph's state schema
    (``with_msgpack_allowlist``, under ``LANGGRAPH_STRICT_MSGPACK``): the check uses it too.
    ``max_bytes`` (None: no limit) refuses a stored value larger than that before decoding it.
    """

    def __init__(self, source: str | Path = "a checkpoint", *, max_bytes: int | None = None) -> None:
        super().__init__(pickle_fallback=False, allowed_json_modules=None,
                         allowed_msgpack_modules=tuple(ALLOWED_TYPES))
        self.source = str(source)
        self.max_bytes = max_bytes

    def _allowed(self) -> frozenset[tuple[str, ...]]:
        extra = self._allowed_msgpack_modules
        if extra is True:  # never set here; a caller that widened it to everything gets none
            extra = None
        return ALLOWED_TYPES | frozenset(tuple(t) for t in extra or ())

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Check ``data`` as data, then decode it strictly; ``UnsupportedDataError`` if foreign."""
        kind, payload = data
        if self.max_bytes is not None and payload is not None and len(payload) > self.max_bytes:
            raise TooLargeError(self.source, len(payload), self.max_bytes)
        try:
            if kind == "msgpack":
                check_msgpack(payload, self._allowed())
            elif kind == "json":
                check_json(payload, self._allowed())
            elif kind not in _PLAIN_TYPES:
                raise _Foreign(f"{kind!s:.20} data" if kind != "pickle" else "pickle data")
        except _Foreign as exc:
            raise refused(self.source, exc.what) from None
        try:
            return super().loads_typed(data)
        except UnsupportedDataError:
            raise
        except Exception as exc:  # noqa: BLE001 - an allowed type refused its stored arguments
            raise refused(self.source, f"a value that does not load ({type(exc).__name__})") \
                from None


class TooLargeError(UnsupportedDataError):
    """A stored value larger than the reader's ``max_bytes`` (refused before it is decoded)."""

    def __init__(self, source: str, size: int, limit: int) -> None:
        self.size, self.limit = size, limit
        super().__init__(f"a value of {size:,} bytes in {source} is larger than the {limit:,} "
                         "bytes this reader accepts", "raise the limit or read the file locally",
                         source=source)


def refused(source: str, what: str) -> UnsupportedDataError:
    """The one-line error of checkpoint data from ``source`` that names ``what``."""
    return UnsupportedDataError(f"unsupported data in {source} ({what})", REMEDY, source=source)


def checkpoint_problem(saved: Any) -> str:
    """What makes a saver's ``CheckpointTuple`` something LangGraph never writes, or ``""``.

    LangGraph's readers index the checkpoint and its metadata as mappings: a crafted row that
    decodes to bytes, a list or a ``Decimal`` would otherwise fail deep inside them.
    """
    checkpoint = getattr(saved, "checkpoint", None)
    if not isinstance(checkpoint, dict):
        return f"a checkpoint that is {_kind(checkpoint)}, not a mapping"
    for key in ("channel_values", "channel_versions", "versions_seen"):
        value = checkpoint.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            return f"checkpoint {key} that are {_kind(value)}, not a mapping of names"
    if not isinstance(checkpoint.get("id", ""), str):
        return f"a checkpoint id that is {_kind(checkpoint.get('id'))}"
    if not isinstance(getattr(saved, "metadata", None), dict):
        return f"checkpoint metadata that is {_kind(saved.metadata)}, not a mapping"
    if not isinstance(getattr(saved, "pending_writes", None) or [], list):
        return "pending writes that are not a list"
    return ""


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


_NOT_A_CHECKPOINT_DB = ("no such table", "no such column")


@contextmanager
def _as_data(source: str) -> Iterator[None]:
    """Turn the ways a crafted row fails inside LangGraph's saver into "unsupported data in
    ``source``"; storage faults (full disk, a damaged file, a lock) pass unchanged."""
    try:
        yield
    except UnsupportedDataError:
        raise
    except sqlite3.OperationalError as exc:
        if not any(text in str(exc) for text in _NOT_A_CHECKPOINT_DB):
            raise
        raise refused(source, f"no LangGraph checkpoint tables ({exc})") from None
    except RecursionError:
        raise refused(source, "metadata nested too deeply") from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        if isinstance(exc, FactDebateError):
            raise
        raise refused(source, f"a checkpoint that does not load ({type(exc).__name__})") \
            from None


class _ReadsAsData:
    """A LangGraph checkpoint saver whose reads either return a checkpoint or raise
    ``UnsupportedDataError`` (mixed in front of a saver class by :func:`reading_as_data`)."""

    serde: Any

    def _source(self) -> str:
        return str(getattr(self.serde, "source", "a checkpoint"))

    def _checked(self, saved: Any) -> Any:
        if saved is not None:
            problem = checkpoint_problem(saved)
            if problem:
                raise refused(self._source(), problem)
        return saved

    def get_tuple(self, config: Any) -> Any:
        with _as_data(self._source()):
            return self._checked(super().get_tuple(config))  # type: ignore[misc]

    async def aget_tuple(self, config: Any) -> Any:
        with _as_data(self._source()):
            return self._checked(await super().aget_tuple(config))  # type: ignore[misc]

    def list(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        with _as_data(self._source()):
            for saved in super().list(*args, **kwargs):  # type: ignore[misc]
                yield self._checked(saved)

    async def alist(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        with _as_data(self._source()):
            async for saved in super().alist(*args, **kwargs):  # type: ignore[misc]
                yield self._checked(saved)


@functools.cache
def reading_as_data(saver_class: type) -> type:
    """``saver_class`` (a LangGraph checkpoint saver) whose reads are checked as data: every
    crafted-file failure is ``UnsupportedDataError`` naming the file (module docstring)."""
    return type(f"DataReading{saver_class.__name__}", (_ReadsAsData, saver_class), {})


MAX_DEPTH = 64
"""How deeply the values :func:`final_values` returns may nest (states nest a few levels)."""


def _plain_problem(value: Any, where: str, depth: int = 0) -> str:
    """Where ``value`` holds something other than JSON data (str-keyed dicts, lists, strings,
    finite numbers, booleans, null) or nests deeper than :data:`MAX_DEPTH`; ``""`` if nowhere."""
    if depth > MAX_DEPTH:
        return f"{where[:48]}... nested more than {MAX_DEPTH} levels deep"
    if value is None or isinstance(value, str | bool | int):
        return ""
    if isinstance(value, float):
        return "" if value == value and abs(value) != float("inf") else f"{where}: {value}, not a number"
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _plain_problem(item, f"{where}[{i}]", depth + 1)
            if found:
                return found
        return ""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where}: a key of type {_kind(key)}"
            found = _plain_problem(item, f"{where}.{key}", depth + 1)
            if found:
                return found
        return ""
    return f"{where}: {_kind(value)}, not JSON data"


_READ_KEYS = ("claim", "turns", "scores", "label", "answers", "rationale", "round", "stopped_by",
              "flags", "ledger", "verdict_evidence", "retrieved_evidence", "citations", "check")
"""The state keys the readers of :func:`final_values` use (the HTML report, the evaluation
browser); typed as the graphs declare them in ``DebateState`` (``check``: ``check_text``'s)."""


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _type_problem(value: Any, hint: Any, where: str) -> str:
    """Where ``value`` is not of the declared type ``hint`` (a ``TypedDict``'s present keys, lists,
    str-keyed dicts, unions, scalars; other hints accept anything), or ``""``."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return ""
    if origin in (typing.Union, types.UnionType):
        if any(not _type_problem(value, arg, where) for arg in typing.get_args(hint)):
            return ""
        return f"{where}: {_kind(value)}, not {hint}"
    if hint is type(None):
        return "" if value is None else f"{where}: {_kind(value)}, not null"
    if hint in (str, int, float, bool):
        number = hint in (int, float) and isinstance(value, int) and not isinstance(value, bool)
        ok = isinstance(value, hint) and (hint is bool or not isinstance(value, bool)) or number
        return "" if ok else f"{where}: {_kind(value)}, not {hint.__name__}"
    if origin is list or is_typeddict(hint) or origin is dict:
        container = list if origin is list else dict
        if not isinstance(value, container):
            return f"{where}: {_kind(value)}, not {container.__name__}"
        if isinstance(value, list):  # origin is list (the check above)
            pairs = [(f"{where}[{i}]", item, typing.get_args(hint)[0]) for i, item in enumerate(value)]
        elif origin is dict:
            pairs = [(f"{where}.{k}", item, typing.get_args(hint)[1]) for k, item in value.items()]
        else:
            fields = _hints(hint)
            pairs = [(f"{where}.{k}", item, fields[k]) for k, item in value.items() if k in fields]
        for at, item, item_hint in pairs:
            found = _type_problem(item, item_hint, at)
            if found:
                return found
    return ""


def state_problem(values: dict[str, Any]) -> str:
    """What makes the channel values readers use something the graphs never write, or ``""``:
    anything that is not JSON data (a ``Decimal``, bytes, a ``deque``, nesting deeper than
    :data:`MAX_DEPTH`), or a value of another type than ``DebateState`` declares for its key (a
    turn that is a number, ``turns`` that are a string)."""
    from factdebate.core.state import DebateState

    read = {k: values[k] for k in _READ_KEYS if k in values}
    fields = {**_hints(DebateState), "check": dict[str, Any]}
    return _plain_problem(read, "state") or _type_problem(read, dict[str, Any], "state") or next(
        (found for k, v in read.items() if (found := _type_problem(v, fields[k], f"state.{k}"))),
        "")


_CHECKPOINT_COLUMNS = {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type",
                       "checkpoint", "metadata"}
_WRITES_COLUMNS = {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel",
                   "type", "value"}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def checkpoint_tables_problem(conn: sqlite3.Connection) -> str:
    """What makes the SQLite database on ``conn`` something other than LangGraph's checkpoint
    database (an empty file, a database of something else, tables without LangGraph's columns),
    or ``""``. Reads the schema only: nothing is written."""
    for table, needed in (("checkpoints", _CHECKPOINT_COLUMNS), ("writes", _WRITES_COLUMNS)):
        missing = needed - _columns(conn, table)
        if missing:
            return (f"no LangGraph {table} table" if missing == needed else
                    f"a {table} table without {', '.join(sorted(missing))}")
    return ""


def final_values(db: Path, thread_id: str, *, max_bytes: int | None = None) -> dict[str, Any] | None:
    """The last checkpoint's channel values of ``thread_id`` in the SQLite file ``db``, opened
    read-only and read as data (``None`` if the thread has none). Nothing is written: the tables
    are checked to be LangGraph's instead of set up. ``max_bytes``: see :class:`CheckpointSerializer`.

    Raises:
        UnsupportedDataError: The file holds what this project never writes (a value naming code,
            no checkpoint tables, a row that is not a checkpoint; ``TooLargeError`` for a value
            over ``max_bytes``).
        sqlite3.Error: The file is not a readable SQLite database.
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    try:
        problem = checkpoint_tables_problem(conn)
        if problem:
            raise refused(str(db), problem)
        saver = reading_as_data(SqliteSaver)(conn, serde=CheckpointSerializer(db, max_bytes=max_bytes))
        if "task_path" in _columns(conn, "writes"):
            saver.is_setup = True  # the tables are there: setup() would only try to write
        saved = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    finally:
        conn.close()
    if saved is None:
        return None
    values = dict(saved.checkpoint["channel_values"])
    problem = state_problem(values)
    if problem:
        raise refused(str(db), problem)
    return values
