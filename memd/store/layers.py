"""The SQL of progressive retrieval (``memd.retrieve.layers``): events by citation id or
id, a session's neighbours of an event, the citation ids of events.

Rows come back as ``EventRow``: the columns the timeline and the details read, with the
event's citation id and its project's root.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from ..capture.events import LOGGED

__all__ = ["EventRow", "cites", "event_rows", "known_event", "neighbour_cite", "neighbours"]


class EventRow(NamedTuple):
    id: int
    cite: str | None
    kind: str
    tool: str | None
    title: str
    text: str
    session_id: str | None
    root: str | None
    client_ts: float
    importance: int
    meta: str
    agent: str


_EVENT = (
    "SELECT e.id, c.cite, e.kind, e.tool, e.title, e.text, e.session_id, p.root, e.client_ts, e.importance, e.meta,"
    " e.agent"
    " FROM events e LEFT JOIN citations c ON c.event_id = e.id LEFT JOIN projects p ON p.id = e.project_id"
)


def known_event(conn: sqlite3.Connection, event_id: int) -> bool:
    """Whether an event of this id is stored."""
    return conn.execute("SELECT id FROM events WHERE id = ?", (event_id,)).fetchone() is not None


def cites(conn: sqlite3.Connection, event_ids: Sequence[int]) -> dict[int, str]:
    """The citation ids of events, by event id."""
    if not event_ids:
        return {}
    marks = ",".join("?" * len(event_ids))
    return dict(conn.execute(f"SELECT event_id, cite FROM citations WHERE event_id IN ({marks})", list(event_ids)))


def event_rows(conn: sqlite3.Connection, event_ids: Sequence[int]) -> list[EventRow]:
    """The stored events of these ids (in no particular order; a missing id is left out)."""
    if not event_ids:
        return []
    marks = ",".join("?" * len(event_ids))
    return [EventRow(*row) for row in conn.execute(_EVENT + f" WHERE e.id IN ({marks})", list(event_ids))]


def neighbours(conn: sqlite3.Connection, session: str, event_id: int, before: int, after: int) -> tuple[
    list[EventRow], list[EventRow]
]:  # fmt: skip
    """Up to ``before`` logged events of ``session`` before ``event_id`` and ``after`` after it,
    each list oldest first (derived events left out)."""
    around = f" WHERE e.session_id = ? AND e.{LOGGED} AND e.id {{}} ? ORDER BY e.id {{}} LIMIT ?"
    earlier = conn.execute(_EVENT + around.format("<", "DESC"), (session, event_id, before)).fetchall()
    later = conn.execute(_EVENT + around.format(">", "ASC"), (session, event_id, after)).fetchall()
    return [EventRow(*r) for r in reversed(earlier)], [EventRow(*r) for r in later]


def neighbour_cite(conn: sqlite3.Connection, session: str, event_id: int, *, later: bool) -> str | None:
    """The citation id of the logged event of ``session`` just before (or, ``later``, just
    after) ``event_id``."""
    op, order = (">", "ASC") if later else ("<", "DESC")
    row = conn.execute(
        "SELECT c.cite FROM events e JOIN citations c ON c.event_id = e.id"
        f" WHERE e.session_id = ? AND e.{LOGGED} AND e.id {op} ? ORDER BY e.id {order} LIMIT 1",
        (session, event_id),
    ).fetchone()
    return str(row[0]) if row else None
