r"""The one filter that removes every secret the process knows from what it says.

What is secret (:func:`known_secrets`):

* the value of every environment variable named like a credential (``OPENAI_API_KEY``,
  ``TAVILY_API_KEY``, ``LANGSMITH_API_KEY``, ``FACTDEBATE_API_KEYS``, ``HF_TOKEN``,
  ``PGPASSWORD`` ...: a name ending in ``KEY``, ``KEYS``, ``TOKEN``, ``SECRET``, ``PASSWORD``,
  ``PASSWD`` or ``CREDENTIALS``);
* the password (and ``user:password``) of every URL in the environment
  (``FACTDEBATE_BASE_URL=http://op:SECRET@host``, ``FACTDEBATE_MILVUS_URI``, a Postgres URI) and
  of every URL the process was given otherwise (:func:`register_urls`: a ``--base-url``, a
  ``--set milvus_uri=...``; every Context registers its fields), and its secret query parameters;
* what the process registers itself (:func:`register`): the LangGraph server's API keys.

Each is removed in every form it travels in (:func:`forms`): as is, URL-encoded (also wholly or
partly as ``%XX`` escapes, decoded before matching: :func:`_percent_spans`), base64
(standard and URL-safe alphabets, at each of the three byte alignments, so it is found inside
``Basic base64(user:password)`` and any other base64 text that contains it), hex (lower and upper
case) and JSON-escaped; each of these also with invisible characters between its characters
(zero-width spaces and joiners, the word joiner, the byte-order mark, the soft hyphen, raw or as
``\uXXXX`` escapes written out: :data:`INVISIBLE`); a value cut short for display keeps its two
ends around an ellipsis (pydantic's ``input_value='sk-op-12...89ab'``), so a form's start just
before one and its end just after one are removed too. Credentials of URLs the process never saw
are masked as well (:func:`mask_url`, also exported by ``factdebate.core.settings``). Text that
arrives in pieces (a streamed reply) is redacted by :class:`StreamRedactor`, which holds back only
the end of a piece that could be the start of a secret (:func:`held_from`). This module imports
no other ``factdebate`` module.

Where it applies - every way out passes through one of these, and each calls :func:`redact`:

* errors: every ``FactDebateError`` (``factdebate.core.errors``) redacts its text when it is
  made, so the run errors the LangGraph server shows (``__error__``), the CLI's error line and the
  resumable run faults carry none; foreign exceptions are redacted in place
  (:func:`redact_exception`) where they cross to a client: tool errors
  (``factdebate.tools.tool_providers.masked_fault``, the MCP server's replies);
* exceptions a node of any graph raises, foreign ones included, redacted in place before
  LangGraph records them (the checkpointed task error, the run's ``__error__``): the node policy
  ``factdebate.graphs.exported.NODE_ERRORS``;
* LangSmith traces (``factdebate.core.trace_filter``): every run the process posts - inputs,
  outputs, error, metadata, extra, events;
* LangSmith feedback of a reviewer's decision (``factdebate.tools.review_feedback``): its fields
  and the text of a fault in sending it;
* log lines of the server process (``factdebate.server.logs``): every record's message, its
  arguments and its rendered traceback;
* the CLI's consoles (``factdebate.cli.output``);
* everything the LangGraph server sends, once more at its edge (``factdebate.server.egress``: HTTP
  bodies, every stream mode's events, thread state and history, run errors, the web page), and
  every log line it writes (``factdebate.server.logs``: the rendered line, after every formatter).

Secrets shorter than ``MIN_SECRET_CHARS`` are not searched for (they would match ordinary words).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple
from urllib.parse import quote, quote_plus, unquote

MIN_SECRET_CHARS = 6
"""Shortest value treated as a secret."""
MASK = "***"
SECRET_NAME = re.compile(r"(?:^|_)(?:[A-Z]*KEYS?|TOKENS?|SECRETS?|PASSWORD|PASSWD|CREDENTIALS?)$")
"""Environment variable names whose values are secrets (upper case, as the project's are)."""
_URL_CREDENTIALS = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://"
                              r"(?P<user>[^\s/@:?#]*+)(?::(?P<password>[^\s/@?#]*+))?@")
_SECRET_PARAM = re.compile(r"(?i)[?&](?:api[_-]?key|key|token|access[_-]?token|password|"
                           r"passwd|secret|sig|signature)=(?P<value>[^&#\s]+)")
_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*+://)"
                       r"(?P<user>[^\s/@:?#]*+)(?P<password>:[^\s/@?#]*+)?@")
"""A URL's user info. Linear in the text: a scheme starts only where no scheme character precedes
it and the quantifiers are possessive, so a long word is scanned once (a 2 MB one-word tool
argument took minutes with a backtracking scheme scan)."""
_SECRET_PARAM_MASK = re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access[_-]?token|password|"
                                r"passwd|secret|sig|signature)=)[^&#\s]*")


def mask_url(text: str) -> str:
    """``text`` with credentials in URLs hidden.

    ``http://user:pass@host`` -> ``http://user:***@host``; ``http://token@host`` ->
    ``http://***@host``; secret-looking query parameters (``?api_key=...``, ``token``,
    ``password`` ...) -> ``=***``. Works on any string, e.g. a command line that contains a URL.
    """
    def userinfo(m: re.Match[str]) -> str:
        if m.group("password") is not None:
            return f"{m.group('scheme')}{m.group('user')}:***@"
        return f"{m.group('scheme')}***@"

    if "://" in text:  # plain substring tests first: a long text without URLs is scanned once
        text = _USERINFO.sub(userinfo, text)
    if "=" in text and ("?" in text or "&" in text):
        text = _SECRET_PARAM_MASK.sub(r"\1***", text)
    return text


_registered: set[str] = set()
_lock = threading.Lock()


def url_secrets(text: str) -> set[str]:
    """Passwords, ``user:password`` pairs, tokens in user info and secret query parameters of the
    URLs in ``text`` (raw and URL-decoded)."""
    found: set[str] = set()
    if "://" in text:
        for m in _URL_CREDENTIALS.finditer(text):
            user, password = m.group("user"), m.group("password")
            if password is None:
                found.add(user)  # http://token@host
            else:
                found.update({password, f"{user}:{password}",
                              f"{unquote(user)}:{unquote(password)}"})
    if "=" in text:
        found.update(m.group("value") for m in _SECRET_PARAM.finditer(text))
    found = {unquote(s) for s in found} | found
    # a URL already masked (``http://op:***@host``, e.g. quoted in a test id or a log line) holds
    # no secret: neither its mask nor ``user:***`` is one
    return {s for s in found if s.rpartition(":")[2].strip("*")}


def register(*values: str) -> None:
    """Add secrets the environment does not hold (e.g. the server's API keys)."""
    with _lock:
        _registered.update(v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_CHARS)


def register_urls(values: Iterable[Any]) -> None:
    """Add the credentials of the URLs among ``values`` (non-strings are skipped)."""
    for value in values:
        if isinstance(value, str) and ("://" in value or "=" in value):
            register(*url_secrets(value))


def environment_secrets(env: Mapping[str, str]) -> set[str]:
    """Secrets held by ``env``: credential-named values and URL credentials."""
    found: set[str] = set()
    for name, value in env.items():
        if SECRET_NAME.search(name):
            found.add(value)
            found.update(part.partition(":")[2] if name.endswith("KEYS") else part
                         for part in value.split(","))
        if "://" in value or "=" in value:
            found.update(url_secrets(value))
    return {s.strip() for s in found if len(s.strip()) >= MIN_SECRET_CHARS}


_known: tuple[Any, frozenset[str], frozenset[str]] | None = None
"""The last answer of :func:`known_secrets`: (environment snapshot, registrations, secrets)."""


def _environment_snapshot() -> Any:
    """What :func:`known_secrets` compares to see whether ``os.environ`` changed.

    On CPython ``os.environ`` keeps its variables in a dict of bytes (``os.environ._data``, there
    since Python 3.2; ``os.environb`` reads the same dict), which every change made through
    ``os.environ`` or ``os.environb`` goes into: a copy of that dict compares to it in C, ~2 us
    for 100 variables, where reading ``os.environ.items()`` decodes every name and value in
    Python (~40 us, and it ran for every log record and every piece of a filtered reply).
    Elsewhere, the decoded items."""
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else tuple(os.environ.items())


def known_secrets() -> frozenset[str]:
    """Every secret the process knows now (environment + registered).

    Called for every log record and every filtered reply, so the answer is kept until the
    environment (compared in full, each call: :func:`_environment_snapshot`) or the registered
    secrets change: a secret set in ``os.environ`` at any time is known from the next call on."""
    global _known
    environment = _environment_snapshot()
    with _lock:
        kept = _known
        if kept is not None and kept[1] == _registered and kept[0] == environment:
            return kept[2]
        registered = frozenset(_registered)
    # copied before the variables are read: a change in between makes the next call read again
    kept_environment = dict(environment) if isinstance(environment, dict) else environment
    secrets = frozenset(environment_secrets(dict(os.environ.items())) | registered)
    with _lock:
        _known = (kept_environment, registered, secrets)
    return secrets


def _base64_cores(data: bytes) -> set[str]:
    """The base64 characters determined by ``data`` alone, at each byte alignment."""
    cores = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + data).decode()
        start, end = -(-8 * pad // 6), (8 * pad + 8 * len(data)) // 6
        core = encoded[start:end]
        if len(core) >= MIN_SECRET_CHARS:
            cores.update({core, core.replace("+", "-").replace("/", "_")})
    return cores


def forms(secret: str) -> set[str]:
    """``secret`` as it may travel: as is, URL-encoded (the usual reserved characters, or every
    byte as ``%XX`` in either case), inside base64 text, hex, JSON-escaped."""
    data = secret.encode("utf-8")
    plain = {secret, quote(secret, safe=""), quote_plus(secret), quote(secret),
             "".join(f"%{b:02X}" for b in data), "".join(f"%{b:02x}" for b in data),
             data.hex(), data.hex().upper()} | _base64_cores(data)
    escaped = {json.dumps(f, ensure_ascii=ascii)[1:-1] for f in plain for ascii in (True, False)}
    return plain | escaped


INVISIBLE = re.compile(r"[\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e]"
                       r"|\\u(?:200[bcdBCD]|2060|[fF][eE][fF][fF]|00[aA][dD]|180[eE])")
"""Characters a text may hide between a secret's characters, raw or as JSON/``repr`` escapes."""


class Forms(NamedTuple):
    """The forms of a set of secrets as the searches use them (:func:`known_forms`)."""

    pattern: re.Pattern[str] | None
    """Every form of every secret, longest first."""
    by_first: dict[str, tuple[str, ...]]
    """The forms by their first character."""
    longest: int
    heads: frozenset[str]
    """Every start of a form of at least ``MIN_FRAGMENT_CHARS`` characters (a cut-off form)."""
    tails: frozenset[str]
    """Every end of a form of at least ``MIN_FRAGMENT_CHARS`` characters."""
    last: frozenset[str]
    """The last character of every form."""


MIN_FRAGMENT_CHARS = 6
"""Shortest part of a secret removed beside an ellipsis (``sk-op-12...89ab``)."""
ELLIPSIS = re.compile(r"\.\.\.|\u2026")
"""Where a text was cut short: pydantic's, ``reprlib``'s and rich's abbreviations of a long value
keep its start and its end around one of these."""


@functools.lru_cache(maxsize=8)
def _compiled(secrets: frozenset[str]) -> Forms:
    """The forms of ``secrets`` as the searches use them."""
    every = {form for secret in secrets for form in forms(secret) if form}
    if not every:
        return Forms(None, {}, 0, frozenset(), frozenset(), frozenset())
    by_first: dict[str, set[str]] = {}
    for form in every:
        by_first.setdefault(form[0], set()).add(form)
    pattern = re.compile("|".join(re.escape(f) for f in sorted(every, key=len, reverse=True)))
    heads = frozenset(f[:k] for f in every for k in range(MIN_FRAGMENT_CHARS, len(f)))
    tails = frozenset(f[-k:] for f in every for k in range(MIN_FRAGMENT_CHARS, len(f)))
    return Forms(pattern, {c: tuple(sorted(fs, key=len)) for c, fs in by_first.items()},
                  max(map(len, every)), heads, tails, frozenset(f[-1] for f in every))


def _head_before(text: str, at: int, known: Forms) -> int:
    """How many characters before ``at`` are the start of a form (0: none of at least
    ``MIN_FRAGMENT_CHARS``)."""
    return next((k for k in range(min(known.longest, at), MIN_FRAGMENT_CHARS - 1, -1)
                 if text[at - k] in known.by_first and text[at - k:at] in known.heads), 0)


def known_forms() -> Forms:
    """The forms of every secret the process knows now (to reuse over many texts at once)."""
    return _compiled(known_secrets())


def _fragment_spans(text: str, known: Forms) -> list[tuple[int, int]]:
    """The start of a form just before an ellipsis and the end of one just after it: a long value
    cut short for display (``input_value='sk-op-12...89ab'``) shows a secret's two ends."""
    spans = []
    for m in ELLIPSIS.finditer(text):
        a, b = m.span()
        head = _head_before(text, a, known)
        tail = next((k for k in range(min(known.longest, len(text) - b), MIN_FRAGMENT_CHARS - 1,
                                      -1) if text[b + k - 1] in known.last
                     and text[b:b + k] in known.tails), 0)
        if head:
            spans.append((a - head, a))
        if tail:
            spans.append((b, b + tail))
    return spans


_HIDING = ("\\u", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e")


def _may_hide(text: str) -> bool:
    """Whether ``text`` holds an :data:`INVISIBLE` character or escape at all (substring tests,
    much faster than the pattern on a long text)."""
    return any(h in text for h in _HIDING)


def _visible(text: str) -> tuple[str, list[int] | None]:
    """``text`` without :data:`INVISIBLE` characters, and where each of its characters was in
    ``text`` (None: there were none)."""
    if not _may_hide(text) or INVISIBLE.search(text) is None:
        return text, None
    where: list[int] = []
    pos = 0
    for m in INVISIBLE.finditer(text):
        where.extend(range(pos, m.start()))
        pos = m.end()
    where.extend(range(pos, len(text)))
    return "".join(text[i] for i in where), where


_PERCENT = re.compile(r"%([0-7][0-9A-Fa-f])")
"""A percent-escape of an ASCII character (the alphabet of API keys and tokens)."""


def _percent_spans(text: str, known: Forms) -> list[tuple[int, int]]:
    """Spans of ``text`` that hold a form of a secret once their ``%XX`` escapes of ASCII
    characters are decoded: a key encoded in part (``sk-%61bc...``) or wholly, mixed case."""
    if known.pattern is None or "%" not in text or _PERCENT.search(text) is None:
        return []
    decoded: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in _PERCENT.finditer(text):
        for i in range(pos, m.start()):
            decoded.append(text[i])
            starts.append(i)
            ends.append(i + 1)
        decoded.append(chr(int(m.group(1), 16)))
        starts.append(m.start())
        ends.append(m.end())
        pos = m.end()
    for i in range(pos, len(text)):
        decoded.append(text[i])
        starts.append(i)
        ends.append(i + 1)
    plain = "".join(decoded)
    return [(starts[m.start()], ends[m.end() - 1]) for m in known.pattern.finditer(plain)
            if m.end() > m.start()]


def secret_spans(text: str, known: Forms | None = None) -> list[tuple[int, int]]:
    """Where ``text`` holds a form of a known secret (invisible characters inside it included)
    or a cut-off form's start or end beside an ellipsis; sorted, not overlapping. ``known``: the
    forms to look for (default: those of :func:`known_secrets`)."""
    known = known or _compiled(known_secrets())
    if known.pattern is None or not text:
        return []
    visible, where = _visible(text)
    if where is None:
        spans = [m.span() for m in known.pattern.finditer(text)]
    else:
        spans = [(where[m.start()], where[m.end() - 1] + 1)
                 for m in known.pattern.finditer(visible) if m.end() > m.start()]
    if "..." in text or "\u2026" in text:
        spans.extend(_fragment_spans(text, known))
    spans.extend(_percent_spans(text, known))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    out, pos = [], 0
    for start, end in spans:
        out.append(text[pos:start])
        out.append(MASK)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def redact(text: str, known: Forms | None = None) -> str:
    """``text`` without any secret the process knows (in any of its :func:`forms`) and with the
    credentials of any URL masked. ``known``: as for :func:`secret_spans`."""
    if not isinstance(text, str) or not text:
        return text
    masked = mask_url(text)  # first: a URL keeps its user name (``http://op:***@host``)
    spans = secret_spans(masked, known)
    return _masked(masked, spans) if spans else masked


MIN_LOG_PREFIX_CHARS = 8
"""Shortest start of a secret's form :func:`redact_cut_off` removes wherever it stands."""


def _prefix_spans(text: str, known: Forms, shortest: int) -> list[tuple[int, int]]:
    """Every run of at least ``shortest`` characters of ``text`` (invisible characters inside it
    skipped) that is the start of a form of a known secret, cut off before the form ends."""
    visible, where = _visible(text)
    spans: list[tuple[int, int]] = []
    p, n = 0, len(visible)
    while p <= n - shortest:
        if visible[p] not in known.by_first or visible[p:p + shortest] not in known.heads:
            p += 1
            continue
        k = next(k for k in range(min(known.longest, n - p), shortest - 1, -1)
                 if visible[p:p + k] in known.heads)
        start, end = (where[p], where[p + k - 1] + 1) if where is not None else (p, p + k)
        spans.append((start, end))
        p += k
    return spans


def redact_cut_off(text: str, known: Forms | None = None) -> str:
    """:func:`redact`, and also every start of a secret's form of at least
    :data:`MIN_LOG_PREFIX_CHARS` characters wherever it stands: for finished log lines, where a
    streamed reply is logged piece by piece as it grows (langgraph-api's debug log of a run's
    ``messages/partial`` events), so a line may hold a secret's first characters without its end.
    """
    if not isinstance(text, str) or not text:
        return text
    known = known or _compiled(known_secrets())
    masked = redact(text, known)
    if known.pattern is None:
        return masked
    spans = _prefix_spans(masked, known, MIN_LOG_PREFIX_CHARS)
    return _masked(masked, spans) if spans else masked


_OPEN_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@?#]*\Z"
                       r"|(?i:[?&](?:api[_-]?key|key|token|access[_-]?token|password|passwd|"
                       r"secret|sig|signature)=[^&#\s]*\Z)")
"""The end of a text that may be a URL's user info or a secret query parameter still arriving."""
_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_ELLIPSIS_AT_END = re.compile(r"\.\.\.|\u2026|\.\.?\Z")
HOLD_LIMIT = 4096
"""Most characters :func:`held_from` holds back (an unknown URL's user info longer than this is
not waited for)."""


def held_from(text: str, known: Forms | None = None) -> int:
    """Where the end of ``text`` could begin a secret that the text's next piece completes:
    ``len(text)`` when nothing needs holding back.

    Held: the longest end of ``text`` (invisible characters skipped) that is the start of a form
    of a known secret, the open user info or secret query parameter of a URL (:func:`mask_url`
    masks it once complete), and the text around an ellipsis near the end (a cut-off secret's end
    may follow it), at most :data:`HOLD_LIMIT` characters.
    """
    n = len(text)
    floor = max(0, n - HOLD_LIMIT)
    held = n
    url = _OPEN_URL.search(text, floor)
    if url is not None:
        held = url.start()
    known = known or _compiled(known_secrets())
    by_first, longest = known.by_first, known.longest
    if not by_first:
        return held
    for m in _ELLIPSIS_AT_END.finditer(text, max(floor, n - longest - 3)):
        # a cut-off form's start before an ellipsis (one arriving too), its end after one
        head = _head_before(text, m.start(), known)
        if head or m.group() in ("...", "\u2026"):
            held = min(held, m.start() - head)
            break
    tail_from = max(floor, n - 8 * longest)
    visible, where = _visible(text[tail_from:])
    partial = _PARTIAL_ESCAPE.search(visible)  # an invisible character's escape, still arriving
    if partial is not None and partial.start() > 0:
        visible = visible[:partial.start()]
    for p in range(max(0, len(visible) - longest + 1), len(visible)):
        rest = visible[p:]
        if any(len(f) > len(rest) and f.startswith(rest) for f in by_first.get(rest[0], ())):
            held = min(held, tail_from + (where[p] if where is not None else p))
            break
    return min(held, _percent_held(visible, where, tail_from, known))


_PARTIAL_PERCENT = re.compile(r"%[0-7]?\Z")


def _percent_held(visible: str, where: list[int] | None, offset: int, known: Forms) -> int:
    """:func:`held_from`'s rule for a secret partly written as ``%XX`` escapes: where the end of
    ``visible`` (at ``offset`` in the text; ``where`` maps it) decodes to the start of a form,
    or an escape is still arriving. ``offset + len`` of the text when nothing is held."""
    none = offset + (where[-1] + 1 if where else len(visible))
    if "%" not in visible:
        return none
    cut = len(visible)
    partial = _PARTIAL_PERCENT.search(visible)
    if partial is not None:
        cut = partial.start()
    decoded: list[str] = []
    starts: list[int] = []
    pos = 0
    for m in _PERCENT.finditer(visible, 0, cut):
        decoded.extend(visible[pos:m.start()])
        starts.extend(range(pos, m.start()))
        decoded.append(chr(int(m.group(1), 16)))
        starts.append(m.start())
        pos = m.end()
    decoded.extend(visible[pos:cut])
    starts.extend(range(pos, cut))
    plain = "".join(decoded)
    at = cut
    for p in range(max(0, len(plain) - known.longest + 1), len(plain)):
        rest = plain[p:]
        if any(len(f) > len(rest) and f.startswith(rest) for f in known.by_first.get(rest[0], ())):
            at = starts[p]
            break
    if at >= len(visible):
        return none
    return offset + (where[at] if where is not None else at)


class StreamRedactor:
    """Redacts a text that arrives in pieces (a streamed reply): each piece is given out redacted
    at once except its end that could begin a secret (:func:`held_from`), which waits for the next
    piece; ``final`` gives out the rest."""

    def __init__(self) -> None:
        """An empty stream."""
        self.pending = ""

    def feed(self, piece: str, final: bool = False, known: Forms | None = None) -> str:
        """The redacted text of ``pending + piece`` that no later piece can change (``known``:
        the forms to look for, default :func:`known_forms`)."""
        text = self.pending + piece
        known = known or known_forms()
        if final:
            self.pending = ""
            return redact(text, known)
        cut = held_from(text, known)
        spans = [*secret_spans(text, known), *(m.span() for m in _USERINFO.finditer(text)),
                 *(m.span() for m in _SECRET_PARAM_MASK.finditer(text))]
        for start, end in sorted(spans, reverse=True):
            if start < cut < end:  # a match the cut would split waits whole
                cut = start
        self.pending = text[cut:]
        return redact(text[:cut], known)


def redact_value(value: Any, depth: int = 0, known: Forms | None = None) -> Any:
    """``value`` (str, or dicts/lists/tuples of them) with :func:`redact` applied to every string
    (the forms of the known secrets looked up once for the whole value)."""
    if isinstance(value, str):
        return redact(value, known)
    if depth > 20:
        return value
    if isinstance(value, Mapping | list | tuple) and known is None:
        known = known_forms()
    if isinstance(value, Mapping):
        return {k: redact_value(v, depth + 1, known) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v, depth + 1, known) for v in value) if isinstance(
            value, list) else tuple(redact_value(v, depth + 1, known) for v in value)
    return value


def _chain(exc: BaseException, limit: int = 64) -> list[BaseException]:
    """``exc``, its causes and contexts, each once (the rule of ``core.errors.exception_chain``,
    which this bottom module cannot import)."""
    queue: list[BaseException] = [exc]
    seen: list[BaseException] = []
    while queue and len(seen) < limit:
        current = queue.pop(0)
        if any(current is s for s in seen):
            continue
        seen.append(current)
        queue.extend(e for e in (current.__cause__, current.__context__)
                     if isinstance(e, BaseException))
        if isinstance(current, BaseExceptionGroup):
            queue.extend(current.exceptions)
    return seen


def redact_exception(exc: BaseException) -> BaseException:
    """``exc`` and every exception in its chain, redacted in place (``args`` and the string,
    dict and list attributes such as openai's ``message`` and ``body``); returns ``exc``."""
    for seen in _chain(exc):
        try:
            seen.args = tuple(redact_value(a) for a in seen.args)
            for name, value in list(vars(seen).items()):
                if isinstance(value, str | dict | list | tuple):
                    setattr(seen, name, redact_value(value))
        except (AttributeError, TypeError):  # read-only attributes of a C type
            continue
    return exc
