"""What the privacy filter reports and the small text tools its passes share.

``Redactions`` counts what a filter removed (counts, lengths and rule names, never
content, so it is safe to log); ``MARKER`` and ``redacted`` are a secret's marker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, NamedTuple

import msgspec

__all__ = ["MARKER", "Edit", "Redactions", "Span", "lower", "redacted", "splice"]

MARKER: Final = re.compile(r"\[REDACTED(?::[a-z0-9-]{1,40})?\]")
"""Any secret's marker, with or without its kind (rows stored before kinds have none)."""


def redacted(kind: str) -> str:
    """What a secret of ``kind`` becomes: ``[REDACTED:stripe-key]``.  The kind is a rule's
    name (lower case, digits, dashes), never anything of the secret."""
    return f"[REDACTED:{kind}]"


Span = tuple[int, int]


class Redactions(msgspec.Struct, frozen=True, kw_only=True):
    """What a filter removed: counts and lengths, never content (safe to log)."""

    private_spans: int = 0
    """Private-tag spans removed (empty ones included)."""
    secrets: int = 0
    """Secrets replaced by a ``[REDACTED:<kind>]`` marker."""
    unclosed: bool = False
    """Some ``<private>`` or ``<!-- private -->`` was never closed."""
    chars_removed: int = 0
    """Characters of the input that were replaced, tags included."""
    kinds: dict[str, int] = {}
    """The secrets by the kind in their marker: a shape's name (``github-token``,
    ``stripe-key``...), what a key names (``password``, ``api-key``...: a value named like
    a secret) or ``custom`` (an ``extra_patterns`` match).  Names, never content."""

    def __add__(self, other: Redactions) -> Redactions:
        """The sum of two, e.g. over the fields of one event."""
        kinds = dict(self.kinds)
        for kind, n in other.kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
        return Redactions(
            private_spans=self.private_spans + other.private_spans,
            secrets=self.secrets + other.secrets,
            unclosed=self.unclosed or other.unclosed,
            chars_removed=self.chars_removed + other.chars_removed,
            kinds=kinds,
        )


class Edit(NamedTuple):
    start: int
    end: int
    replacement: str


def splice(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with each (sorted, disjoint) edit applied."""
    parts: list[str] = []
    pos = 0
    for start, end, replacement in edits:
        parts += (text[pos:start], replacement)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def lower(text: str) -> str:
    """``text.lower()`` with the same length, so offsets into it are offsets into ``text``.

    U+0130 (İ) is the one character whose lower case is two characters.
    """
    low = text.lower()
    return low if len(low) == len(text) else text.replace("\u0130", "i").lower()
