"""smart_search: when to expand the index by itself, decided from the hits' confidences.

The rules are the seed design's, in its order; the first that matches fires:

    single          top >= 0.92 and no other hit >= 0.45      → timeline + details of the top hit
    clear_winner    top >= 0.85 and a gap >= 0.10 to the next → timeline + details of the top hit
    cluster         3+ hits >= 0.80                           → timelines of the top 3
    low_confidence  top < 0.45                                → the index only, flagged
    index_only      anything else                             → the index only

Thresholds against memd's calibrated confidence (``rank.py``): it is a noisy-OR of
lexical coverage (at most 0.9 alone) and semantic similarity, and the golden sets put
their no-match traps below 0.45 (``min_confidence``) and expected hits above it.  So:

- *single*: 0.92 is reachable only with both kinds of evidence (keywords alone stop at
  0.9): a memory that has the query's words and its meaning.  The seed's "exactly one
  result" becomes "no other hit is even confident" (>= 0.45): memd always returns its
  nearest neighbours, so a count of results says nothing.
- *clear_winner*: 0.85 is every query word found plus some semantic support (or a
  phrase match); a 0.10 gap is two concepts' worth of coverage ahead of the next.
- *cluster*: three hits at 0.80 are three memories that all have most of the words:
  a topic with history, where the timelines tell the story better than one detail.
- *low_confidence*: the seed's 0.7 was for its own scores; memd's calibrated line
  between "about it" and "not about it" is ``min_confidence``, so that is the line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = ["Expansion", "choose"]

SINGLE: Final = 0.92
CLEAR_WINNER: Final = 0.85
CLEAR_GAP: Final = 0.10
CLUSTER: Final = 0.80
CLUSTER_SIZE: Final = 3


class Expansion(NamedTuple):
    rule: str
    reason: str
    timelines: int
    """How many of the top hits get a timeline."""
    details: int
    """How many of the top hits get their details."""


def choose(confidences: Sequence[float], min_confidence: float = 0.45) -> Expansion:
    """The expansion for hits of these confidences (best first)."""
    if not confidences:
        return Expansion("low_confidence", "no hits", 0, 0)
    top = confidences[0]
    second = confidences[1] if len(confidences) > 1 else 0.0
    if top >= SINGLE and second < min_confidence:
        return Expansion("single", f"one sure hit ({top:.2f}), no other above {min_confidence:.2f}", 1, 1)
    if top >= CLEAR_WINNER and top - second >= CLEAR_GAP:
        return Expansion("clear_winner", f"top hit {top:.2f} leads the next ({second:.2f}) by {top - second:.2f}", 1, 1)
    sure = sum(c >= CLUSTER for c in confidences)
    if sure >= CLUSTER_SIZE:
        return Expansion("cluster", f"{sure} hits at {CLUSTER:.2f} or more: timelines of the top 3", CLUSTER_SIZE, 0)
    if top < min_confidence:
        return Expansion("low_confidence", f"top hit {top:.2f} is below {min_confidence:.2f}: likely unrelated", 0, 0)
    return Expansion("index_only", f"top hit {top:.2f}: no rule to expand, the index lets you choose", 0, 0)
