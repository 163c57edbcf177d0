"""smart_search: when to expand the index by itself, decided from the hits' confidences.

The rules are the seed design's, in its order; the first that matches fires:

    single          top >= 0.75 and no other hit >= 0.45      → timeline + details of the top hit
    clear_winner    top >= 0.60 and a gap >= 0.20 to the next → timeline + details of the top hit
    cluster         3+ hits >= 0.60                           → timelines of the top 3
    low_confidence  top < 0.45                                → the index only, flagged
    index_only      anything else                             → the index only

Thresholds against memd's confidence (``model.py``), a calibrated probability: of the hits
stated at 0.75, about three in four were the answer on the evaluation sets (the reliability
table in BENCHMARKS.md, from ``bench/fit.py``).  So:

- *single*: 0.75 is a hit that is the answer three times in four, and no other hit reaches
  ``min_confidence``: there is one answer, and its details are worth their tokens.  memd
  always returns its nearest neighbours, so a count of results says nothing.
- *clear_winner*: at 0.60 a hit is more often the answer than not; 0.20 ahead of the next, it
  is the likelier answer by far.
- *cluster*: three hits at 0.60 are three memories each more likely about it than not: a topic
  with history, where the timelines tell the story better than one detail.
- *low_confidence*: ``min_confidence`` (0.45): below it a hit is the answer less than half the
  time; of the hits at or above it, more than eight in ten were.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = ["Expansion", "choose"]

SINGLE: Final = 0.75
CLEAR_WINNER: Final = 0.60
CLEAR_GAP: Final = 0.20
CLUSTER: Final = 0.60
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
