"""Small pure helpers for turning payload values into titles and searchable text."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "clip",
    "clip_strings",
    "first_line",
    "join",
    "line_count",
    "parse_meta",
    "plural",
    "shorten",
    "string",
    "strings",
]


def string(value: Any) -> str:
    """``value`` if it is a string, else ``""``: payload fields come and go between versions."""
    return value if isinstance(value, str) else ""


def first_line(text: str) -> str:
    """The first non-blank line, stripped."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def shorten(text: str, width: int = 90) -> str:
    """``text`` on one line, cut at ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def plural(n: int, word: str, words: str = "") -> str:
    """``1 line``, ``2 lines``; ``words`` for irregular plurals."""
    return f"{n} {word}" if n == 1 else f"{n} {words or word + 's'}"


def line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def clip(text: str, max_chars: int, max_lines: int) -> str:
    """Keep the head and the tail of ``text`` with an explicit marker in between.

    The marker says what was cut: ``…[N lines, M chars truncated]…``.  Within the
    limits the text comes back unchanged.
    """
    if len(text) <= max_chars and text.count("\n") < max_lines:
        return text
    lines = text.splitlines(keepends=True)
    if len(lines) > max_lines:
        keep = max(1, max_lines // 2)
        head, tail = "".join(lines[:keep]), "".join(lines[-keep:])
    else:
        head, tail = text, ""
    if len(head) + len(tail) > max_chars:
        half = max(1, max_chars // 2)
        if tail:
            head, tail = head[:half], tail[-half:]
        else:
            head, tail = text[:half], text[-half:]
    cut_chars = len(text) - len(head) - len(tail)
    cut_lines = text.count("\n") - head.count("\n") - tail.count("\n")
    return f"{head}…[{cut_lines} lines, {cut_chars} chars truncated]…{tail}"


def clip_strings(value: Any, max_chars: int, max_lines: int) -> Any:
    """``clip`` every string inside a JSON-like value (a new value; the input is not changed)."""
    if isinstance(value, str):
        return clip(value, max_chars, max_lines)
    if isinstance(value, dict):
        return {k: clip_strings(v, max_chars, max_lines) for k, v in value.items()}
    if isinstance(value, list):
        return [clip_strings(v, max_chars, max_lines) for v in value]
    return value


def join(*parts: str) -> str:
    """The non-empty parts, one per line."""
    return "\n".join(p for p in parts if p)


def parse_meta(meta: str) -> dict[str, Any]:
    """An event's stored ``meta`` JSON as a dict (``{}`` if it is anything else)."""
    try:
        value = json.loads(meta)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def strings(value: object) -> list[str]:
    """The non-empty strings of a JSON list (or of a JSON object's keys)."""
    if isinstance(value, dict):
        value = list(value)
    return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []
