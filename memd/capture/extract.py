"""What a text is about, without an LLM: topics, files, entities, decisions.  Pure functions.

    topics     content words, stemmed; a Korean word becomes its glossary's English term, so
               "로그인 테스트 고쳐줘" and "fix the login test" share topics
    files      path-like tokens with an extension, as their file names (``auth.py``)
    entities   identifiers: CamelCase, snake_case, dotted.names, `backticked` words, --flags
    decisions  the sentences of a text that carry a decision cue, English or Korean

Salience is frequency: ``salient(texts, k)`` keeps the k most mentioned of each kind.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Final, NamedTuple

from ..query import compile_query, stem

__all__ = ["Aspects", "aspects", "decisions", "entities", "files", "is_substantive", "topics"]

_FILE: Final = re.compile(r"(?<![\w/.-])(?:[\w.-]*/)*([\w-]{2,}\.[A-Za-z]\w{0,7})(?![\w/])")
_ENTITY: Final = re.compile(
    r"`([^`\s]{3,60})`"  # `backticked`
    r"|\b([a-z]+(?:[A-Z][a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)\b"  # camelCase, CamelCase
    r"|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b"  # snake_case
    r"|\b([a-z][\w]*(?:\.[a-z_][\w]*)+)\b(?!\.\w)"  # dotted.names
    r"|(?<!\w)(--[a-z][\w-]+)"  # --flags
)
_DECISION_EN: Final = re.compile(
    r"\b(decided|decide to|we decided|let'?s (?:use|go with|keep|switch|stick)|we(?:'ll| will| should)|"
    r"go with|switch(?:ed)? to|instead of|don'?t|do not|never|always|must|prefer|from now on|stick with)\b",
    re.IGNORECASE,
)
_DECISION_KO: Final = re.compile(r"(하기로|결정|로 하자|쓰자|사용하자|하지 ?마|말고|항상|절대|앞으로는|대신)")
_SENTENCE: Final = re.compile(r"(?<=[.!?\u3002])\s+|\n+")
MIN_WORDS: Final = 3
MIN_TOPIC_CHARS: Final = 3
"""English words shorter than this are file extensions and abbreviations (py, js, id), not topics."""
MIN_CJK_CHARS: Final = 4


def is_substantive(prompt: str) -> bool:
    """A prompt that says what the user wants: not a slash command or an echo of one, and
    more than a word or two (in Korean, more than a few syllables)."""
    text = prompt.strip()
    if not text or text.startswith(("/", "<")):
        return False
    words = text.split()
    return len(words) >= MIN_WORDS or sum(not c.isascii() for c in text) >= MIN_CJK_CHARS


def topics(text: str) -> list[str]:
    """The content words of ``text``, stemmed, Korean through the glossary; in order, repeated."""
    found = []
    for group in compile_query(text, max_terms=200).groups:
        english = next((term for term in group[1:] if term.isascii()), None)
        term = english or group[0]
        if (len(term) >= MIN_TOPIC_CHARS or not term.isascii()) and not term.isdigit():
            found.append(stem(term))
    return found


def files(text: str) -> list[str]:
    """File names mentioned in ``text`` (``memd/server.py`` → ``server.py``), in order."""
    return [match.group(1) for match in _FILE.finditer(text) if not match.group(1)[0].isdigit()]


def entities(text: str) -> list[str]:
    """Identifiers mentioned in ``text``, in order."""
    found = (next(group for group in match.groups() if group) for match in _ENTITY.finditer(text))
    return [entity for entity in found if not _FILE.fullmatch(entity)]  # a file name is a file


def decisions(text: str) -> list[str]:
    """The sentences of ``text`` with a decision cue ("let's use", "don't", "하기로", ...)."""
    found = []
    for sentence in _SENTENCE.split(text):
        sentence = " ".join(sentence.split())
        if 8 <= len(sentence) <= 400 and (_DECISION_EN.search(sentence) or _DECISION_KO.search(sentence)):
            found.append(sentence)
    return found


class Aspects(NamedTuple):
    """The salient topics, files and entities of some texts, most mentioned first."""

    topics: tuple[str, ...]
    files: tuple[str, ...]
    entities: tuple[str, ...]


def aspects(texts: Iterable[str], paths: Iterable[str] = (), k: int = 12) -> Aspects:
    """The ``k`` most mentioned topics, files and entities of ``texts`` (and of ``paths``, the
    files an event touched, counted once each)."""
    counted: tuple[Counter[str], Counter[str], Counter[str]] = (Counter(), Counter(), Counter())
    for text in texts:
        counted[0].update(topics(text))
        counted[1].update(files(text))
        counted[2].update(entity.lower() for entity in entities(text))
    counted[1].update(path.replace("\\", "/").rsplit("/", 1)[-1] for path in paths if path)
    return Aspects(*(tuple(word for word, _ in counter.most_common(k)) for counter in counted))
