"""JSON from outside (dumps, corpora, datasets, index records) decoded with a bounded depth.

Python's decoder recurses once per nesting level and raises ``RecursionError`` (with a traceback
hundreds of frames long) on input nested ~1,000 deep - one line of ``[[[[...`` is enough. Every
reader of outside JSON decodes through :func:`loads`, which turns that into
:class:`JSONTooDeep`, a ``json.JSONDecodeError``: the callers' existing one-line error (file,
line, "malformed JSON ...", exit 2) covers it, and an importer skips that one record as it skips
any other malformed one. No format the project reads nests deeper than ten levels.
"""

from __future__ import annotations

import json
from typing import Any

DEPTH_MESSAGE = "nested deeper than the decoder's limit (about 1,000 levels)"


class JSONTooDeep(json.JSONDecodeError):
    """JSON nested deeper than the decoder can follow; the message says so, without the text."""

    def __init__(self) -> None:
        """``msg`` is :data:`DEPTH_MESSAGE`; the document is not kept (it may be large)."""
        super().__init__(DEPTH_MESSAGE, "", 0)


def loads(text: str | bytes | bytearray) -> Any:
    """``json.loads(text)``; nesting past the decoder's limit raises :class:`JSONTooDeep`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise JSONTooDeep() from None
