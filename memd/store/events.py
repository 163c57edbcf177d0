"""One event into the tables, with what is derived from it: its project and session rows,
its citation id, its tasks, the redaction totals; and the derived events of a session (its
summary and snapshot) or of a consolidation, stored or replaced in place.

Everything here runs inside the writer's transaction (``batch.write_batch``), or inside the
caller's for the other writers of events (restore, redact, forget, consolidation).
"""

from __future__ import annotations

import json
import sqlite3
from typing import NamedTuple

import msgspec

from ..capture.events import LOGGED
from ..capture.prepare import NewEvent
from ..capture.snapshot import plain, take
from ..capture.summary import SummaryRow, summarize
from ..protocol import CLAUDE_CODE
from ..query import has_cjk
from .citations import assign as assign_citation
from .entities import record as record_entities
from .neighbours import link as link_neighbours
from .state import session_rows
from .tasks import apply as apply_task_state
from .tasks import open_tasks

__all__ = [
    "Committed",
    "count_redactions",
    "insert_derived",
    "insert_event",
    "refresh_snapshot",
    "refresh_summary",
]


class Committed(NamedTuple):
    event_id: int
    duplicate: bool


_INSERT_EVENT = (
    "INSERT INTO events (idem_key, event, session_id, project_id, kind, tool, title, text, meta, payload,"
    " importance, client_ts, received_at, size, truncated, cjk, agent)"
    " VALUES (?, ?, ?, coalesce(?, (SELECT project_id FROM sessions WHERE id = ?)),"
    " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SESSION_COLUMNS = frozenset({"source", "model", "end_reason"})
_SESSION_AGENT = "SELECT agent FROM events WHERE session_id = ? ORDER BY id LIMIT 1"
"""The agent of a session, whose summary and snapshot are its too."""


_COMPACTIONS = "SELECT count(*) FROM events WHERE session_id = ? AND event = 'PostCompact'"
"""A session's compactions so far (``NewEvent.per_compaction``)."""


def insert_event(
    conn: sqlite3.Connection, event: NewEvent, project_id: int | None, *, derive: bool = True
) -> Committed:
    """Store ``event`` with its citation id and session row; ``derive``: and its tasks."""
    key = event.idem_key
    if event.per_compaction and event.session_id:  # the key of the session's next compaction's events
        (compactions,) = conn.execute(_COMPACTIONS, (event.session_id,)).fetchone()
        key = f"{key}:compaction:{compactions}"
    row = conn.execute(
        _INSERT_EVENT + " ON CONFLICT(idem_key) DO NOTHING RETURNING id, project_id",
        (
            key, event.event, event.session_id, project_id, event.session_id, event.kind, event.tool,
            event.title, event.text, event.meta, event.payload, event.importance, event.client_ts,
            event.received_at, event.size, event.truncated, has_cjk(event.title) or has_cjk(event.text),
            event.agent,
        ),
    ).fetchone()  # fmt: skip
    if row is None:
        (existing,) = conn.execute("SELECT id FROM events WHERE idem_key = ?", (key,)).fetchone()
        return Committed(existing, duplicate=True)
    assign_citation(conn, row[0], key, new=True)
    if derive:
        link_neighbours(conn, row[0], event.session_id, event.kind)
        record_entities(conn, row[0], event.kind, event.tool, event.text, event.meta, event.session_id)
    if derive and event.kind == "task_state":
        apply_task_state(conn, row[0], row[1], event.session_id, json.loads(event.meta), event.client_ts)
    if event.session_id:
        conn.execute(
            "INSERT INTO sessions (id, project_id, first_seen, last_seen, events, cwd) VALUES (?, ?, ?, ?, 1, ?)"
            " ON CONFLICT(id) DO UPDATE SET events = events + 1,"
            " last_seen = max(last_seen, excluded.last_seen),"
            " project_id = coalesce(project_id, excluded.project_id),"
            " cwd = coalesce(excluded.cwd, cwd)",
            (event.session_id, project_id, event.client_ts, event.client_ts, event.cwd),
        )
        for column, value in event.session.items():
            if column in _SESSION_COLUMNS:  # names from a fixed set, values bound
                conn.execute(f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, event.session_id))
    count_redactions(conn, event.redactions)
    return Committed(row[0], duplicate=False)


def count_redactions(conn: sqlite3.Connection, counts: dict[str, int]) -> None:
    """Add what a filtering removed (``secrets``, ``secret:<kind>``...) to the all-time totals."""
    conn.executemany(
        "INSERT INTO redaction_totals (name, total) VALUES (?, ?)"
        " ON CONFLICT(name) DO UPDATE SET total = total + excluded.total",
        [(name, n) for name, n in counts.items() if n],
    )


def refresh_summary(conn: sqlite3.Connection, session_id: str, project_id: int | None, now: float) -> None:
    """Recompute a session's summary: in ``sessions.summary`` and as a searchable event."""
    rows = [
        SummaryRow(kind, tool, title, json.loads(meta), ts)
        for kind, tool, title, meta, ts in conn.execute(
            "SELECT kind, tool, title, meta, client_ts FROM events"
            f" WHERE session_id = ? AND {LOGGED} ORDER BY client_ts, id",
            (session_id,),
        )
    ]
    if not rows:
        return
    summary = summarize(rows)
    conn.execute("UPDATE sessions SET summary = ? WHERE id = ?", (summary.line, session_id))
    title = f"Session summary: {summary.line}"[:300]
    insert_derived(
        conn, f"session_summary:{session_id}", session_id, project_id, "session_summary", title, summary.line,
        summary.meta, 2, rows[-1].ts, now,
    )  # fmt: skip


def refresh_snapshot(conn: sqlite3.Connection, session_id: str, project_id: int | None, now: float) -> None:
    """Take the session's working state (``capture.snapshot``) and store it as a derived event."""
    rows = session_rows(conn, session_id)
    if not rows:
        return
    if project_id is None:
        project_id = conn.execute("SELECT project_id FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
    snapshot = take(rows, open_tasks(conn, project_id, now), session_id, now)
    if snapshot.empty:
        return
    title = "Snapshot: " + (snapshot.goal[0].text if snapshot.goal else f"session {session_id[:8]}")
    meta = msgspec.to_builtins(snapshot)
    insert_derived(
        conn, f"snapshot:{session_id}", session_id, project_id, "snapshot", title[:300], plain(snapshot), meta, 1,
        rows[-1].ts, now,
    )  # fmt: skip


def insert_derived(
    conn: sqlite3.Connection, key: str, session_id: str | None, project_id: int | None, kind: str, title: str,
    text: str, meta: dict[str, object], importance: int, ts: float, now: float,
) -> int:  # fmt: skip
    """Store (or replace in place) the derived event of idempotency key ``key``; its id."""
    encoded = json.dumps(meta, ensure_ascii=False)
    agent = conn.execute(_SESSION_AGENT, (session_id,)).fetchone() if session_id else None
    (event_id,) = conn.execute(
        _INSERT_EVENT + " ON CONFLICT(idem_key) DO UPDATE SET title = excluded.title, text = excluded.text,"
        " cjk = excluded.cjk, meta = excluded.meta, client_ts = excluded.client_ts,"
        " received_at = excluded.received_at, size = excluded.size RETURNING id",
        (
            key, "memd", session_id, project_id, session_id, kind, None, title, text, encoded,
            encoded, importance, ts, now, len(encoded), False, has_cjk(title) or has_cjk(text),
            agent[0] if agent else CLAUDE_CODE,
        ),
    ).fetchone()  # fmt: skip
    assign_citation(conn, event_id, key)
    return int(event_id)
