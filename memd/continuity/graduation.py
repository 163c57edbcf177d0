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
confidence.  Each use updates the metrics in place (``count_use``: constant work, however
often a memory was used before).  The level is a small ranking boost (``retrieve/rank.py``)
and, later, protects a memory from retention.
"""

from __future__ import annotations

import sqlite3
from typing import Final, NamedTuple

__all__ = ["THRESHOLDS", "Threshold", "count_use", "level"]

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


def count_use(
    conn: sqlite3.Connection, event_id: int, session: str | None, confidence: float | None, now: float
) -> None:
    """Add one use to a memory's metrics and level (inside the caller's transaction, before the
    use itself is logged: whether its session is new is read from the log)."""
    new_session = (
        session is not None
        and not conn.execute(
            "SELECT 1 FROM citation_usage WHERE event_id = ? AND session_id = ? LIMIT 1", (event_id, session)
        ).fetchone()
    )
    row = conn.execute(
        "SELECT accesses, best_confidence, sessions FROM memory_levels WHERE event_id = ?", (event_id,)
    ).fetchone()
    accesses, best, sessions = row if row else (0, None, 0)
    accesses += 1
    sessions += new_session
    if confidence is not None:
        best = confidence if best is None else max(best, confidence)
    conn.execute(
        "INSERT INTO memory_levels (event_id, level, accesses, best_confidence, sessions, last_access)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(event_id) DO UPDATE SET level = excluded.level,"
        " accesses = excluded.accesses, best_confidence = excluded.best_confidence,"
        " sessions = excluded.sessions, last_access = excluded.last_access",
        (event_id, level(accesses, best, max(sessions, 1), 0.0), accesses, best, sessions, now),
    )
