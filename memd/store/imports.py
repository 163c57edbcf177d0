"""What an import asks the store before and after it stores a batch (``memd.services.importer``):
which events are stored already, and the summaries of the sessions it finished."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from .events import refresh_snapshot, refresh_summary

__all__ = ["same_text_stored", "stored_keys", "summarize_session"]

_SAME_TEXT = "SELECT 1 FROM events WHERE session_id = ? AND +kind = ? AND text = ? LIMIT 1"
"""``+kind``: a session has few events, a kind many: SQLite must search the session's index."""


def stored_keys(conn: sqlite3.Connection, keys: Sequence[str]) -> set[str]:
    """Which of the idempotency ``keys`` name an event stored already."""
    marks = ",".join("?" * len(keys))
    return {row[0] for row in conn.execute(f"SELECT idem_key FROM events WHERE idem_key IN ({marks})", keys)}


def same_text_stored(conn: sqlite3.Connection, session: str, kind: str, text: str) -> bool:
    """Whether the session has an event of ``kind`` with exactly ``text`` already."""
    return conn.execute(_SAME_TEXT, (session, kind, text)).fetchone() is not None


def summarize_session(conn: sqlite3.Connection, session: str, now: float) -> None:
    """Recompute a finished session's summary and snapshot, if memd knows the session (in
    the caller's transaction)."""
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session,)).fetchone():
        refresh_summary(conn, session, None, now)
        refresh_snapshot(conn, session, None, now)
