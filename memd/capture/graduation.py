"""Graduation: memories that keep being used climb levels L0 → L4.

A memory's metrics come from its uses (``store/usage.py``): how many, the best
retrieval confidence it was found with, in how many sessions beyond the first, and
when last.  The thresholds are the seed's (each level needs all four, and every level
below it)::

    level  accesses  confidence  other sessions  last use within
    L1     1         0.50        0               30 days
    L2     3         0.70        1               60 days
    L3     5         0.85        2               90 days
    L4     10        0.92        3               180 days

A use by id (details, a timeline, a quote check) counts as confidence 1.0: someone
asked for that very memory.  A block injected at session start has no query, so no
confidence.  The store applies it as each use is logged (``store/usage.py``: the metrics are
updated in place, constant work however often a memory was used before), so the rule lives
here, below the store, with the other derivations applied at write time.  The level is a
small ranking boost (``retrieve/rank.py``) and protects a memory from retention.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["THRESHOLDS", "Threshold", "level"]

DAY: Final = 86400.0


class Threshold(NamedTuple):
    accesses: int
    confidence: float
    other_sessions: int
    within_days: float


THRESHOLDS: Final = (
    Threshold(1, 0.50, 0, 30),
    Threshold(3, 0.70, 1, 60),
    Threshold(5, 0.85, 2, 90),
    Threshold(10, 0.92, 3, 180),
)


def level(accesses: int, confidence: float | None, sessions: int, idle_days: float) -> int:
    """The level (0-4) that these metrics earn; ``sessions`` counts distinct sessions."""
    reached = 0
    for threshold in THRESHOLDS:
        if (
            accesses < threshold.accesses
            or (confidence or 0.0) < threshold.confidence
            or sessions - 1 < threshold.other_sessions
            or idle_days > threshold.within_days
        ):
            break
        reached += 1
    return reached
