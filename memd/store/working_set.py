"""The working set: each project's salient recent events, kept as events arrive.

An event joins when it is work (a prompt, a reply, a tool call that changed something,
a failure, a task change, a compaction summary) of importance 2 or more and at most
``hours`` old.  Each batch then trims the project's set: events older than ``hours``
leave, and beyond ``size`` the lowest scored leave, where

    score = importance * recency * access
    recency = 1 / (1 + age / 12 h)        access = 1 + min(uses, 10) / 10

so nothing is recomputed per request: the set is a table, read by consolidation and
by ``memctl endless status``.
"""

from __future__ import annotations

import sqlite3
from typing import Final, NamedTuple

__all__ = ["DEFAULT", "KINDS", "Limits", "Member", "admit", "members", "trim"]

KINDS: Final = frozenset(
    {"memory", "prompt", "assistant", "tool", "tool_error", "task_state", "compact_summary", "subagent_stop"}
)
HALF_DAY: Final = 43200.0
_SCORE: Final = (
    f"w.base * (1.0 / (1.0 + max(0.0, ? - w.at) / {HALF_DAY})) * (1.0 + min(coalesce(l.accesses, 0), 10) / 10.0)"
)


class Limits(NamedTuple):
    """``[endless] working_set_hours`` and ``working_set_size``."""

    hours: float = 24.0
    size: int = 100


DEFAULT: Final = Limits()


class Member(NamedTuple):
    event_id: int
    session_id: str | None
    score: float


def admit(
    conn: sqlite3.Connection, event_id: int, project_id: int | None, session: str | None, kind: str,
    importance: int, at: float, now: float, hours: float,
) -> bool:  # fmt: skip
    """Add an event to its project's working set if it belongs there; whether it did."""
    if kind not in KINDS or importance < 2 or now - at > hours * 3600:
        return False
    conn.execute(
        "INSERT OR IGNORE INTO working_set (event_id, project_id, session_id, base, at) VALUES (?, ?, ?, ?, ?)",
        (event_id, project_id, session, float(importance), at),
    )
    return True


def trim(conn: sqlite3.Connection, project_id: int | None, now: float, hours: float, size: int) -> None:
    """Drop the project's members older than ``hours``, then the lowest scored beyond ``size``."""
    conn.execute("DELETE FROM working_set WHERE project_id IS ? AND at < ?", (project_id, now - hours * 3600))
    (count,) = conn.execute("SELECT count(*) FROM working_set WHERE project_id IS ?", (project_id,)).fetchone()
    if count > size:
        conn.execute(
            "DELETE FROM working_set WHERE event_id IN (SELECT w.event_id FROM working_set w"
            f" LEFT JOIN memory_levels l ON l.event_id = w.event_id WHERE w.project_id IS ? ORDER BY {_SCORE}, w.at"
            " LIMIT ?)",
            (project_id, now, count - size),
        )


def members(conn: sqlite3.Connection, project_id: int, now: float, session: str | None = None) -> list[Member]:
    """The project's working set (or one session's part of it), best scored first."""
    where = " AND w.session_id = ?" if session else ""
    return [
        Member(*row)
        for row in conn.execute(
            f"SELECT w.event_id, w.session_id, {_SCORE} FROM working_set w"
            f" LEFT JOIN memory_levels l ON l.event_id = w.event_id WHERE w.project_id = ?{where} ORDER BY 3 DESC",
            (now, project_id, *([session] if session else [])),
        )
    ]
