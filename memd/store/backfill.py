"""What schema 14 derives, for the events stored before it: their links to their neighbours
(``neighbours.link``) and the entities they name (``entities.record``), a batch at a time.

Migration 14 only notes which ids are left (``settings['backfill_schema_14']``: the first still
to do and the last); the daemon serves from the start, and ``memd.services.backfill`` calls
``step`` on the writer until nothing is left: at 100k events a migration doing it all at once
kept the daemon from answering for over a minute.  Each step is one transaction that moves the
mark with the rows it wrote, so a daemon stopped halfway goes on where it was.  Search works
meanwhile: an old event is found by its own words until its neighbours join it.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from .entities import record
from .neighbours import link

__all__ = ["KEY", "left", "step"]

KEY: Final = "backfill_schema_14"


def _mark(conn: sqlite3.Connection) -> tuple[int, int] | None:
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (KEY,)).fetchone()
    if row is None:
        return None
    first, last = (int(part) for part in str(row[0]).split())
    return first, last


def left(conn: sqlite3.Connection) -> int:
    """Events stored before schema 14 not linked and read for entities yet."""
    mark = _mark(conn)
    if mark is None:
        return 0
    return int(conn.execute("SELECT count(*) FROM events WHERE id BETWEEN ? AND ?", mark).fetchone()[0])


def step(conn: sqlite3.Connection, batch: int) -> int:
    """Derive the next ``batch`` events (inside the caller's transaction); the events left."""
    mark = _mark(conn)
    if mark is None:
        return 0
    first, last = mark
    rows = conn.execute(
        "SELECT id, session_id, kind, tool, text, meta FROM events WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?",
        (first, last, batch),
    ).fetchall()
    for event_id, session_id, kind, tool, text, meta in rows:
        link(conn, event_id, session_id, kind, late=True)
        record(conn, event_id, kind, tool, text, meta, session_id)
    if len(rows) < batch:
        conn.execute("DELETE FROM settings WHERE key = ?", (KEY,))
        return 0
    following = rows[-1][0] + 1
    conn.execute("UPDATE settings SET value = ? WHERE key = ?", (f"{following} {last}", KEY))
    return int(conn.execute("SELECT count(*) FROM events WHERE id BETWEEN ? AND ?", (following, last)).fetchone()[0])
