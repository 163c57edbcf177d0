"""What every tool normalizer returns, and the few helpers they share.

A normalizer (``tools.py`` holds the table of them) takes a tool call's ``tool_input``
and ``tool_response`` and returns a ``ToolView``; ``Limits`` says how much of its text
is kept.  The helpers read JSON values of any shape without raising.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from .text import clip, line_count

__all__ = [
    "HEAD_LINES",
    "HIGH",
    "LIST_MAX",
    "LOW",
    "MEDIUM",
    "Limits",
    "Normalizer",
    "ToolView",
    "as_dict",
    "as_int",
    "file_type",
    "strings",
]

LOW, MEDIUM, HIGH = 1, 2, 3

HEAD_LINES = 20
"""Lines of a file kept from a Read, or previewed from a Write."""
LIST_MAX = 50
"""File names kept from a Grep or Glob."""


class Limits(msgspec.Struct, frozen=True):
    """Per-field size limits for stored text (``capture.max_field_chars`` / ``_lines``)."""

    chars: int = 10_000
    lines: int = 100

    def clip(self, text: str) -> str:
        return clip(text, self.chars, self.lines)

    def head(self, text: str, lines: int = HEAD_LINES) -> str:
        """The first ``lines`` lines only (a file's head, never its tail)."""
        kept = "".join(text.splitlines(keepends=True)[:lines])
        kept = kept[: self.chars]
        rest = text[len(kept) :]
        return kept + (f"…[{line_count(rest)} lines, {len(rest)} chars not kept]" if rest else "")


class ToolView(msgspec.Struct, kw_only=True):
    subject: str
    title: str
    text: str
    meta: dict[str, Any] = {}
    importance: int = MEDIUM


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def strings(value: Any) -> list[str]:
    """Every string leaf of a JSON value, in order."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def file_type(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""


Normalizer = Callable[[dict[str, Any], Any, Limits], ToolView]
"""A tool's normalizer: (its input, its response, the limits) -> what is stored of the call."""
