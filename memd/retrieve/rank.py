"""Rank fusion, evidence and the order of hits: pure functions, no IO.

**Fusion.** Each lane (keyword, trigram, substring, context, entity, vector) ranks its
candidates; a candidate's fused score is weighted reciprocal rank fusion,
``sum(w / (k + rank))`` over the lanes that found it (k = 60), normalized by the score of a
candidate ranked first in every lane that ran.  Ranks, not raw scores, are fused: BM25 and
cosine live on different scales.  It orders the hits of a search that names its lanes (to see
what those lanes do); a search as users make it weighs each lane's best (``hits.shortlist``)
with the fitted model, and orders them by its confidence.

**Evidence** (``Matcher``): the share of the query's concepts an event holds (a concept is a
word with its translations; found = a word of the event starts with its stem), and whether it
holds the whole query as a phrase.

**Confidence** is a fitted probability that the hit is the query's evidence
(``memd.retrieve.model``), multiplied by ``penalty``: 0.4 for a memory that declares itself
obsolete or stale, and for compaction boilerplate (handoff headers, "continued from a previous
conversation"): such text matches many queries but is never current, so it stays searchable
while its confidence stays low.

**Order.** ``boosted``: the model's score (``memd.retrieve.model``, penalty included) plus
ln(1 + 0.05 · recency + 0.03 · importance + 0.03 · level), recency = 2^(-age / half-life),
importance and graduation level in [0, 1]: where a confidence grows as e^score, what multiplying it
by a few percent would do.  The order is the score's, not the confidence's: a calibration is flat
where its data could not tell hits apart, and there recency alone would decide.  Boosts break
near-ties and never lift a hit over one with clearly better evidence.

**One digest per session.** A session's summary and its snapshot tell the same story
from two angles; in a result list only the better-ranked of them takes a place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, NamedTuple

from ..query import Query, has_cjk, stem

__all__ = [
    "Evidence",
    "Matcher",
    "boosted",
    "fuse",
    "one_digest_per_session",
    "penalty",
    "snippet",
    "unmarked",
]

STALE_PENALTY: Final = 0.4

_STALE = re.compile(
    r"^\W*(?:obsolete|outdated|superseded|stale)\b"
    r"|\b(?:no longer (?:valid|current|accurate|applies|true)|should not be (?:used|injected))\b",
    re.IGNORECASE,
)
_NOISE = re.compile(
    r"^\W*(?:\[CONTEXT COMPACTION|This session is being continued from a previous conversation"
    r"|\[Your active task list was preserved|Caveat: The messages below were generated)",
    re.IGNORECASE,
)


LANE_WEIGHTS: Final = {"vector": 2.0}
"""How much a lane's ranks count in the fusion (1 unless named): the three lexical lanes
(keyword, trigram, substring) mostly agree, so unweighted they would outvote the one vector lane
three to one (chosen on memd's coding-memory set in issue 19, when fusion ordered every search)."""


def fuse(
    lanes: Mapping[str, Sequence[int]], k: int = 60, weights: Mapping[str, float] = LANE_WEIGHTS
) -> dict[int, float]:
    """Weighted reciprocal rank fusion of ranked id lists, normalized to [0, 1] (1 = first everywhere)."""
    ideal = sum(weights.get(lane, 1.0) / (k + 1) for lane, ranked in lanes.items() if ranked)
    fused: dict[int, float] = {}
    for lane, ranked in lanes.items():
        weight = weights.get(lane, 1.0)
        for rank, event_id in enumerate(ranked, 1):
            fused[event_id] = fused.get(event_id, 0.0) + weight / (k + rank)
    return {event_id: value / ideal for event_id, value in fused.items()} if ideal else {}


class Evidence(NamedTuple):
    coverage: float
    matched: tuple[str, ...]
    """The query concepts found (as typed in the query)."""
    phrase: bool


def _prefix(term: str) -> str:
    """What a word of a hit must start with to count as ``term``: its stem, or the
    whole word when the stem is too short to be specific.  A Korean word is its own
    prefix: particles and endings follow it ("확인" counts in "확인했다")."""
    if has_cjk(term):
        return re.escape(term)
    root = stem(term)
    if len(root) < 3:
        return re.escape(term) + r"\b"
    if root.endswith("y"):  # retry: retries, retried
        return re.escape(root[:-1]) + "(?:y|ie)"
    return re.escape(root)


class Matcher:
    """The compiled form of a query for measuring evidence in many texts."""

    def __init__(self, query: Query) -> None:
        self.query = query
        self.groups = query.groups
        self._patterns = [re.compile(r"\b(?:" + "|".join(_prefix(t) for t in group) + ")") for group in self.groups]
        # One pass over a text finds where any concept starts (``evidence``).
        self._any = re.compile("|".join(pattern.pattern for pattern in self._patterns))
        typed = " ".join(re.findall(r"[^\W_]+", query.text.casefold()))
        self._phrase = typed if len(typed.split()) >= 2 else ""

    def evidence(self, text: str) -> Evidence:
        folded = text.casefold().replace("_", " ")  # as the tokenizers see it: snake_case is two words
        left = dict(enumerate(self._patterns))
        for match in self._any.finditer(folded) if left else ():
            # More than one concept may start here ("log" and "login" in "login"): ask each.
            left = {i: pattern for i, pattern in left.items() if not pattern.match(folded, match.start())}
            if not left:
                break
        matched = tuple(group[0] for i, group in enumerate(self.groups) if i not in left)
        # A text holding the phrase holds each of its words: only then is it worth looking for.
        whole = len(matched) == len(self.groups)
        if whole and self._phrase and self._phrase in " ".join(re.findall(r"[^\W_]+", folded)):
            return Evidence(1.0, tuple(group[0] for group in self.groups), True)
        return Evidence(len(matched) / len(self.groups) if self.groups else 0.0, matched, False)


def penalty(text: str) -> float:
    """Down-weight for text that says it is stale, or is compaction boilerplate."""
    head = text[:400]
    return STALE_PENALTY if _NOISE.search(head) or _STALE.search(head) else 1.0


def boosted(score: float, age_days: float, importance: int, half_life_days: float, level: int = 0) -> float:
    """The order of hits: the model's ``score`` lifted a little by recency, importance and level."""
    recency = math.pow(2.0, -max(0.0, age_days) / half_life_days)
    weight = min(max(importance, 0), 4) / 4
    graduated = min(max(level, 0), 4) / 4
    return score + math.log1p(0.05 * recency + 0.03 * weight + 0.03 * graduated)


SESSION_DIGESTS: Final = frozenset({"session_summary", "snapshot"})


def one_digest_per_session(hits: Sequence[tuple[str, str | None]]) -> list[bool]:
    """For (kind, session) pairs ranked best first: whether each keeps its place (module
    docstring).  Everything but a session's second digest does."""
    seen: set[str] = set()
    keep = []
    for kind, session in hits:
        digest_of = session if kind in SESSION_DIGESTS else None
        keep.append(digest_of is None or digest_of not in seen)
        if digest_of is not None:
            seen.add(digest_of)
    return keep


def _matching(terms: Iterable[str]) -> re.Pattern[str] | None:
    """The words of a hit that count as one of ``terms``; None for no terms."""
    prefixes = [_prefix(t) for t in terms]
    return re.compile(r"\b(?:" + "|".join(prefixes) + r")\w*", re.IGNORECASE) if prefixes else None


def snippet(text: str, terms: Iterable[str], width: int = 160) -> str:
    """About ``width`` characters of ``text`` around the first matched term, terms in [brackets]."""
    flat = " ".join(text.split())
    pattern = _matching(terms)
    if pattern is None:
        return flat[:width] + ("…" if len(flat) > width else "")
    first = pattern.search(flat)
    start = max(0, (first.start() if first else 0) - width // 3)
    window = flat[start : start + width]
    marked = pattern.sub(lambda m: f"[{m.group(0)}]", window)
    return ("…" if start else "") + marked + ("…" if start + width < len(flat) else "")


def unmarked(snippet_text: str, terms: Iterable[str]) -> list[tuple[str, bool]]:
    """A ``snippet`` as its pieces, each with whether it is a matched term: the brackets that
    mark them taken off, a bracket of the text itself kept (the viewer highlights the matches)."""
    pattern = _matching(terms)
    if pattern is None:
        return [(snippet_text, False)] if snippet_text else []
    pieces: list[tuple[str, bool]] = []
    at = 0
    for found in re.finditer(r"\[(" + pattern.pattern + r")\]", snippet_text, re.IGNORECASE):
        pieces += [(snippet_text[at : found.start()], False), (found.group(1), True)]
        at = found.end()
    pieces.append((snippet_text[at:], False))
    return [(text, match) for text, match in pieces if text]
