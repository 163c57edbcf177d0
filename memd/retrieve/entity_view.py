"""What memd knows of an entity, as ``memctl entities``, the MCP tool and the viewer show it.

The store answers the questions (``memd.store.entities``); this turns its answers into the
protocol's lines: the most mentioned entities, or every entity known by a name with where it
was seen, what it goes with and the events that name it (each a timeline line with its
citation id).  Runs in a reader thread, like the search lanes.
"""

from __future__ import annotations

import sqlite3

from ..protocol import EntityDetail, EntityInfo, EntityLink
from ..store import entities
from ..store.layers import event_rows
from .layers import entry

__all__ = ["details", "most_mentioned"]


def most_mentioned(conn: sqlite3.Connection, kind: str | None, limit: int, project_id: int | None) -> list[EntityInfo]:
    return [
        EntityInfo(name=named.name, kind=named.kind, mentions=count)
        for named, count in entities.listing(conn, kind, limit, project_id)
    ]


def details(
    conn: sqlite3.Connection, name: str, kind: str | None, limit: int, project_id: int | None
) -> list[EntityDetail]:
    """Every entity known by ``name`` that is named in ``project_id`` (None: anywhere), the most
    mentioned first."""
    found = []
    for named in entities.find(conn, name, kind):
        about = entities.about(conn, named.id, limit, project_id)
        if about is None:
            continue
        rows = {row.id: row for row in event_rows(conn, about.events)}
        found.append(
            EntityDetail(
                name=about.name,
                kind=about.kind,
                aliases=about.aliases,
                mentions=about.mentions,
                sessions=about.sessions,
                first_seen=about.first_seen,
                last_seen=about.last_seen,
                related=[EntityLink(name=r.name, kind=r.kind, how=r.how, count=r.count) for r in about.related],
                events=[entry(rows[event_id]) for event_id in about.events if event_id in rows],
            )
        )
    return sorted(found, key=lambda detail: -detail.mentions)
