"""Progressive retrieval over one read connection: resolve an id, the timeline around a
memory (layer 2), its details (layer 3).  Layer 1, the index, is ``Retriever.search``.

Every function here takes a plain ``sqlite3`` connection and runs in a reader thread
(``Readers.run``), like the search lanes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

from ..capture.events import LOGGED
from ..capture.text import parse_meta, strings
from ..cite import parse
from ..protocol import Detail, Entry, TimelineResult
from .digest import files_of, preview

__all__ = ["MAX_WINDOW", "cites", "details", "resolve", "resolve_all", "timeline"]

MAX_WINDOW: Final = 50
"""Most events a timeline shows on either side of its target."""

_EVENT = (
    "SELECT e.id, c.cite, e.kind, e.tool, e.title, e.text, e.session_id, p.root, e.client_ts, e.importance, e.meta"
    " FROM events e LEFT JOIN citations c ON c.event_id = e.id LEFT JOIN projects p ON p.id = e.project_id"
)


def resolve(conn: sqlite3.Connection, ref: str) -> int | None:
    """The event a reference names: a citation id in any of its forms, or an event id
    (``123``, ``#123``).  A 6-character reference is a citation id first."""
    if (cite := parse(ref)) is not None:
        row = conn.execute("SELECT event_id FROM citations WHERE cite = ?", (cite,)).fetchone()
        if row:
            return row[0]
    number = ref.strip().removeprefix("#")
    if number.isdigit() and len(number) < 19:
        row = conn.execute("SELECT id FROM events WHERE id = ?", (int(number),)).fetchone()
        if row:
            return row[0]
    return None


def resolve_all(conn: sqlite3.Connection, refs: Sequence[str]) -> list[int | None]:
    """``resolve`` for each reference, in one call."""
    return [resolve(conn, ref) for ref in refs]


def cites(conn: sqlite3.Connection, event_ids: Sequence[int]) -> dict[int, str]:
    """The citation ids of events, by event id."""
    if not event_ids:
        return {}
    marks = ",".join("?" * len(event_ids))
    return dict(conn.execute(f"SELECT event_id, cite FROM citations WHERE event_id IN ({marks})", list(event_ids)))


def _entry(row: tuple[Any, ...], target: bool = False) -> Entry:
    event_id, cite, kind, tool, title, text, _session, _root, ts, _importance, _meta = row
    return Entry(
        id=event_id,
        cite=cite or "",
        kind=kind,
        tool=tool,
        client_ts=ts,
        preview=preview(kind, title, text),
        target=target,
    )


def timeline(conn: sqlite3.Connection, event_id: int, before: int, after: int) -> TimelineResult | None:
    """The target and up to ``before``/``after`` events of its session around it, oldest first.

    Derived events (summary, snapshot) are left out around a target: they sit at their
    session's first position but describe all of it.
    """
    row = conn.execute(_EVENT + " WHERE e.id = ?", (event_id,)).fetchone()
    if row is None:
        return None
    target = _entry(row, target=True)
    session = row[6]
    if session is None:
        return TimelineResult(target=target, session_id=None, entries=[target])
    before, after = max(0, min(MAX_WINDOW, before)), max(0, min(MAX_WINDOW, after))
    neighbours = f" WHERE e.session_id = ? AND e.{LOGGED} AND e.id {{}} ? ORDER BY e.id {{}} LIMIT ?"
    earlier = conn.execute(_EVENT + neighbours.format("<", "DESC"), (session, event_id, before)).fetchall()
    later = conn.execute(_EVENT + neighbours.format(">", "ASC"), (session, event_id, after)).fetchall()
    entries = [_entry(r) for r in reversed(earlier)] + [target] + [_entry(r) for r in later]
    return TimelineResult(target=target, session_id=session, entries=entries)


def details(conn: sqlite3.Connection, event_ids: Sequence[int]) -> dict[int, Detail]:
    """The full details of events (as stored: privacy filtering happened before), by id,
    with the citation ids of their neighbours in the session."""
    if not event_ids:
        return {}
    marks = ",".join("?" * len(event_ids))
    found = {}
    for row in conn.execute(_EVENT + f" WHERE e.id IN ({marks})", list(event_ids)):
        event_id, cite, kind, tool, title, text, session, root, ts, importance, meta_json = row
        meta = parse_meta(meta_json)
        found[event_id] = Detail(
            id=event_id,
            cite=cite or "",
            kind=kind,
            tool=tool,
            title=title,
            text=text,
            session_id=session,
            project=root,
            client_ts=ts,
            importance=importance,
            files=files_of(meta),
            tools=[tool] if tool else strings(meta.get("tools"))[:10],
            previous=_neighbour(conn, session, event_id, "<", "DESC"),
            next=_neighbour(conn, session, event_id, ">", "ASC"),
        )
    return found


def _neighbour(conn: sqlite3.Connection, session: str | None, event_id: int, op: str, order: str) -> str | None:
    if session is None:
        return None
    row = conn.execute(
        "SELECT c.cite FROM events e JOIN citations c ON c.event_id = e.id"
        f" WHERE e.session_id = ? AND e.{LOGGED} AND e.id {op} ? ORDER BY e.id {order} LIMIT 1",
        (session, event_id),
    ).fetchone()
    return row[0] if row else None
