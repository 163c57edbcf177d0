"""Consolidation's tables: the working-set events no consolidation took yet, and the record
of each consolidated memory (``consolidations``, ``consolidation_sources``).  The grouping
and the memory itself, and the pass that runs on the writer's thread, are
``continuity/consolidation.py``'s; the service that schedules it is ``services/consolidation.py``."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from ..capture.text import parse_meta, strings

__all__ = ["Source", "candidates", "is_consolidated", "record", "working_set_projects"]


class Source(NamedTuple):
    """A working-set event as consolidation reads it."""

    id: int
    cite: str
    kind: str
    title: str
    text: str
    """The head of the text (2,000 characters)."""
    files: tuple[str, ...]
    ts: float
    tool: str | None = None


def working_set_projects(conn: sqlite3.Connection) -> list[int]:
    """The projects with a working set."""
    return [row[0] for row in conn.execute("SELECT DISTINCT project_id FROM working_set") if row[0]]


def candidates(conn: sqlite3.Connection, project_id: int) -> list[Source]:
    """The project's working-set events that no consolidation has taken yet, oldest first."""
    return [
        Source(r[0], r[1], r[2], r[3], r[4], tuple(strings(parse_meta(r[5]).get("files"))), r[6], r[7])
        for r in conn.execute(
            "SELECT e.id, coalesce(c.cite, ''), e.kind, e.title, substr(e.text, 1, 2000), e.meta, e.client_ts, e.tool"
            " FROM working_set w JOIN events e ON e.id = w.event_id LEFT JOIN citations c ON c.event_id = e.id"
            " WHERE w.project_id = ? AND NOT EXISTS"
            " (SELECT 1 FROM consolidation_sources s WHERE s.source_id = w.event_id) ORDER BY e.id",
            (project_id,),
        )
    ]


def is_consolidated(conn: sqlite3.Connection, set_key: str) -> bool:
    """Whether this set of events (``consolidate.set_key``) was consolidated before."""
    return conn.execute("SELECT 1 FROM consolidations WHERE set_key = ?", (set_key,)).fetchone() is not None


def record(
    conn: sqlite3.Connection, event_id: int, set_key: str, confidence: float, sources: Sequence[int], now: float
) -> None:
    """Record that the memory ``event_id`` consolidates ``sources``."""
    conn.execute(
        "INSERT INTO consolidations (event_id, set_key, confidence, created_at) VALUES (?, ?, ?, ?)",
        (event_id, set_key, confidence, now),
    )
    conn.executemany(
        "INSERT INTO consolidation_sources (source_id, consolidation_id) VALUES (?, ?)",
        [(source, event_id) for source in sources],
    )
