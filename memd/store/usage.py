"""Citation usage: every time a memory reached an agent or a person, and how.

    injected   put into an agent's context by a hook (SessionStart, UserPromptSubmit)
    resolved   its details read, or a quote checked against it
    expanded   a timeline shown around it

Rows carry ids, a session and a time, never content.  They answer "what did this
session already get" (so a prompt never re-injects it) and "which memories are used"
(``memctl stats``; graduation builds on it later).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Final

from ..protocol import Cited

__all__ = ["HOW", "injected", "most_cited", "record", "totals"]

HOW: Final = ("injected", "resolved", "expanded")


def record(conn: sqlite3.Connection, event_ids: Iterable[int], session: str | None, how: str, now: float) -> int:
    """Log one use of each event (one transaction); return the rows written."""
    if how not in HOW:
        raise ValueError(f"unknown usage {how!r}: one of {', '.join(HOW)}")
    rows = [(event_id, session, now, how) for event_id in dict.fromkeys(event_ids)]
    if not rows:
        return 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        # An id may name an event deleted since it was read: such a use is not kept.
        conn.executemany(
            "INSERT INTO citation_usage (event_id, session_id, used_at, how)"
            " SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM events WHERE id = ?1)",
            rows,
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return len(rows)


def injected(conn: sqlite3.Connection, session: str) -> set[int]:
    """The events already injected into ``session``'s context."""
    return {
        row[0]
        for row in conn.execute(
            "SELECT event_id FROM citation_usage WHERE session_id = ? AND how = 'injected'", (session,)
        )
    }


def most_cited(conn: sqlite3.Connection, limit: int, since: float | None = None) -> list[Cited]:
    """The memories used most (since ``since``), with how they were used."""
    rows = conn.execute(
        "SELECT u.event_id, c.cite, e.kind, e.title, count(*),"
        " sum(u.how = 'injected'), sum(u.how = 'resolved'), sum(u.how = 'expanded'),"
        " count(DISTINCT u.session_id), max(u.used_at)"
        " FROM citation_usage u JOIN events e ON e.id = u.event_id LEFT JOIN citations c ON c.event_id = u.event_id"
        " WHERE u.used_at >= ? GROUP BY u.event_id ORDER BY count(*) DESC, max(u.used_at) DESC LIMIT ?",
        (since or 0.0, limit),
    ).fetchall()
    return [
        Cited(
            id=r[0],
            cite=r[1] or "",
            kind=r[2],
            title=r[3],
            uses=r[4],
            injected=r[5],
            resolved=r[6],
            expanded=r[7],
            sessions=r[8],
            last_used=r[9],
        )
        for r in rows
    ]


def totals(conn: sqlite3.Connection, since: float | None = None) -> dict[str, int]:
    """Uses by kind since ``since``."""
    found = dict(
        conn.execute(
            "SELECT how, count(*) FROM citation_usage WHERE used_at >= ? GROUP BY how", (since or 0.0,)
        ).fetchall()
    )
    return {how: found.get(how, 0) for how in HOW}
