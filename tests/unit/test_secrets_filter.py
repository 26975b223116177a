"""The one secret filter (``factdebate.core.secrets_filter``) and the places that apply it."""

from __future__ import annotations

import base64
import logging
import re
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from factdebate.core import secrets_filter
from factdebate.core.errors import RunFaultError
from factdebate.core.log_redaction import redact_record
from factdebate.core.secrets_filter import redact, redact_exception
from factdebate.tools.tool_providers import masked_fault

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-op-0123456789abcdef"
PASSWORD = "Pw+9f3e=2a"


@pytest.fixture(autouse=True)
def operator_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("FACTDEBATE_BASE_URL", f"http://op:{PASSWORD}@127.0.0.1:1/v1")


@pytest.mark.parametrize("prefix", ["", "x", "xy", "Authorization: Basic "])
def test_every_form_of_a_secret_is_removed(prefix: str):
    for secret in (KEY, PASSWORD, f"op:{PASSWORD}"):
        data = (prefix + secret + "tail").encode()
        shown = [secret, quote(secret, safe=""), base64.b64encode(data).decode(),
                 base64.urlsafe_b64encode(data).decode()]
        for text in shown:
            assert secret not in redact(f"said {text} here"), text
    basic = base64.b64encode(f"op:{PASSWORD}".encode()).decode()
    assert basic[4:-4] not in redact(f"Authorization: Basic {basic}")
    assert KEY not in redact(f"Bearer {KEY}") and redact(f"Bearer {KEY}") == "Bearer ***"


def test_what_counts_as_a_secret(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FACTDEBATE_API_KEYS", "alice:alice-key-123456,bob:bob-key-1234567")
    monkeypatch.setenv("FACTDEBATE_MILVUS_URI", "http://root:milvus-pw-1@127.0.0.1:19530")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-abcdef")
    monkeypatch.setenv("FACTDEBATE_MAX_ROUNDS", "3")
    known = secrets_filter.known_secrets()
    assert {KEY, PASSWORD, "alice-key-123456", "bob-key-1234567", "milvus-pw-1",
            "tok-abcdef"} <= known
    assert "3" not in known and "alice" not in known
    secrets_filter.register("registered-server-key")
    assert "***" == redact("registered-server-key")


def test_every_change_to_the_environment_is_seen_at_the_next_call(
        monkeypatch: pytest.MonkeyPatch):
    """The known secrets are kept between calls and read again after any change of the
    environment: a new value, a changed one, a deleted one, one set through ``os.environb``, a
    registration; an unchanged environment gives the kept answer itself."""
    import os

    first = secrets_filter.known_secrets()
    assert secrets_filter.known_secrets() is first  # kept, not read again
    monkeypatch.setenv("LATE_API_KEY", "late-key-0123456789")
    assert "late-key-0123456789" in secrets_filter.known_secrets()
    monkeypatch.setenv("LATE_API_KEY", "later-key-9876543210")
    known = secrets_filter.known_secrets()
    assert "later-key-9876543210" in known and "late-key-0123456789" not in known
    monkeypatch.delenv("LATE_API_KEY")
    assert "later-key-9876543210" not in secrets_filter.known_secrets()
    if hasattr(os, "environb"):
        monkeypatch.setitem(os.environb, b"BYTES_SECRET", b"bytes-secret-55555555")
        assert "bytes-secret-55555555" in secrets_filter.known_secrets()
    kept = secrets_filter.known_secrets()
    secrets_filter.register("registered-late-secret-42")
    assert "registered-late-secret-42" in secrets_filter.known_secrets() - kept


def test_urls_given_to_a_context_are_registered():
    from factdebate.core.context import Context

    Context(model_base_url="http://u:ctx-password-9@127.0.0.1:2/v1")
    assert redact(base64.b64encode(b"u:ctx-password-9").decode()).count("***") == 1


def test_errors_log_records_and_tool_faults_are_redacted():
    assert KEY not in str(RunFaultError(f"the server said Bearer {KEY}", f"not {PASSWORD}"))
    try:
        try:
            raise ValueError(f"upstream echoed {KEY}")
        except ValueError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed %s", (PASSWORD,),
                                   sys.exc_info())
    redact_record(record)
    rendered = logging.Formatter().format(record)
    assert KEY not in rendered and PASSWORD not in rendered and "upstream echoed ***" in rendered
    dict_record = logging.LogRecord("x", logging.ERROR, __file__, 1, {"event": KEY}, (), None)
    redact_record(dict_record)
    assert dict_record.msg == {"event": "***"}
    assert KEY not in str(masked_fault(LookupError(f"no page; key {KEY}")))
    exc = ConnectionError(f"refused {KEY}")
    exc.body = {"error": {"message": f"Bearer {KEY}"}}  # type: ignore[attr-defined]
    redact_exception(exc)
    assert KEY not in str(exc) and KEY not in str(exc.body)  # type: ignore[attr-defined]


def test_redaction_is_linear_in_the_text():
    redact("a" * 2_000_000 + KEY)  # a backtracking scan would take minutes


CALL_SITES = {
    "core/errors.py": "every FactDebateError's text when it is made",
    "core/secrets_filter.py": "the filter itself",
    "core/log_redaction.py": "every log record of the CLI's and the server's process",
    "cli/output.py": "the CLI's error line",
    "tools/tool_providers.py": "tool errors (MERMAID's tool faults, the MCP server's replies)",
    "graphs/exported.py": "every exception a node of any graph raises (NODE_ERRORS)",
    "core/trace_filter.py": "every run posted to LangSmith",
    "evaluation/results.py": "eval's ToolFault rows (the tool faults' flags and the message)",
    "nodes/retrieval.py": "a retriever's fault in the run's flags (verify, check, eval --tool-faults score)",
    "nodes/mermaid/call_tool.py": "a MERMAID tool's fault in the run's flags",
    "server/egress.py": "everything the LangGraph server sends (its edge, EgressFilter)",
    "server/logs.py": "every line the server's log handlers write (after every formatter)",
    "tools/review_feedback.py": "a reviewer's decision sent to LangSmith as feedback, and its faults",
}


def test_the_places_that_apply_the_filter():
    """Every module that applies the filter is listed here: a new way out is added knowingly."""
    calling = {str(p.relative_to(ROOT)) for p in ROOT.glob("*/**/*.py")
               if ".venv" not in p.parts and "tests" not in p.parts and "build" not in p.parts
               and re.search(r"\bredact(?:_value|_exception|_record|_cut_off)?\(", p.read_text())}
    assert calling == set(CALL_SITES)
    mcp = (ROOT / "tools/mcp_server.py").read_text()
    assert "masked_fault(exc)" in mcp  # MCP error replies go through the tool filter


def test_control_characters_become_visible_text():
    from factdebate.core.control_chars import neutralise

    hostile = "a\x1b[2Jb\x1b]8;;http://evil\x1b\\c\x9b31m\x07\x08\rd\u202ee\tf\ng"
    shown = neutralise(hostile)
    assert shown == ("a\\x1b[2Jb\\x1b]8;;http://evil\\x1b\\c\\x9b31m\\x07\\x08\\x0dd\\u202ee"
                     "\tf\ng")


def test_a_url_already_masked_holds_no_secret():
    """``http://op:***@host`` quoted somewhere (a test id in PYTEST_CURRENT_TEST, a log line)
    must not make ``***`` or ``op:***`` secrets: masking would then eat the user name."""
    assert secrets_filter.url_secrets("test[closed-unreachable at http://op:***@127.0.0.1:]") == set()
    assert secrets_filter.url_secrets("http://op:pw-1234567@h") == {"pw-1234567", "op:pw-1234567"}


async def test_a_retrievers_fault_reaches_the_flags_masked():
    """A library's exception text quoting the operator's key or a URL with a password becomes the
    run's ``tool fault`` flag (shown by verify/check, kept by ``eval --tool-faults score``)."""
    from factdebate.nodes.retrieval import search_tool
    from factdebate.nodes.tool_mad.state import ToolMadContext
    from factdebate.tools.base import RETRIEVERS

    class Leaky:
        async def search(self, query: str, *, k: int) -> list:
            raise ConnectionError(f"POST http://op:{PASSWORD}@127.0.0.1:9/search with key {KEY}")

    if "leaky" not in RETRIEVERS:
        RETRIEVERS.register("leaky", lambda settings: Leaky())
    ctx = ToolMadContext(debater_model="scripted:agree", rag_backend="leaky",
                         search_backend="leaky", tool_retries=0)
    out = await search_tool("leaky", "Eiffel Tower", ctx, k=3, exclude_titles=None, who="rag")
    flag = next(f for f in out["flags"] if f.startswith("tool fault: leaky"))
    assert "ConnectionError" in flag and "http://op:***@127.0.0.1:9" in flag, flag
    assert PASSWORD not in flag and KEY not in flag, flag


def test_hex_json_escaped_and_invisibly_split_forms_are_removed():
    data = KEY.encode()
    hidden = {"hex": data.hex(), "HEX": data.hex().upper(), "zero-width": "\u200b".join(KEY),
              "joiners": "\u200d\u2060".join(KEY), "soft hyphens": "\u00ad".join(KEY),
              "escaped zero-width": "\\u200b".join(KEY), "json": '"' + PASSWORD + '"'}
    for name, text in hidden.items():
        out = redact(f"model said {text}.")
        visible = secrets_filter.INVISIBLE.sub("", out)
        assert KEY not in visible and data.hex() not in visible.lower(), (name, out)
        assert out.startswith("model said ") and out.endswith("."), (name, out)
    assert redact("ordinary text\u200bwith a zero-width space") == (
        "ordinary text\u200bwith a zero-width space")


ZW = "\u200b"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 11])
def test_a_streamed_text_is_redacted_across_its_pieces(size: int):
    text = (f"the reply holds {KEY} and {ZW.join(KEY)} and "
            f"http://op:{PASSWORD}@127.0.0.1:9/v1 and {base64.b64encode(KEY.encode()).decode()};"
            " the Eiffel Tower is in Paris.")
    stream = secrets_filter.StreamRedactor()
    out = "".join(stream.feed(text[i:i + size]) for i in range(0, len(text), size))
    out += stream.feed("", final=True)
    assert KEY not in secrets_filter.INVISIBLE.sub("", out) and PASSWORD not in out, out
    assert out.startswith("the reply holds *** and *** and http://") and out.count("***") == 4
    assert out.endswith("@127.0.0.1:9/v1 and ***g==; the Eiffel Tower is in Paris."), out


def test_only_an_end_that_could_begin_a_secret_is_held_back(monkeypatch):
    # only this module's secrets: one that another test of the process registered, or a
    # credential of the machine's environment, could begin with the "Z" below and hold it back
    import os

    monkeypatch.setattr(secrets_filter, "_registered", set())
    for name, value in list(os.environ.items()):
        if name not in ("OPENAI_API_KEY", "FACTDEBATE_BASE_URL") and (
                secrets_filter.SECRET_NAME.search(name) or "://" in value or "=" in value):
            monkeypatch.delenv(name)
    stream = secrets_filter.StreamRedactor()
    assert stream.feed("The Eiffel Tower is in Paris. ") == "The Eiffel Tower is in Paris. "
    assert stream.feed("It said sk-op-01") == "It said "  # the start of the key waits
    assert stream.feed("XYZ") == "sk-op-01XYZ"  # not the key after all: given out
    assert secrets_filter.held_from("a url http://op:pass") == len("a url ")
    assert secrets_filter.held_from("nothing here.") == len("nothing here.")


def test_a_secret_cut_short_around_an_ellipsis_shows_neither_end():
    """pydantic abbreviates a long ``input_value`` to its two ends; both are parts of the key."""
    hexed = KEY.encode().hex()
    for shown in (f"{KEY[:9]}...{KEY[-9:]}", f"{hexed[:10]}...{hexed[-12:]}",
                  f"read {KEY[:8]}\u2026{KEY[-7:]} in"):
        out = redact(f"[type=literal_error, input_value='{shown}', input_type=str]")
        assert KEY[:6] not in out and KEY[-6:] not in out and hexed[-12:] not in out, out
    assert redact("The tower... it is in Paris...") == "The tower... it is in Paris..."
    stream = secrets_filter.StreamRedactor()
    text = f"input_value='{KEY[:9]}...{KEY[-9:]}' and more"
    out = "".join(stream.feed(c) for c in text) + stream.feed("", final=True)
    assert KEY[:6] not in out and KEY[-6:] not in out, out


def test_a_structured_log_event_with_a_secret_traceback_stays_an_event():
    """langgraph-api logs a failed run as a structlog event (a dict message) with the exception:
    its traceback holds the key (pydantic quotes the reply), so it is redacted into the event's
    ``exception`` and the message stays a dict for structlog's formatter (a string there made
    logging print the raw traceback as a "Logging error")."""
    import structlog

    from factdebate.server.logs import RedactingFormatter

    try:
        raise ValueError(f"1 validation error input_value='{KEY}'")
    except ValueError:
        info = sys.exc_info()
    record = logging.LogRecord("langgraph_api.worker", logging.ERROR, __file__, 1,
                               {"event": "Run encountered an error"}, (), info)
    redact_record(record)
    assert isinstance(record.msg, dict) and record.exc_info is None
    assert "input_value='***'" in record.msg["exception"] and KEY not in str(record.msg)
    line = RedactingFormatter(structlog.stdlib.ProcessorFormatter(
        processors=[structlog.dev.ConsoleRenderer(colors=False)])).format(record)
    assert "Run encountered an error" in line and KEY not in line, line

    class Failing(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            raise AttributeError(f"cannot render {KEY}")

    broken = logging.LogRecord("x", logging.ERROR, __file__, 1, {"event": KEY}, (), None)
    line = RedactingFormatter(Failing()).format(broken)  # one line, not logging's raw report
    assert "could not be formatted: AttributeError" in line and KEY not in line, line


def test_a_log_line_holding_a_secrets_first_characters_loses_them():
    """langgraph-api logs a streamed reply at every piece (``messages/partial`` at debug level):
    a line may hold a key's start without its end, plain or split by zero-width characters
    (written as escapes in the line)."""
    from factdebate.core.secrets_filter import redact_cut_off

    start = KEY[:12]
    for shown in (start, "\u200b".join(start), "\\u200b".join(start)):
        line = f'Streamed run event data=[{{"content": "read {shown}", "type": "ai"}}]'
        out = redact_cut_off(line)
        assert "***" in out and KEY[:8] not in out.replace("\\u200b", "").replace("\u200b", ""), out
        assert out.startswith('Streamed run event data=[{"content": "read ') and '"type": "ai"' in out
    plain = "run 1f0c9a2b-3c4d finished in 1.2 s: SUPPORTS (sk-op- was not used)"
    assert redact_cut_off(plain) == plain  # a start shorter than 8 characters stays
    assert redact_cut_off(f"key {KEY} here") == "key *** here"


def _percent(text: str, case: str = "upper") -> str:
    encoded = "".join(f"%{b:02X}" for b in text.encode())
    return encoded.lower() if case == "lower" else encoded


@pytest.mark.parametrize("encoded", [
    _percent(KEY), _percent(KEY, "lower"),                      # every byte escaped
    KEY[:6] + _percent(KEY[6:9]) + KEY[9:],                     # escaped in part
    "".join(f"%{ord(c):02x}" if i % 2 else c for i, c in enumerate(KEY)),  # every other one
])
def test_a_percent_encoded_key_is_removed_whole_and_in_streamed_pieces(encoded: str):
    text = f"token={encoded}&100% sure"
    assert redact(text) == "token=***&100% sure"
    for size in (1, 2, 3, 7):
        stream = secrets_filter.StreamRedactor()
        out = "".join(stream.feed(text[i:i + size]) for i in range(0, len(text), size))
        out += stream.feed("", final=True)
        assert out == "token=***&100% sure", (size, out)


def test_percent_signs_that_hide_nothing_pass_unchanged():
    text = "100% of %41 and %ZZ and a trailing %4"
    assert redact(text) == text
    stream = secrets_filter.StreamRedactor()
    assert stream.feed(text) + stream.feed("", final=True) == text
