"""What memd lists for people: events (forget, scan, gc), sessions (``memctl history``),
tasks (``memctl tasks``), and the small facts those listings need (a session's project,
an event's citation id).

Every function is a read on one connection, run by ``Readers.run`` in a worker thread.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Final

from ..protocol import EventRow, SessionInfo, TaskInfo

__all__ = [
    "EVENT_COLUMNS",
    "LIST_MAX",
    "cite_of",
    "event_row",
    "event_rows",
    "kind_counts",
    "listing",
    "session_list",
    "session_project",
    "task_list",
]

LIST_MAX: Final = 1000
"""Events a forget or gc reply lists (``total`` counts them all): a reply stays far below
the frame limit however many go."""

_EVENT_FIELDS: Final = (
    "id", "session_id", "project", "kind", "tool", "title", "importance", "received_at", "size",
    "event", "client_ts", "cite", "agent",
)  # fmt: skip
EVENT_COLUMNS: Final = (
    "e.id, e.session_id, p.root, e.kind, e.tool, e.title, e.importance, e.received_at, e.size,"
    " e.event, e.client_ts, coalesce(c.cite, ''), e.agent"
)
"""An ``EventRow``'s columns, over ``events e``, ``projects p`` and ``citations c`` joined."""
_SESSION_FIELDS: Final = ("id", "project", "first_seen", "last_seen", "events", "summary")


def event_row(row: Sequence[object]) -> EventRow:
    """The ``EventRow`` of a row of ``EVENT_COLUMNS``."""
    return EventRow(**dict(zip(_EVENT_FIELDS, row, strict=True)))  # type: ignore[arg-type]


def where_given(conditions: Iterable[tuple[str, object]]) -> tuple[list[str], list[object]]:
    """The clauses of ``(clause, value)`` pairs whose value is given (not None), and their values."""
    given = [(clause, value) for clause, value in conditions if value is not None]
    return [clause for clause, _ in given], [value for _, value in given]


def cite_of(conn: sqlite3.Connection, event_id: int) -> str:
    """The citation id of an event (without ``mem:``); "" for none."""
    row = conn.execute("SELECT cite FROM citations WHERE event_id = ?", (event_id,)).fetchone()
    return str(row[0]) if row else ""


def kind_counts(conn: sqlite3.Connection, event_ids: list[int]) -> dict[str, int]:
    """How many of ``event_ids`` there are of each kind, the most common first."""
    return dict(
        conn.execute(
            "SELECT kind, count(*) FROM events WHERE id IN (SELECT value FROM json_each(?)) GROUP BY kind"
            " ORDER BY count(*) DESC, kind",
            (json.dumps(event_ids),),
        )
    )


def event_rows(conn: sqlite3.Connection, event_ids: list[int]) -> list[EventRow]:
    """The events ``event_ids`` names, as listed, in id order (gone ones left out)."""
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events e LEFT JOIN projects p ON p.id = e.project_id"
        " LEFT JOIN citations c ON c.event_id = e.id WHERE e.id IN (SELECT value FROM json_each(?)) ORDER BY e.id",
        (json.dumps(event_ids),),
    )
    return [event_row(row) for row in rows]


def listing(conn: sqlite3.Connection, event_ids: list[int]) -> tuple[list[EventRow], dict[str, int]]:
    """The first ``LIST_MAX`` of ``event_ids`` as rows, and how many there are of each kind."""
    return event_rows(conn, event_ids[:LIST_MAX]), kind_counts(conn, event_ids)


def session_list(
    conn: sqlite3.Connection, project_id: int | None, limit: int, *,
    agent: str | None = None, before: float | None = None, session: str | None = None,
) -> list[SessionInfo]:  # fmt: skip
    """The ``limit`` sessions last seen (of one project, or of all; with events of ``agent``;
    last seen before ``before``; or only ``session``), the latest first."""
    where, args = where_given((
        ("s.project_id = ?", project_id),
        ("s.last_seen < ?", before),
        ("s.id = ?", session),
        ("EXISTS (SELECT 1 FROM events a WHERE a.session_id = s.id AND a.agent = ?)", agent),
    ))  # fmt: skip
    rows = conn.execute(
        "SELECT s.id, p.root, s.first_seen, s.last_seen, s.events, coalesce(s.summary, ''),"
        " (SELECT json_group_array(agent) FROM (SELECT DISTINCT agent FROM events WHERE session_id = s.id))"
        " FROM sessions s LEFT JOIN projects p ON p.id = s.project_id"
        f" {'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY s.last_seen DESC LIMIT ?",
        [*args, limit],
    )
    return [SessionInfo(**dict(zip(_SESSION_FIELDS, r[:6], strict=True)), agents=json.loads(r[6])) for r in rows]


def session_project(conn: sqlite3.Connection, session: str) -> tuple[str | None, int | None] | None:
    """(project root, project id) of a session, either None when it has no project; None for
    a session memd has no record of."""
    row = conn.execute(
        "SELECT p.root, s.project_id FROM sessions s LEFT JOIN projects p ON p.id = s.project_id WHERE s.id = ?",
        (session,),
    ).fetchone()
    return (row[0], row[1]) if row else None


def task_list(conn: sqlite3.Connection, project_id: int, everything: bool) -> list[TaskInfo]:
    """A project's tasks (open ones only, unless ``everything``): in progress first, then
    pending, then by last change."""
    where = "" if everything else " AND t.status IN ('pending', 'in_progress')"
    return [
        TaskInfo(
            id=r[0],
            content=r[1],
            status=r[2],
            active_form=r[3],
            cite=r[4],
            session_id=r[5],
            created_at=r[6],
            updated_at=r[7],
            changes=r[8],
        )
        for r in conn.execute(
            "SELECT t.id, t.content, t.status, t.active_form, coalesce(c.cite, ''), t.session_id, t.created_at,"
            " t.updated_at, (SELECT count(*) FROM task_history h WHERE h.task_id = t.id)"
            f" FROM tasks t LEFT JOIN citations c ON c.event_id = t.event_id WHERE t.project_id = ?{where}"
            " ORDER BY t.status = 'in_progress' DESC, t.status = 'pending' DESC, t.updated_at DESC",
            (project_id,),
        )
    ]
