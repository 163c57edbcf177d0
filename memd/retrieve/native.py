"""What Claude Code's own memory put in the agent's context already, and what of memd's
context would only repeat it.

Claude Code loads ``MEMORY.md`` (one line per memory) into every session and, each turn,
may attach whole memory files it judged relevant (``relevant_memories``); they stay in
the context until the next compaction.  ``InContext`` is that, for one session: the
``claude-memory`` events whose files were attached (``recalled``), those ``MEMORY.md``
points to (``indexed``: their one line is there, not their body), and the texts
themselves.

A memory of memd's **says the same thing** as one of those texts when at least
``COVERED`` of its distinct content words (``words``: three letters or more, or any
number; common words left out) are in that text, and it has at least ``MIN_WORDS`` of
them: a decision recorded by memd and the memory file Claude Code wrote about it share
their specific words (names, numbers, paths), while an unrelated memory shares a few
common ones at most.  A short memory (under ``MIN_WORDS``) is never judged a repeat:
too little to tell.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple

from ..cite import CITATION_RE

__all__ = ["COVERED", "MIN_WORDS", "InContext", "repeats", "says_again", "words"]

COVERED: Final = 0.8
MIN_WORDS: Final = 4
_WORD: Final = re.compile(r"[^\W_]+(?:[._/-][^\W_]+)*")
_COMMON: Final = frozenset({
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was", "one", "our",
    "out", "has", "have", "this", "that", "with", "from", "they", "will", "would", "there", "their", "what",
    "when", "which", "who", "whom", "why", "how", "its", "into", "than", "then", "them", "these", "those",
    "been", "being", "also", "just", "only", "over", "such", "very", "more", "most", "some", "should",
    "could", "does", "did", "doing", "about", "after", "before", "because", "while", "where", "here",
    "use", "used", "using", "set", "sets",
})  # fmt: skip


@functools.lru_cache(maxsize=4096)
def words(text: str) -> frozenset[str]:
    """The content words of ``text``, lowercased: paths and dotted names are one word, and
    also each of their parts (``auth/session.py`` matches ``session.py``).  Cached: the
    texts Claude Code gave a session come back at each of its prompts."""
    found: set[str] = set()
    for match in _WORD.finditer(CITATION_RE.sub(" ", text.lower())):
        token = match.group(0)
        for word in {token, *re.split(r"[._/-]", token)}:
            if (len(word) >= 3 or word.isdigit()) and word not in _COMMON:
                found.add(word)
    return frozenset(found)


class InContext(NamedTuple):
    """What Claude Code's memory put in one session's context (see the module doc)."""

    recalled: frozenset[int] = frozenset()
    indexed: frozenset[int] = frozenset()
    texts: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.recalled or self.indexed or self.texts)


def repeats(memories: Mapping[int, str], context: InContext, *, index_only: bool) -> set[int]:
    """Which of ``memories`` (event id → its text) the agent has already: a recalled file,
    a file ``MEMORY.md`` points to when ``index_only`` (the caller shows one line of each,
    which that line repeats), or a text that says the same thing (see the module doc)."""
    left_out = {i for i in memories if i in context.recalled or (index_only and i in context.indexed)}
    seen: Sequence[frozenset[str]] = [words(text) for text in context.texts]
    return left_out | {i for i, text in memories.items() if i not in left_out and _covered(text, seen)}


def says_again(text: str, context: InContext) -> bool:
    """Whether ``text`` (a fact memd quotes inside a longer line, such as a session's goal)
    says what one of the texts Claude Code's memory gave says (see the module doc)."""
    return _covered(text, [words(t) for t in context.texts])


def _covered(text: str, seen: Sequence[frozenset[str]]) -> bool:
    own = words(text)
    return len(own) >= MIN_WORDS and any(len(own & other) >= COVERED * len(own) for other in seen)
