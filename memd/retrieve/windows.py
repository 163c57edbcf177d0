"""What an event is embedded as: its title and text, cut into windows the model can read.

Pure text work, no model: the indexer (``memd.services.indexer``) embeds these windows,
``bench/corpus.py`` builds its synthetic vectors from them.  Token counts are estimates
(``_cost``), tuned for all-MiniLM-L6-v2's WordPiece tokenizer, which reads 256 tokens.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "HEAD_TOKENS",
    "LONG_FORM_KINDS",
    "MAX_WINDOWS",
    "WINDOW_OVERLAP",
    "WINDOW_TOKENS",
    "embedding_text",
    "event_windows",
    "windows",
]

HEAD_TOKENS: Final = 48
"""Estimated tokens of an event's first vector: its title and the start of its text.
Embedding cost grows with length (~5x from 40 to 220 tokens here), and this first
vector is what makes a new event findable by meaning, so it is kept short."""
WINDOW_TOKENS: Final = 240
"""Estimated tokens per further window: the model reads 256, minus room for special
tokens and the estimate's error."""
WINDOW_OVERLAP: Final = 32
MAX_WINDOWS: Final = 4
"""Vectors per event at most (the head and 3 windows): the head of a long text gets
vectors, all of it gets keywords."""


def embedding_text(title: str, text: str) -> str:
    """The text an event is embedded as: its title, then its searchable text (not raw JSON)."""
    if not text or text == title:
        return title
    return f"{title}\n{text}"


LONG_FORM_KINDS: Final = frozenset(
    {"prompt", "assistant", "compact_summary", "session_summary", "subagent_stop", "tool_error"}
)
"""Kinds whose whole text is embedded, not just its head: what people and the agent wrote,
and errors.  A file read or a command's output is found by its title and head, and by
keywords: embedding all of it would cost most of the model's time and memory."""


def event_windows(title: str, text: str, kind: str) -> list[str]:
    """Everything an event is embedded as, in order: a short head (title and the start of
    the text), then, for a long-form kind whose text is longer than that, windows over all
    of it.

    The indexer embeds the head first for every waiting event (stage 0), and the other
    windows once no head is waiting (stage 1): new events become findable by meaning
    quickly even behind a backlog, long ones completely a little later.
    """
    whole = embedding_text(title, text)
    head = windows(whole, size=HEAD_TOKENS, limit=1)
    if not head or head[0] == whole or kind not in LONG_FORM_KINDS:
        return head
    return head + windows(whole, limit=MAX_WINDOWS - 1)


def _cost(word: str) -> int:
    """Estimated tokens of a whitespace-separated word: ~4 letters a token plus one per
    punctuation mark (code and paths split at every ``/ . _ (``), and about one a
    character for CJK, which WordPiece splits into single characters."""
    if word.isascii():
        marks = len(word) - sum(c.isalnum() for c in word)
        return 1 + (len(word) - marks) // 4 + marks
    return 1 + len(word)


def windows(
    text: str, *, size: int = WINDOW_TOKENS, overlap: int = WINDOW_OVERLAP, limit: int = MAX_WINDOWS
) -> list[str]:
    """Split ``text`` into at most ``limit`` overlapping windows of about ``size`` tokens.

    A text that fits is one window, unchanged.  Words are never split, except a single
    word longer than a window, which is cut into window-sized pieces.
    """
    words = text.split()
    if sum(_cost(w) for w in words) <= size:
        return [text] if text.strip() else []
    pieces: list[str] = []
    for word in words:
        step = size * 2 if word.isascii() else size // 2  # characters per window for this script
        pieces.extend(word[i : i + step] for i in range(0, len(word), step))
    result: list[str] = []
    start = 0
    while start < len(pieces) and len(result) < limit:
        end, budget = start, 0
        while end < len(pieces) and budget + _cost(pieces[end]) <= size:
            budget += _cost(pieces[end])
            end += 1
        end = max(end, start + 1)
        result.append(" ".join(pieces[start:end]))
        if end >= len(pieces):
            break
        back, kept = end, 0  # step back ~overlap tokens for the next window's start
        while back > start + 1 and kept + _cost(pieces[back - 1]) <= overlap:
            back -= 1
            kept += _cost(pieces[back])
        start = back
    return result
