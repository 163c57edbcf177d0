"""Short forms of a memory for the progressive layers: pure functions, no IO.

    summary         the index line (layer 1): <= 100 characters, the first sentence
    preview         a timeline line (layer 2): <= 200 characters, flattened
    detail_tokens   what its details (layer 3) will cost, before rendering them

Code is what costs tokens and reads worst on one line, so a fenced block becomes
``[code]`` (``[python code]`` in a preview, where the language helps); a path is never
cut in the middle, because a path is usually what the reader is looking for.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ..capture.text import strings
from ..tokens import estimate_tokens

__all__ = [
    "DETAIL_OVERHEAD",
    "HEAD_CHARS",
    "LONG_FORM",
    "PREVIEW_CHARS",
    "SUMMARY_CHARS",
    "detail_tokens",
    "files_of",
    "preview",
    "summary",
]

DETAIL_OVERHEAD: Final = 62
"""Tokens a rendered detail adds to its parts: header, attribution, neighbours' ids."""
MAX_FILES: Final = 20
SUMMARY_CHARS: Final = 100
HEAD_CHARS: Final = 4000
"""Characters of a text its summary looks at: the first sentence is near the start."""
PREVIEW_CHARS: Final = 200
LONG_FORM: Final = frozenset({"prompt", "assistant", "compact_summary", "subagent_stop", "session_summary"})
"""Kinds whose text says more than their title: the title only repeats its first line
behind a prefix ("Prompt: …").  Other kinds (tool calls above all) are best summed up
by their title ("Edited memd/server.py")."""

CODE: Final = "[code]"
_FENCE: Final = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n.*?(?:```|\Z)", re.DOTALL)
_SENTENCE_END: Final = re.compile("(?<=[.!?\u3002\uff01\uff1f])\\s|\n")  # Western and CJK full stops
_PATH: Final = re.compile(r"\S*/\S+")
_LEADING_TAGS: Final = re.compile(r"^(?:</?[A-Za-z][\w-]*>\s*)+")
"""Bare XML-ish tags at the start, as Claude Code's compaction summaries open (``<analysis>``)."""
MIN_PATH_TAIL: Final = 16
"""Characters of a cut path worth showing: fewer rarely name the file."""


def _without_code(text: str, *, language: bool) -> str:
    def replace(match: re.Match[str]) -> str:
        lang = match.group(1)
        return f" [{lang} code] " if language and lang else f" {CODE} "

    return _FENCE.sub(replace, text)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters at a word boundary, with an ellipsis.

    A path that would be cut keeps its end (``…/retrieve/digest.py``): the file name
    is the part that identifies it.
    """
    if len(text) <= width:
        return text
    words = text.split(" ")
    kept = ""
    for index, word in enumerate(words):
        joined = f"{kept} {word}" if kept else word
        if len(joined) <= width - 1:
            kept = joined
            continue
        more = "…" if index < len(words) - 1 else ""
        room = width - len(kept) - (1 if kept else 0) - 1 - len(more)
        if _PATH.fullmatch(word) and room >= MIN_PATH_TAIL:
            return f"{kept} …{word[-room:]}{more}".lstrip()
        if not kept:  # one word longer than the line
            return word[: width - 1] + "…"
        break
    return kept.rstrip(" ,;:") + "…"


def summary(kind: str, title: str, text: str) -> str:
    """The one-line summary of a memory for the index layer."""
    source = (text if kind in LONG_FORM and text.strip() else title)[:HEAD_CHARS]
    line = ""
    for sentence in _SENTENCE_END.split(_without_code(source, language=False)):
        line = _LEADING_TAGS.sub("", _flat(f"{line} {sentence}"))
        if line.replace(CODE, "").strip():  # code markers alone say nothing yet
            break
    return _fit(line or _flat(title), SUMMARY_CHARS)


def preview(kind: str, title: str, text: str) -> str:
    """One timeline line: the title, then as much of the text as fits, flattened."""
    body = _flat(_without_code(text[:HEAD_CHARS], language=True))
    if kind in LONG_FORM and body:
        return _fit(body, PREVIEW_CHARS)
    line = f"{title} — {body}" if body and not body.startswith(_flat(title)) else _flat(title) or body
    return _fit(line, PREVIEW_CHARS)


def files_of(meta: dict[str, Any]) -> list[str]:
    """The files an event is about, from its ``meta`` (at most MAX_FILES)."""
    return (strings(meta.get("files")) or strings(meta.get("files_edited")) or strings(meta.get("matched_files")))[
        :MAX_FILES
    ]


def detail_tokens(kind: str, title: str, text: str, project: str | None, files: list[str]) -> int:
    """Estimated tokens of a memory's rendered details (``context.detail_text``), without
    rendering them: what the index tells an agent expanding a hit will cost."""
    body = text or title
    shown = estimate_tokens(body) + body.count("\n") + 1  # each quoted line starts with "> "
    if kind not in LONG_FORM:
        shown += estimate_tokens(title) + 8
    if project:
        shown += estimate_tokens(project) + 1
    if files:
        shown += estimate_tokens(", ".join(files)) + 2
    return shown + DETAIL_OVERHEAD
