"""Reading continuity state: a session's rows and working state, the project's last snapshot
and sessions, what other sessions did since.  SQL over one read connection (``Readers.run``);
the writer reads a session's rows with ``session_rows`` too, to store its snapshot."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

import msgspec

from ..capture.events import LOGGED
from ..capture.snapshot import TEXT_HEAD, WINDOW, Row, Snapshot, take
from ..capture.text import parse_meta
from .tasks import open_tasks

__all__ = [
    "FORK_MATCH",
    "Recent",
    "SessionInfo",
    "Stored",
    "forked_from",
    "fresh",
    "latest",
    "latest_session",
    "session_info",
    "session_rows",
    "since",
]

FORK_MATCH = 3.0
"""Seconds between a session's last reply and the time a fork's SessionStart says the forked
session last replied (``seconds_since_last_response`` is whole seconds, and hooks fire late)."""


class Stored(NamedTuple):
    event_id: int
    cite: str
    snapshot: Snapshot


class Recent(NamedTuple):
    id: int
    cite: str
    kind: str
    title: str
    text: str
    ts: float
    session_id: str | None


class SessionInfo(NamedTuple):
    source: str | None
    prompts: int


_decode = msgspec.json.Decoder(Snapshot).decode


def session_rows(conn: sqlite3.Connection, session: str, window: int = WINDOW) -> list[Row]:
    """The latest ``window`` events of a session (derived ones left out), oldest first."""
    rows = conn.execute(
        f"SELECT e.id, coalesce(c.cite, ''), e.kind, e.tool, e.title, substr(e.text, 1, {TEXT_HEAD}), e.meta,"
        " e.client_ts FROM events e LEFT JOIN citations c ON c.event_id = e.id"
        f" WHERE e.session_id = ? AND e.{LOGGED} ORDER BY e.id DESC LIMIT ?",
        (session, window),
    ).fetchall()
    return [Row(r[0], r[1], r[2], r[3], r[4], r[5], parse_meta(r[6]), r[7]) for r in reversed(rows)]


def fresh(conn: sqlite3.Connection, session: str, project_id: int | None, now: float) -> Snapshot:
    """The working state of ``session`` now, from its events (to show: without the aspects)."""
    return take(session_rows(conn, session), open_tasks(conn, project_id, now), session, now, scored=False)


def latest(conn: sqlite3.Connection, project_id: int, not_session: str | None) -> Stored | None:
    """The project's most recent stored snapshot of another session than ``not_session``."""
    row = conn.execute(
        "SELECT e.id, coalesce(c.cite, ''), e.meta FROM events e LEFT JOIN citations c ON c.event_id = e.id"
        " WHERE e.id = (SELECT id FROM events WHERE project_id = ? AND kind = 'snapshot' AND session_id IS NOT ?"
        " ORDER BY client_ts DESC LIMIT 1)",  # the index events_snapshots, then one row
        (project_id, not_session),
    ).fetchone()
    if row is None:
        return None
    try:
        return Stored(row[0], row[1], _decode(row[2]))
    except msgspec.DecodeError:
        return None


def latest_session(conn: sqlite3.Connection, project_id: int, not_session: str | None) -> str | None:
    """The project's most recently active session other than ``not_session``."""
    row = conn.execute(
        "SELECT id FROM sessions WHERE project_id = ? AND id IS NOT ? ORDER BY last_seen DESC LIMIT 1",
        (project_id, not_session),
    ).fetchone()
    return row[0] if row else None


def forked_from(conn: sqlite3.Connection, project_id: int, session: str, replied_at: float) -> str | None:
    """The session a fork was made of: the project's session whose last reply is nearest
    ``replied_at`` (within ``FORK_MATCH``), or None.  Claude Code names no parent at a fork's
    SessionStart, and its transcript is not written yet."""
    row = conn.execute(
        "SELECT session_id FROM events WHERE project_id = ? AND kind = 'assistant' AND session_id IS NOT ?"
        " AND client_ts BETWEEN ? AND ? ORDER BY abs(client_ts - ?) LIMIT 1",
        (project_id, session, replied_at - FORK_MATCH, replied_at + FORK_MATCH, replied_at),
    ).fetchone()
    return row[0] if row else None


def since(conn: sqlite3.Connection, project_id: int, session: str, after_id: int, limit: int = 5) -> list[Recent]:
    """What other sessions of the project did after event ``after_id``: prompts, replies,
    failures and task changes, the newest first."""
    return [
        Recent(*row)
        for row in conn.execute(
            "SELECT e.id, coalesce(c.cite, ''), e.kind, e.title, substr(e.text, 1, 1000), e.client_ts, e.session_id"
            " FROM events e LEFT JOIN citations c ON c.event_id = e.id WHERE e.project_id = ? AND e.id > ?"
            " AND e.session_id IS NOT ? AND e.kind IN ('prompt', 'assistant', 'tool_error', 'task_state')"
            " AND e.importance >= 2 ORDER BY e.id DESC LIMIT ?",
            (project_id, after_id, session, limit),
        )
    ]


def session_info(conn: sqlite3.Connection, session: str) -> SessionInfo:
    """How a session started and how many prompts it has had (slash commands and Claude
    Code's echoes of them not counted: they say nothing of what the user is after)."""
    row = conn.execute("SELECT source FROM sessions WHERE id = ?", (session,)).fetchone()
    # ``+kind``: without statistics SQLite walks every prompt of the store by kind (14 ms at
    # 100k events) rather than the session's few events.
    (prompts,) = conn.execute(
        "SELECT count(*) FROM events WHERE session_id = ? AND +kind = 'prompt'"
        " AND title NOT LIKE 'Prompt: /%' AND title NOT LIKE 'Prompt: <%'",
        (session,),
    ).fetchone()
    return SessionInfo(row[0] if row else None, prompts)
