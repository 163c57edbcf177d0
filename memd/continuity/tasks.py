"""Tasks: what the agent set out to do, carried from session to session of a project.

The raw material is the task-state events capture makes of todo-tool calls (``meta``:
``{"op", "tasks": [{"id", "content", "status", "active_form"}]}``, see
``capture/tasks.py``).  Each one is applied, in the transaction that stores it, to the
project's ``tasks`` table; every status change is a ``task_history`` row citing the
event that made it.

**The same task.**  A task's key is its content normalized (casefolded, punctuation
and extra spaces dropped).  An incoming task with a new key is still the same task when
its wording changed only a little: ``fuzz.token_sort_ratio`` >= ``SAME_TASK`` (88)
against an open task of the project not already matched in the same list and touched
within ``STALE_DAYS`` of the change (an older one is not carried over any more).  88 accepts
"Add tests for the parser" → "Add unit tests for the parser" (90) and rejects "Fix the
login test" → "Fix the logout test" (84).

**Transitions.**  ``pending → in_progress → completed`` is the way forward (skipping
``in_progress`` is allowed: agents often do); ``completed → pending | in_progress`` is a
*reopen*, and ``in_progress → pending`` a *pause*, both recorded as such.  TodoWrite
sends the whole list, so an open task the same session wrote before and left out of its
new list was *dropped*; a task from an earlier session is never dropped by a list that
did not know it.  Task-tool ``TaskUpdate``s name a task by the session's own id.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "OPEN",
    "SAME_TASK",
    "STALE_DAYS",
    "Change",
    "OpenTask",
    "apply",
    "canonical",
    "change_of",
    "open_tasks",
    "rebuild",
]

OPEN: Final = ("pending", "in_progress")
SAME_TASK: Final = 88.0
STALE_DAYS: Final = 14.0
_PUNCTUATION: Final = re.compile(r"[^\w\s]")


def canonical(content: str) -> str:
    """The key of a task: its content casefolded, without punctuation, single-spaced."""
    return " ".join(_PUNCTUATION.sub(" ", content.casefold()).split())


def change_of(previous: str | None, status: str) -> str | None:
    """What a status change is: created, started, completed, reopened, paused, dropped or
    ``changed`` (a status memd does not know); None when nothing changed."""
    if previous == status:
        return None
    if previous is None:
        return "created"
    if status == "dropped":
        return "dropped"
    if previous in ("completed", "dropped") and status in OPEN:
        return "reopened"
    if previous == "in_progress" and status == "pending":
        return "paused"
    return {"in_progress": "started", "completed": "completed"}.get(status, "changed")


class Change(NamedTuple):
    task_id: int
    previous: str | None
    status: str
    change: str


class OpenTask(NamedTuple):
    id: int
    content: str
    status: str
    active_form: str
    cite: str
    """The citation id of the event that last changed it."""
    updated_at: float
    session_id: str | None
    event_id: int


def _exact(conn: sqlite3.Connection, project_id: int | None, key: str, taken: set[int]) -> tuple | None:
    row = conn.execute(
        "SELECT id, status FROM tasks WHERE project_id IS ? AND key = ? ORDER BY updated_at DESC LIMIT 1",
        (project_id, key),
    ).fetchone()
    return row if row and row[0] not in taken else None


class _Reworded:
    """The open tasks a reworded task of one event may be: those of the project touched
    within ``STALE_DAYS`` of the change (an older one is no longer carried over, see
    ``open_tasks``, so a task that shows up again is a new one).

    Read once per event and scored against all of its task texts at once, in C (a project
    can hold hundreds of open tasks).  That is the same as asking per task: every task the
    event creates or changes is ``taken``, and taken tasks are never candidates."""

    def __init__(self, conn: sqlite3.Connection, project_id: int | None, at: float, keys: list[str]) -> None:
        self.conn, self.project_id, self.at, self.keys = conn, project_id, at, keys
        self.rows: list[tuple[int, str, str]] = []
        self.scores: np.ndarray | None = None  # keys by rows, read at the first reworded task

    def best(self, index: int, taken: set[int]) -> tuple | None:
        """The open task most like ``keys[index]`` (of equals the latest), if one scores >= SAME_TASK."""
        import numpy as np  # here: the MCP server and memctl import this module for its types only
        from rapidfuzz import fuzz, process

        if self.scores is None:
            self.rows = self.conn.execute(
                "SELECT id, status, key FROM tasks WHERE project_id IS ? AND status IN ('pending', 'in_progress')"
                " AND updated_at >= ?",
                (self.project_id, self.at - STALE_DAYS * 86400),
            ).fetchall()
            self.scores = process.cdist(
                self.keys, [row[2] for row in self.rows], scorer=fuzz.token_sort_ratio, dtype=np.float32
            )
        scores = self.scores[index]
        matches = [(scores[c], c) for c in np.flatnonzero(scores >= SAME_TASK) if self.rows[c][0] not in taken]
        if not matches:
            return None
        _, column = max(matches)
        return self.rows[column][0], self.rows[column][1]


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
        row = None
        if op == "update" and external:
            row = conn.execute(
                "SELECT id, status FROM tasks WHERE session_id IS ? AND external_id = ? ORDER BY updated_at DESC",
                (session, external),
            ).fetchone()
        if row is None and content:
            row = _exact(conn, project_id, keys[index], taken) or reworded.best(index, taken)
        if row is None:
            if not content:
                continue  # an update of a task memd never saw: nothing to attach it to
            task_id = conn.execute(
                "INSERT INTO tasks (project_id, key, content, active_form, status, session_id, external_id,"
                " created_at, updated_at, event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (project_id, canonical(content), content, record.get("active_form") or "", status, session, external,
                 at, at, event_id),
            ).fetchone()[0]  # fmt: skip
            _set(conn, task_id, None, status, event_id, session, at, changes)
        else:
            task_id, previous = row
            conn.execute(
                "UPDATE tasks SET status = ?, content = coalesce(nullif(?, ''), content), key = CASE WHEN ? != ''"
                " THEN ? ELSE key END, active_form = coalesce(nullif(?, ''), active_form), session_id = ?,"
                " external_id = coalesce(?, external_id), updated_at = ?, event_id = ? WHERE id = ?",
                (status, content, content, canonical(content), record.get("active_form") or "", session, external, at,
                 event_id, task_id),
            )  # fmt: skip
            _set(conn, task_id, previous, status, event_id, session, at, changes)
        taken.add(task_id)
    if op == "write" and session is not None:  # the whole list: open tasks this session left out were dropped
        for task_id, previous in conn.execute(
            f"SELECT id, status FROM tasks WHERE project_id IS ? AND session_id = ? AND status IN {OPEN!r}"
            f" AND id NOT IN ({','.join('?' * len(taken)) or 'NULL'})",
            (project_id, session, *taken),
        ).fetchall():
            conn.execute("UPDATE tasks SET status = 'dropped', updated_at = ?, event_id = ? WHERE id = ?",
                         (at, event_id, task_id))  # fmt: skip
            _set(conn, task_id, previous, "dropped", event_id, session, at, changes)
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
