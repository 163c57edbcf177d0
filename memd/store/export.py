"""Stored events as ``memctl export`` writes them, read straight from the database (the
daemon may be down): the reading half of ``restore.py``.

``snapshot`` holds one read transaction for the whole export, whatever the daemon
commits meanwhile; ``exported_events`` yields each event with what memd learned of it
(its uses by id, its graduation level), oldest first.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..protocol import ExportedEvent, ExportedLevel, ExportedUse

__all__ = ["exported_events", "snapshot"]

_EVENTS = (
    "SELECT coalesce(c.cite, ''), e.idem_key, e.event, e.kind, e.session_id, p.root, e.tool, e.title, e.text,"
    " e.meta, e.importance, e.client_ts, e.received_at, e.payload, e.id, e.agent,"
    " l.level, l.accesses, l.best_confidence, l.sessions, l.last_access"
    " FROM events e LEFT JOIN citations c ON c.event_id = e.id LEFT JOIN projects p ON p.id = e.project_id"
    " LEFT JOIN memory_levels l ON l.event_id = e.id"
)


@contextmanager
def snapshot(path: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database at ``path`` inside one read transaction."""
    conn = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True, timeout=5.0, isolation_level=None)
    try:
        conn.execute("BEGIN")
        yield conn
    finally:
        conn.close()


def exported_events(
    conn: sqlite3.Connection,
    project_id: int | None = None,
    since: float | None = None,
    event_ids: Sequence[int] | None = None,
) -> Iterator[ExportedEvent]:
    """Every stored event, oldest first; only ``project_id``'s, those from ``since`` on and
    those of ``event_ids``, when given."""
    where: list[str] = []
    args: list[object] = []
    if event_ids is not None:
        where.append("e.id IN (SELECT value FROM json_each(?))")
        args.append(json.dumps(list(event_ids)))
    if project_id is not None:
        where.append("e.project_id = ?")
        args.append(project_id)
    if since is not None:
        where.append("e.client_ts >= ?")
        args.append(since)
    sql = _EVENTS + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY e.id"
    for r in conn.execute(sql, args):
        yield ExportedEvent(
            cite=r[0], idem_key=r[1], event=r[2], kind=r[3], session_id=r[4], project=r[5], tool=r[6],
            title=r[7], text=r[8], meta=_json(r[9]), importance=r[10], client_ts=r[11], received_at=r[12],
            payload=r[13], uses=_uses(conn, r[14]), agent=r[15],
            level=None if r[16] is None else ExportedLevel(
                level=r[16], accesses=r[17], best_confidence=r[18], sessions=r[19], last_access=r[20],
            ),
        )  # fmt: skip


def _uses(conn: sqlite3.Connection, event_id: int) -> list[ExportedUse]:
    """The event's uses by id (injected, resolved, expanded), in the order they happened."""
    rows = conn.execute(
        "SELECT session_id, used_at, how FROM citation_usage WHERE event_id = ? ORDER BY id", (event_id,)
    )
    return [ExportedUse(*use) for use in rows]


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text
