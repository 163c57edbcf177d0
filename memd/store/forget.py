"""Forgetting: delete memories for good, and everything that repeats them.

The schema's delete triggers already take an event's keyword and trigram rows, its
outbox row and stored vectors, its citation and usage, its graduation level, its
working-set membership and, for a consolidated memory, its consolidation rows.  What
triggers cannot do is here, in the same transaction:

- a consolidated memory that sums up a forgotten event is deleted with it: its text is
  its sources' text, so keeping it would keep what was to be forgotten;
- each session that lost an event gets its summary and snapshot recomputed from what is
  left (or loses them, and its row, when nothing is);
- the task tables are rebuilt from the task-state events that remain;
- the usearch keys of the deleted vectors are returned, for the caller to take out of
  the index (a cache of the ``vectors`` table, outside SQLite);
- ``forget_log`` records when, by which selector and how many: never what.

These run on the writer's connection (``Writer.call``).
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from ..capture.events import DERIVED_KINDS
from ..continuity import tasks
from .writer import refresh_snapshot, refresh_summary

__all__ = ["Plan", "forget", "plan"]


class Plan(NamedTuple):
    """What forgetting ``events`` takes with it."""

    events: list[int]
    """The events named, that exist."""
    derived: list[int]
    """Consolidated memories built from them (not already among ``events``)."""
    sessions: list[str]
    """Sessions that lose an event of their log: their summary and snapshot are recomputed."""


def _marks(values: list) -> str:
    return ",".join("?" * len(values))


def plan(conn: sqlite3.Connection, event_ids: list[int]) -> Plan:
    """What forgetting ``event_ids`` would delete (reads only: a dry run shows it)."""
    ids = sorted(set(event_ids))
    found = [row[0] for row in conn.execute(f"SELECT id FROM events WHERE id IN ({_marks(ids)})", ids)]
    derived = [
        row[0]
        for row in conn.execute(
            f"SELECT DISTINCT consolidation_id FROM consolidation_sources WHERE source_id IN ({_marks(found)})"
            " ORDER BY consolidation_id",
            found,
        )
        if row[0] not in set(found)
    ]
    sessions = [
        row[0]
        for row in conn.execute(
            f"SELECT DISTINCT session_id FROM events WHERE id IN ({_marks(found)}) AND session_id IS NOT NULL"
            f" AND kind NOT IN {DERIVED_KINDS!r} ORDER BY session_id",
            found,
        )
    ]
    return Plan(found, derived, sessions)


def forget(conn: sqlite3.Connection, planned: Plan, selector: str, now: float) -> list[int]:
    """Delete what ``planned`` names (inside the caller's transaction); the usearch keys of
    the vectors deleted with it.  ``selector`` says how the events were chosen ("ids")."""
    doomed = planned.events + planned.derived
    keys = [row[0] for row in conn.execute(f"SELECT id FROM vectors WHERE event_id IN ({_marks(doomed)})", doomed)]
    # Freed pages are overwritten with zeros, so the text does not linger in the file.
    conn.execute("PRAGMA secure_delete = ON")
    try:
        lost = conn.execute(
            f"SELECT session_id, count(*) FROM events WHERE id IN ({_marks(doomed)}) AND session_id IS NOT NULL"
            f" AND kind NOT IN {DERIVED_KINDS!r} GROUP BY session_id",
            doomed,
        ).fetchall()
        conn.execute(f"DELETE FROM events WHERE id IN ({_marks(doomed)})", doomed)
        conn.executemany("UPDATE sessions SET events = max(0, events - ?) WHERE id = ?", [(n, s) for s, n in lost])
        for session in planned.sessions:
            _recompute(conn, session, now)
        if conn.execute(
            f"SELECT 1 FROM tasks WHERE event_id IN ({_marks(doomed)})"
            f" UNION ALL SELECT 1 FROM task_history WHERE event_id IN ({_marks(doomed)}) LIMIT 1",
            doomed * 2,
        ).fetchone():
            tasks.rebuild(conn)
        conn.execute(
            "INSERT INTO forget_log (at, selector, events, derived) VALUES (?, ?, ?, ?)",
            (now, selector, len(planned.events), len(planned.derived)),
        )
    finally:
        conn.execute("PRAGMA secure_delete = OFF")
    return keys


def _recompute(conn: sqlite3.Connection, session: str, now: float) -> None:
    """The session's summary and snapshot, from the events it has left; none if it has none."""
    conn.execute("DELETE FROM events WHERE session_id = ? AND kind IN ('session_summary', 'snapshot')", (session,))
    row = conn.execute("SELECT project_id FROM sessions WHERE id = ?", (session,)).fetchone()
    left = f"SELECT 1 FROM events WHERE session_id = ? AND kind NOT IN {DERIVED_KINDS!r} LIMIT 1"
    if not conn.execute(left, (session,)).fetchone():
        conn.execute("DELETE FROM sessions WHERE id = ?", (session,))
        return
    project_id = row[0] if row else None
    conn.execute("UPDATE sessions SET summary = NULL WHERE id = ?", (session,))
    refresh_summary(conn, session, project_id, now)
    refresh_snapshot(conn, session, project_id, now)
