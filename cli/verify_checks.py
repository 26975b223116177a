"""The claim ``verify`` reads: UTF-8 or an error.

Stdin is decoded strictly (Latin-1 bytes are refused with their offset instead of being dropped),
and an argument Python could only decode with surrogate escapes (bytes that are not UTF-8 in
``argv``) is refused too. The checks of the run itself - writable checkpoint places, a resumed
thread's framework and claim - are the engine's (``factdebate.run.engine``), shared by every
command.
"""

from __future__ import annotations

import sys

from factdebate.core.errors import InputError


def read_claim(raw: str) -> str:
    """The claim text: ``raw``, or stdin decoded as UTF-8 when ``raw`` is ``-``.

    Raises:
        InputError: Bytes that are not UTF-8 (their offset and value named).
    """
    if raw == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text-only stdin (embedding callers): already decoded
            return _no_surrogates(sys.stdin.read(), "stdin")
        data = stream.read()
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"stdin is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                "convert it first, e.g. iconv -f latin1 -t utf-8") from exc
    return _no_surrogates(raw, "the claim argument")


def _no_surrogates(text: str, where: str) -> str:
    for offset, ch in enumerate(text):
        if "\udc80" <= ch <= "\udcff":  # how Python keeps an undecodable byte of argv/stdin
            raise InputError(
                f"{where} is not UTF-8 text (byte 0x{ord(ch) - 0xDC00:02x} at character "
                f"{offset})", "pass UTF-8 text (convert it, e.g. iconv -f latin1 -t utf-8)")
    return text
