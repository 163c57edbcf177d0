"""Lone UTF-16 surrogate escapes in JSON text, replaced by U+FFFD.

Claude Code writes JSON from JavaScript strings, which are UTF-16: a tool output cut in
the middle of an emoji leaves half of its surrogate pair, escaped as ``"\\ud83d"`` with no
low surrogate after it (or a ``"\\udc00"`` with no high one before).  Such text is no
valid Unicode, so msgspec refuses the whole document.  ``repair_lone_surrogates`` turns
every lone surrogate escape into ``\\ufffd`` and leaves the rest, a valid high + low pair
included, byte for byte.  It is for the path where decoding failed already: normal
decoding does not pay for it.

Stdlib only: the capture pipeline (``memd.capture.prepare``) and ``memctl import``
(``memd.capture.transcripts``) both use it.
"""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT", "repair_lone_surrogates"]

REPLACEMENT = rb"\ufffd"
"""The JSON escape of U+FFFD, the replacement character."""

_ESCAPES = re.compile(
    rb"\\\\"  # an escaped backslash: what follows it is text, not an escape
    rb"|\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?"  # a high surrogate, paired or not
    rb"|\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a low surrogate no high one came before
)


def repair_lone_surrogates(data: bytes) -> tuple[bytes, int]:
    """``data`` (JSON text) with each lone surrogate escape replaced by ``\\ufffd``, and how many were."""
    count = 0

    def fix(match: re.Match[bytes]) -> bytes:
        nonlocal count
        token = match.group()
        if len(token) != 6:  # an escaped backslash (2 bytes) or a valid pair (12)
            return token
        count += 1
        return REPLACEMENT

    if b"\\u" not in data:
        return data, 0
    fixed = _ESCAPES.sub(fix, data)
    return (fixed, count) if count else (data, 0)
