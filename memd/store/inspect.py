"""What the clients read of the database themselves, whether memd runs or not:
``memctl status`` with the daemon down, and ``memctl doctor``'s checks.

Each reads through ``reading``, a connection that cannot write (WAL: it never blocks the
daemon, nor the daemon it), and answers one question.  ``sqlite3.Error`` reaches the
caller, which says in its own words why the file could not be read.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "QuarantineRow",
    "count_events",
    "embedding_version",
    "integrity_problems",
    "latest_quarantined",
    "quarantined_by_stage",
    "reading",
]

QuarantineRow = tuple[float, str, str | None, int | None, str, str, str]
"""``(at, event, session_id, event_id, stage, error, reason)``: ids and causes, never content."""


@contextmanager
def reading(path: str, timeout: float = 2.0) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database at ``path``, closed afterwards."""
    conn = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True, timeout=timeout)
    try:
        yield conn
    finally:
        conn.close()


def count_events(conn: sqlite3.Connection) -> int:
    """How many events are stored."""
    (count,) = conn.execute("SELECT count(*) FROM events").fetchone()
    return int(count)


def integrity_problems(conn: sqlite3.Connection, most: int = 20) -> tuple[str, ...]:
    """What SQLite's ``quick_check`` finds wrong with the file (at most ``most``); () when nothing."""
    return tuple(row[0] for row in conn.execute(f"PRAGMA quick_check({int(most)})") if row[0] != "ok")


def quarantined_by_stage(conn: sqlite3.Connection) -> dict[str, int]:
    """How many events the writer could not store whole, per stage that failed."""
    return {stage: count for stage, count in conn.execute("SELECT stage, count(*) FROM quarantine GROUP BY stage")}


def latest_quarantined(conn: sqlite3.Connection, limit: int) -> list[QuarantineRow]:
    """The newest ``limit`` quarantine rows, newest first."""
    return conn.execute(
        "SELECT at, event, session_id, event_id, stage, error, reason FROM quarantine ORDER BY id DESC LIMIT ?",
        (limit,),
    ).fetchall()


def embedding_version(conn: sqlite3.Connection) -> str | None:
    """The embedding version (``model:dimensions``) the vectors were made with; None before
    anything was embedded."""
    (version,) = conn.execute("SELECT max(version) FROM embedding_version").fetchone()
    return None if version is None else str(version)
