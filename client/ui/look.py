"""How the viewer words and marks what it shows: pure functions the templates use as filters.

Every function that returns markup escapes the text first and adds its own tags after, so
nothing a memory holds can become markup (a kind, an id or a path is escaped like the rest).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Final

from markupsafe import Markup, escape

from memd.cite import CITATION_RE
from memd.retrieve.rank import unmarked

__all__ = ["FAMILY", "KINDS", "chip", "day", "highlighted", "label", "linked_cites", "relative"]

FAMILY: Final = {
    "prompt": "prompt",
    "assistant": "reply",
    "tool": "tool",
    "tool_use": "tool",
    "tool_error": "error",
    "task_state": "task",
    "pre_compact": "compaction",
    "compact_summary": "compaction",
    "session_start": "session",
    "session_end": "session",
    "subagent_start": "session",
    "subagent_stop": "session",
    "notification": "session",
    "memory": "memory",
    "claude-memory": "memory",
    "instructions": "memory",
    "session_summary": "derived",
    "snapshot": "derived",
    "consolidated": "derived",
}
"""Each kind's family: its chip's colour (``ui.css``, ``.k-FAMILY``).  ``derived``, what memd
made (``memd.capture.events.DERIVED_KINDS``), is recomputed in place: it keeps its first place
while describing later events, so a listing in order shows it only when its kind is asked for."""
KINDS: Final = tuple(FAMILY)
"""The kinds a filter offers, in the order a session runs."""
_LABELS: Final = {
    "assistant": "reply",
    "tool_use": "tool call",
    "tool_error": "error",
    "task_state": "tasks",
    "pre_compact": "compaction",
    "compact_summary": "compacted",
    "claude-memory": "claude memory",
    "session_summary": "summary",
}
_HOME: Final = os.path.expanduser("~")


def label(kind: str) -> str:
    """A kind as people say it (``tool_error`` → ``error``)."""
    return _LABELS.get(kind, kind.replace("_", " "))


def chip(kind: str) -> Markup:
    """A kind as a coloured chip; its identifier in the tooltip."""
    family = FAMILY.get(kind, "other")
    return Markup('<span class="chip k-{}" title="{}">{}</span>').format(family, kind, label(kind))


def relative(text: str, root: str | None) -> str:
    """``text`` with the project's root taken off the paths in it, and the home folder as ``~``."""
    if root and len(root) > 1:
        text = text.replace(root.rstrip("/") + "/", "")
    return text.replace(_HOME + "/", "~/") if len(_HOME) > 1 else text


def highlighted(snippet: str, terms: Iterable[str]) -> Markup:
    """A search hit's snippet with its matched words in ``<mark>``, not in the brackets
    search marks them with for agents."""
    return Markup("").join(
        Markup("<mark>{}</mark>").format(text) if match else escape(text) for text, match in unmarked(snippet, terms)
    )


def linked_cites(text: str, base: str) -> Markup:
    """``text`` escaped, with every ``mem:`` id in it a link to that memory: escaping first, then
    the links, so nothing of the text itself can become markup (an id is letters and digits)."""
    return Markup(CITATION_RE.sub(lambda m: f'<a class="cite" href="{base}m/{m["id"]}">{m[0]}</a>', str(escape(text))))


def day(text: str, end: bool = False) -> float | None:
    """A ``YYYY-MM-DD`` from a date field as the Unix time its local day starts (``end``: the
    next day's start, so the day itself is in a range that ends there)."""
    try:
        start = time.strptime(text, "%Y-%m-%d") if text else None
    except ValueError:
        return None
    if start is None:
        return None
    return time.mktime((*start[:2], start[2] + (1 if end else 0), 0, 0, 0, 0, 0, -1))
