"""Tasks: what the agent set out to do, carried from session to session of a project.

Each task-state event is applied, in the transaction that stores it, to the project's
``tasks`` table (``apply``); every status change is a ``task_history`` row citing the
event that made it.  The rules it goes by (which stored task an incoming one is, what a
status change is called) are ``capture/task_rules.py``'s; this module reads and writes
the tables.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from ..capture.task_rules import (
    OPEN,
    STALE_DAYS,
    Candidate,
    Change,
    OpenTask,
    Resemblance,
    canonical,
    change_of,
)

__all__ = ["apply", "open_tasks", "rebuild", "rebuild_projects"]


def _by_key(conn: sqlite3.Connection, project_id: int | None, key: str, taken: set[int]) -> tuple[int, str] | None:
    """The project's task of this key (the latest changed), unless the event took it already."""
    row = conn.execute(
        "SELECT id, status FROM tasks WHERE project_id IS ? AND key = ? ORDER BY updated_at DESC LIMIT 1",
        (project_id, key),
    ).fetchone()
    return (row[0], row[1]) if row and row[0] not in taken else None


def _by_external_id(conn: sqlite3.Connection, session: str | None, external: str) -> tuple[int, str] | None:
    """The task a session named by its own id (Task-tool updates)."""
    row = conn.execute(
        "SELECT id, status FROM tasks WHERE session_id IS ? AND external_id = ? ORDER BY updated_at DESC",
        (session, external),
    ).fetchone()
    return (row[0], row[1]) if row else None


def _open_candidates(conn: sqlite3.Connection, project_id: int | None, at: float) -> list[Candidate]:
    """The open tasks of the project touched within ``STALE_DAYS`` of ``at``: those a reworded
    task may be (an older one is not carried over any more, see ``open_tasks``)."""
    return [
        Candidate(*row)
        for row in conn.execute(
            "SELECT id, status, key FROM tasks WHERE project_id IS ? AND status IN ('pending', 'in_progress')"
            " AND updated_at >= ?",
            (project_id, at - STALE_DAYS * 86400),
        )
    ]


class _Reworded:
    """The candidates of one event's reworded tasks, read and scored at its first reworded task."""

    def __init__(self, conn: sqlite3.Connection, project_id: int | None, at: float, keys: list[str]) -> None:
        self.conn, self.project_id, self.at, self.keys = conn, project_id, at, keys
        self.resemblance: Resemblance | None = None

    def best(self, index: int, taken: set[int]) -> tuple[int, str] | None:
        if self.resemblance is None:
            self.resemblance = Resemblance(self.keys, _open_candidates(self.conn, self.project_id, self.at))
        return self.resemblance.best(index, taken)


def _set(
    conn: sqlite3.Connection, task_id: int, previous: str | None, status: str, event_id: int, session: str | None,
    at: float, changes: list[Change],
) -> None:  # fmt: skip
    change = change_of(previous, status)
    if change is None:
        return
    conn.execute(
        "INSERT INTO task_history (task_id, event_id, session_id, at, previous, status, change)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (task_id, event_id, session, at, previous, status, change),
    )
    changes.append(Change(task_id, previous, status, change))


def _insert(
    conn: sqlite3.Connection, project_id: int | None, content: str, active_form: str, status: str,
    session: str | None, external: str | None, at: float, event_id: int,
) -> int:  # fmt: skip
    row = conn.execute(
        "INSERT INTO tasks (project_id, key, content, active_form, status, session_id, external_id,"
        " created_at, updated_at, event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (project_id, canonical(content), content, active_form, status, session, external, at, at, event_id),
    ).fetchone()
    return int(row[0])


def _update(
    conn: sqlite3.Connection, task_id: int, content: str, active_form: str, status: str, session: str | None,
    external: str | None, at: float, event_id: int,
) -> None:  # fmt: skip
    """A task's new status; its content, form and external id when the event gives them."""
    conn.execute(
        "UPDATE tasks SET status = ?, content = coalesce(nullif(?, ''), content), key = CASE WHEN ? != ''"
        " THEN ? ELSE key END, active_form = coalesce(nullif(?, ''), active_form), session_id = ?,"
        " external_id = coalesce(?, external_id), updated_at = ?, event_id = ? WHERE id = ?",
        (status, content, content, canonical(content), active_form, session, external, at, event_id, task_id),
    )


def _drop_left_out(
    conn: sqlite3.Connection, project_id: int | None, session: str, taken: set[int], at: float, event_id: int,
    changes: list[Change],
) -> None:  # fmt: skip
    """A whole list (TodoWrite): the open tasks this session wrote before and left out were dropped."""
    for task_id, previous in conn.execute(
        f"SELECT id, status FROM tasks WHERE project_id IS ? AND session_id = ? AND status IN {OPEN!r}"
        f" AND id NOT IN ({','.join('?' * len(taken)) or 'NULL'})",
        (project_id, session, *taken),
    ).fetchall():
        conn.execute("UPDATE tasks SET status = 'dropped', updated_at = ?, event_id = ? WHERE id = ?",
                     (at, event_id, task_id))  # fmt: skip
        _set(conn, task_id, previous, "dropped", event_id, session, at, changes)


def apply(
    conn: sqlite3.Connection, event_id: int, project_id: int | None, session: str | None, meta: dict[str, Any],
    at: float,
) -> list[Change]:  # fmt: skip
    """Apply one task-state event (inside the caller's transaction); return the changes."""
    op = meta.get("op")
    records = [t for t in meta.get("tasks", []) if isinstance(t, dict)]
    if op not in ("write", "create", "update"):
        return []  # get/list only read
    changes: list[Change] = []
    taken: set[int] = set()
    contents = [str(record.get("content", "")).strip() for record in records]
    keys = [canonical(content) for content in contents]
    reworded = _Reworded(conn, project_id, at, keys)
    for index, record in enumerate(records):
        content = contents[index]
        status = str(record.get("status") or "pending")
        external = str(record.get("id", "")) or None
        active_form = record.get("active_form") or ""
        row = None
        if op == "update" and external:
            row = _by_external_id(conn, session, external)
        if row is None and content:
            row = _by_key(conn, project_id, keys[index], taken) or reworded.best(index, taken)
        if row is None:
            if not content:
                continue  # an update of a task memd never saw: nothing to attach it to
            task_id = _insert(conn, project_id, content, active_form, status, session, external, at, event_id)
            _set(conn, task_id, None, status, event_id, session, at, changes)
        else:
            task_id, previous = row
            _update(conn, task_id, content, active_form, status, session, external, at, event_id)
            _set(conn, task_id, previous, status, event_id, session, at, changes)
        taken.add(task_id)
    if op == "write" and session is not None:
        _drop_left_out(conn, project_id, session, taken, at, event_id, changes)
    return changes


def open_tasks(conn: sqlite3.Connection, project_id: int | None, now: float, limit: int = 20) -> list[OpenTask]:
    """The project's open tasks: in progress first, then the most recently changed.

    A task nobody touched for ``STALE_DAYS`` is left out: agents abandon todo lists without
    closing them, and a months-old "pending" is noise, not work in progress (``memctl tasks
    --all`` still lists it)."""
    return [
        OpenTask(*row)
        for row in conn.execute(
            "SELECT t.id, t.content, t.status, t.active_form, coalesce(c.cite, ''), t.updated_at, t.session_id,"
            " t.event_id"
            " FROM tasks t LEFT JOIN citations c ON c.event_id = t.event_id"
            " WHERE t.project_id IS ? AND t.status IN ('pending', 'in_progress') AND t.updated_at >= ?"
            " ORDER BY t.status = 'in_progress' DESC, t.updated_at DESC LIMIT ?",
            (project_id, now - STALE_DAYS * 86400, limit),
        )
    ]


def rebuild(conn: sqlite3.Connection) -> int:
    """Recreate the task tables from the task-state events (inside the caller's transaction)."""
    conn.execute("DELETE FROM task_history")
    conn.execute("DELETE FROM tasks")
    rows = conn.execute(
        "SELECT id, project_id, session_id, meta, client_ts FROM events WHERE kind = 'task_state' ORDER BY id"
    ).fetchall()
    for event_id, project_id, session, meta, at in rows:
        try:
            parsed = json.loads(meta)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            apply(conn, event_id, project_id, session, parsed, at)
    return len(rows)


def rebuild_projects(conn: sqlite3.Connection, project_ids: Iterable[int | None]) -> None:
    """Replay the task lists of these projects from their task-state events (inside the
    caller's transaction).  ``rebuild`` replays every project; a task belongs to one
    project, so replaying only those that lost an event gives the same tables for less."""
    for project_id in project_ids:
        conn.execute("DELETE FROM task_history WHERE task_id IN (SELECT id FROM tasks WHERE project_id IS ?)",
                     (project_id,))  # fmt: skip
        conn.execute("DELETE FROM tasks WHERE project_id IS ?", (project_id,))
        for event_id, session, meta, at in conn.execute(
            "SELECT id, session_id, meta, client_ts FROM events WHERE kind = 'task_state' AND project_id IS ?"
            " ORDER BY id",
            (project_id,),
        ).fetchall():
            try:
                parsed = json.loads(meta)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                apply(conn, event_id, project_id, session, parsed, at)
