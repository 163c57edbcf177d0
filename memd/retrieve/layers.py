"""Progressive retrieval: resolve an id, the timeline around a memory (layer 2), its
details (layer 3).  Layer 1, the index, is ``Retriever.search``.

Every function here takes a plain ``sqlite3`` connection and runs in a reader thread
(``Readers.run``), like the search lanes; the SQL is ``memd.store.layers``'s, this module
turns its rows into the protocol's entries and details.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

from ..capture.text import parse_meta, strings
from ..cite import parse
from ..protocol import Detail, EntityInfo, Entry, TimelineResult
from ..store.citations import event_of
from ..store.entities import of_event
from ..store.layers import EventRow, event_rows, known_event, neighbour_cite, neighbours
from .digest import files_of, preview

__all__ = ["MAX_WINDOW", "details", "entry", "resolve", "resolve_all", "timeline"]

MAX_WINDOW: Final = 50
"""Most events a timeline shows on either side of its target."""


def resolve(conn: sqlite3.Connection, ref: str) -> int | None:
    """The event a reference names: a citation id in any of its forms, or an event id
    (``123``, ``#123``).  A reference that could be either is a citation id first."""
    if (cite := parse(ref)) is not None and (event_id := event_of(conn, cite)) is not None:
        return event_id
    number = ref.strip().removeprefix("#")
    if number.isdigit() and len(number) < 19 and known_event(conn, int(number)):
        return int(number)
    return None


def resolve_all(conn: sqlite3.Connection, refs: Sequence[str]) -> list[int | None]:
    """``resolve`` for each reference, in one call."""
    return [resolve(conn, ref) for ref in refs]


def entry(row: EventRow, target: bool = False) -> Entry:
    """A timeline line of an event."""
    return Entry(
        id=row.id,
        cite=row.cite or "",
        kind=row.kind,
        tool=row.tool,
        client_ts=row.client_ts,
        preview=preview(row.kind, row.title, row.text),
        target=target,
    )


def timeline(conn: sqlite3.Connection, event_id: int, before: int, after: int) -> TimelineResult | None:
    """The target and up to ``before``/``after`` events of its session around it, oldest first.

    Derived events (summary, snapshot) are left out around a target: they sit at their
    session's first position but describe all of it.
    """
    found = event_rows(conn, [event_id])
    if not found:
        return None
    row = found[0]
    target = entry(row, target=True)
    if row.session_id is None:
        return TimelineResult(target=target, session_id=None, entries=[target])
    before, after = max(0, min(MAX_WINDOW, before)), max(0, min(MAX_WINDOW, after))
    earlier, later = neighbours(conn, row.session_id, event_id, before, after)
    entries = [entry(r) for r in earlier] + [target] + [entry(r) for r in later]
    return TimelineResult(target=target, session_id=row.session_id, entries=entries)


def details(conn: sqlite3.Connection, event_ids: Sequence[int], entities: bool = False) -> dict[int, Detail]:
    """The full details of events (as stored: privacy filtering happened before), by id,
    with the citation ids of their neighbours in the session, and with ``entities`` the
    entities each names (counting their mentions costs a read per entity: the prompt's hook,
    which renders no entity, asks without)."""
    found = {}
    for row in event_rows(conn, event_ids):
        meta = parse_meta(row.meta)
        session = row.session_id
        found[row.id] = Detail(
            id=row.id,
            cite=row.cite or "",
            kind=row.kind,
            tool=row.tool,
            title=row.title,
            text=row.text,
            session_id=session,
            project=row.root,
            client_ts=row.client_ts,
            importance=row.importance,
            agent=row.agent,
            files=files_of(meta),
            tools=[row.tool] if row.tool else strings(meta.get("tools"))[:10],
            previous=neighbour_cite(conn, session, row.id, later=False) if session else None,
            next=neighbour_cite(conn, session, row.id, later=True) if session else None,
            entities=[EntityInfo(name=n.name, kind=n.kind, mentions=c) for n, c in of_event(conn, row.id)]
            if entities
            else [],
        )
    return found
