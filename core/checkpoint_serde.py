"""Checkpoints are read as data: a serializer that refuses anything naming code (issue #21).

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
called on the way.

Graph states of this project are ``TypedDict`` classes of plain values (strings, numbers, lists, dicts)
and what LangGraph adds (``Send``, ``Overwrite``): ``tests/integration/test_integrity_checkpoints.py``
decodes what real runs of every framework write and fails if a type outside the allow-list
appears - a new object type kept in a state must be added to :data:`PROJECT_TYPES`.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import json
import sqlite3
import uuid
import zoneinfo
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import ormsgpack
from langchain_core import messages as lc_messages
from langchain_core.documents import Document
from langgraph import types as lg_types
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from factdebate.core.errors import UnsupportedDataError


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


class CheckpointSerializer(JsonPlusSerializer):
    """LangGraph's serializer that reads checkpoints as data (see the module docstring).

    ``source`` names the file (or database) in errors. Writing is LangGraph's own, unchanged.
    LangGraph may widen the allow-list with the types of a graph's state schema
    (``with_msgpack_allowlist``, under ``LANGGRAPH_STRICT_MSGPACK``): the check uses it too.
    """

    def __init__(self, source: str | Path = "a checkpoint") -> None:
        super().__init__(pickle_fallback=False, allowed_json_modules=None,
                         allowed_msgpack_modules=tuple(ALLOWED_TYPES))
        self.source = str(source)

    def _allowed(self) -> frozenset[tuple[str, ...]]:
        extra = self._allowed_msgpack_modules
        if extra is True:  # never set here; a caller that widened it to everything gets none
            extra = None
        return ALLOWED_TYPES | frozenset(tuple(t) for t in extra or ())

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Check ``data`` as data, then decode it strictly; ``UnsupportedDataError`` if foreign."""
        kind, payload = data
        try:
            if kind == "msgpack":
                check_msgpack(payload, self._allowed())
            elif kind == "json":
                check_json(payload, self._allowed())
            elif kind not in _PLAIN_TYPES:
                raise _Foreign(f"{kind!s:.20} data" if kind != "pickle" else "pickle data")
        except _Foreign as exc:
            raise refused(self.source, exc.what) from None
        return super().loads_typed(data)


def refused(source: str, what: str) -> UnsupportedDataError:
    """The one-line error of checkpoint data from ``source`` that names ``what``."""
    return UnsupportedDataError(f"unsupported data in {source} ({what})", REMEDY, source=source)


def final_values(db: Path, thread_id: str) -> dict[str, Any] | None:
    """The last checkpoint's channel values of ``thread_id`` in the SQLite file ``db``, opened
    read-only and read as data (``None`` if the thread has none).

    Raises:
        UnsupportedDataError: The checkpoint holds what this project never writes.
        sqlite3.Error: The file is not a readable checkpoint database.
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    try:
        saved = SqliteSaver(conn, serde=CheckpointSerializer(db)).get_tuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    finally:
        conn.close()
    return None if saved is None else dict((saved.checkpoint or {}).get("channel_values") or {})
