r"""Control characters of untrusted text made visible before a terminal or a text report gets it.

Passages, titles, model replies, claims and error texts come from outside (a corpus, a model
server, a user's file). A terminal obeys control characters in them: ``ESC [2J`` clears the
screen, ``ESC [1A ESC [2K`` erases the line above (the verdict line), OSC 8 (``ESC ]8;;URL ESC
\``) makes text a link to another site, C1 ``CSI`` (U+009B) starts a sequence on its own.
:func:`neutralise` replaces every C0 and C1 control character except newline and tab, DEL, and
the Unicode bidirectional overrides and isolates (which reorder what a reader sees) with its
visible escape (``\x1b``, ``\u202e``). The CLI applies it to everything its consoles print
(``factdebate.cli.output``); the evaluation reports to the text they write. :func:`json_text` is
the JSON the CLI prints (``--json``): JSON escapes C0 characters itself, and the ones it leaves
raw (DEL, C1, bidi controls) become ``\u`` escapes there, so the text still parses to the same
value.
"""

from __future__ import annotations

import json
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralise(text: str) -> str:
    """``text`` with its control characters (newline and tab kept) shown as escapes."""
    return _CONTROL.sub(_visible, text) if isinstance(text, str) else text


_JSON_RAW = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""The control characters ``json.dumps(..., ensure_ascii=False)`` writes as they are."""


def json_text(value: object, **kwargs: object) -> str:
    """``json.dumps(value, ensure_ascii=False, **kwargs)`` with no control character raw: the same
    JSON value, safe to print to a terminal (non-ASCII text stays readable)."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)  # type: ignore[arg-type]
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
