"""What a prompt is given from memory, by the confidence of what its search found: pure.

    top hit >= PROMPT_HIGH        its details, cut to fit (plus index lines of other sure hits)
    top hit >= min_confidence     index lines only (at most PROMPT_SUGGESTIONS)
    below                         nothing

Searched in the prompt's project: memd's bookkeeping kinds are left out (``PROMPT_KINDS``),
and so are low-importance tool calls (reads and searches: a peer found them 82% of its
store and 0.2% of what agents used).  Nothing a session got already is given again.
Slash commands, Claude Code's own command echoes and memd's own text are not searched
(``not_a_question``); short prompts are (a Korean follow-up like "그거 고쳐줘" is short and
may well have an answer).  ``memd.services.prompt_context`` runs it.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Final

from ..cite import CITATION_RE
from ..protocol import Hit

__all__ = [
    "CONTINUATION_CHARS",
    "PROMPT_HIGH",
    "PROMPT_KINDS",
    "PROMPT_MIN_IMPORTANCE",
    "PROMPT_SEARCHED",
    "PROMPT_SUGGESTIONS",
    "not_a_question",
    "suggestions",
]

PROMPT_HIGH: Final = 0.85
PROMPT_SUGGESTIONS: Final = 3
PROMPT_SEARCHED: Final = 8
"""Hits a prompt's search asks for, before what the session got and the floor leave out."""
PROMPT_MIN_IMPORTANCE: Final = 2
PROMPT_KINDS: Final = (
    "memory",
    "prompt",
    "assistant",
    "tool",
    "tool_error",
    "task_state",
    "compact_summary",
    "session_summary",
    "subagent_stop",
)
CONTINUATION_CHARS: Final = 5000
"""Characters a continuation given with a prompt may take: the prompt's own block needs room."""

_NOT_QUESTIONS: Final = (
    "/",
    "<command-",
    "<local-command",
    "<task-notification",
    "<memory-context",
    "memd:",
    "Caveat: The messages below",
)


def not_a_question(text: str) -> bool:
    """A slash command, Claude Code's own echo of one or notice of a background task, or memd's
    own output pasted back."""
    if text.startswith(_NOT_QUESTIONS) or "<memory-context" in text:
        return True
    return not CITATION_RE.sub("", text).strip(" \n\t,;.")  # nothing but citation ids


def suggestions(hits: Sequence[Hit], given: Container[int], floor: float) -> list[Hit]:
    """The hits a prompt may be shown: not ``given`` to its session already, at ``floor``
    confidence or above, the best ``PROMPT_SUGGESTIONS``."""
    return [hit for hit in hits if hit.id not in given and hit.confidence >= floor][:PROMPT_SUGGESTIONS]
