"""What a prompt is given from memory, by the confidence of what its search found: pure.

    top hit >= PROMPT_HIGH        its details, cut to fit (plus index lines of other sure hits)
    top hit >= min_confidence     index lines only (at most PROMPT_SUGGESTIONS)
    below                         nothing

Searched in the prompt's project: memd's bookkeeping kinds are left out (``PROMPT_KINDS``),
and so are low-importance tool calls (reads and searches: a peer found them 82% of its
store and 0.2% of what agents used).  Nothing a session got already is given again.
Slash commands, Claude Code's own command echoes and memd's own text are not searched
(``not_a_question``); short prompts are (a Korean follow-up like "그거 고쳐줘" is short and
may well have an answer).  A long prompt (a question with a pasted log, or a log and then
the question) is searched for its question (``question_of``): embedded whole, the model
sees its first 256 tokens, which may not hold the question at all, and takes 40 ms.
``memd.services.prompt_context`` runs it.
"""

from __future__ import annotations

import re
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
    "QUESTION_CHARS",
    "not_a_question",
    "question_of",
    "suggestions",
]

PROMPT_HIGH: Final = 0.65
"""The confidence at which a prompt gets the top hit's details: a calibrated probability, and of
the hits at 0.65 or more, nine in ten were the answer on the evaluation sets' tuning parts
(``bench/fit.py``'s threshold table, BENCHMARKS.md)."""
PROMPT_SUGGESTIONS: Final = 3
PROMPT_SEARCHED: Final = 8
"""Hits a prompt's search asks for, before what the session got and the floor leave out."""
PROMPT_POOL: Final = 20
"""Candidates each lane gives a prompt's search (``hits.MIN_POOL``: 40 for a search someone
asked for).  A prompt is given only what memd is confident of, and such hits are among each
lane's first few: weighing 20 instead of 40 keeps the hook's search ~2-3 ms shorter at 100k
events and leaves out few of them (BENCHMARKS.md: the prompt's pool)."""
PROMPT_MIN_IMPORTANCE: Final = 2
PROMPT_KINDS: Final = (
    "memory",
    "claude-memory",
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


QUESTION_CHARS: Final = 400
"""A prompt longer than this is searched for its question alone (``question_of``)."""
_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+|\n+")
_ASKS: Final = re.compile(r"^(?:why|how|what|where|when|which|who|can|could|should|is|are|does|do|did)\b", re.I)


def question_of(prompt: str) -> str:
    """What a long prompt asks: its first sentence, every sentence that asks something (ends
    with "?" or starts like a question), and its last sentence, in order, up to about
    ``QUESTION_CHARS``; a short prompt whole.  Measured (``bench/models.py``, long prompts: the
    coding-memory set's questions with ten pasted memories of other projects, ~960 characters),
    recall@5 keyword / paraphrased questions: 0.614 / 0.116 with the question first and 0.880 /
    0.466 with it last, against 0.338 / 0.037 and 0 / 0 embedded whole, 0.612 / 0.073 and 0 / 0
    for the first 400 characters; 5-8 ms to embed against 39 ms whole."""
    if len(prompt) <= QUESTION_CHARS:
        return prompt
    sentences = [s.strip() for s in _SENTENCE.split(prompt) if s.strip()]
    keep = {0, len(sentences) - 1} | {i for i, s in enumerate(sentences) if s.endswith("?") or _ASKS.match(s)}
    kept: list[str] = []
    used = 0
    for i in sorted(keep):
        if kept and used + len(sentences[i]) > QUESTION_CHARS:
            continue
        kept.append(sentences[i])
        used += len(sentences[i]) + 1
    return " ".join(kept)[: 2 * QUESTION_CHARS]
