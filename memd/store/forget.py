"""Forgetting: delete memories for good, and everything that repeats them.

**Which events.**  A forget names its events by one selector: ``ids`` (citation or event
ids, ``memd.retrieve.layers.resolve``), ``session`` (every event of one session),
``before`` (every event dated before a time) or ``query`` (``forget_query.by_query``: every event that
holds every word of the query, or the whole query verbatim); retention
(``memd.store.retention``) chooses its own.  ``plan`` says what a set of events takes
with it, for a dry run to show.

**Deleting them** (``forget``, one transaction per batch).  The schema's delete triggers
take an event's keyword and trigram rows, its outbox row and stored vectors, its citation
and usage, its graduation level, its working-set membership and, for a consolidated
memory, its consolidation rows.  What triggers cannot do is done here, in the same
transaction:

- a consolidated memory that sums up a forgotten event is deleted with it: its text is
  its sources' text, so keeping it would keep what was to be forgotten;
- the task lists of a project that lost a task-state event are replayed from the ones
  left (``tasks.rebuild_projects``);
- each session that lost an event gets its summary and snapshot recomputed from what is
  left (or loses them, and its row, when nothing is), and so does every session whose
  snapshot lists a task of a forgotten event (snapshots carry the project's open tasks);
- the usearch keys of the deleted vectors are returned, for the caller to take out of
  the index (a cache of the ``vectors`` table, outside SQLite).

``record`` writes the audit row (when, which selector kind, how many: never what).

**Bytes gone from the file**: ``reclaim.py``.  The query selector: ``forget_query.py``.

These run on the writer's connection (``Writer.call``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

from ..capture.events import DERIVED_KINDS, LOGGED
from .events import refresh_snapshot, refresh_summary
from .reclaim import immediate, zeroing
from .tasks import rebuild_projects

__all__ = [
    "BATCH",
    "SELECTORS",
    "Deleted",
    "Plan",
    "batches",
    "by_session",
    "by_time",
    "forget",
    "plan",
    "recompute_session",
    "record",
]

SELECTORS: Final = ("ids", "session", "before", "query", "retention", "scan", "sync", "claude-memory")
"""How a forget chose its events: what the audit row records (``scan``: ``memd.store.redact``
rewrote their secrets rather than deleting them; ``sync``: another machine forgot them;
``claude-memory``: the Claude Code memory file they mirror changed or was deleted)."""
BATCH: Final = 200
"""Events deleted per transaction, so that a hook waits little behind one: at most ~0.2 s at
100k events here, mostly recomputing the sessions that lost events (2,000 took up to 1.9 s).
The task-state events all go in one last transaction, which replays the task lists of their
projects: seconds, at 100k events with thousands of tasks a project."""


def _json(ids: Iterable[int]) -> str:
    """Ids as one bound parameter: ``IN (SELECT value FROM json_each(?))`` has no variable limit."""
    return json.dumps(list(ids))


_IN = "IN (SELECT value FROM json_each(?))"


# --- selectors --------------------------------------------------------------------------


def by_session(conn: sqlite3.Connection, session: str) -> list[int]:
    """Every event of ``session`` (its summary and snapshot too)."""
    return [row[0] for row in conn.execute("SELECT id FROM events WHERE session_id = ? ORDER BY id", (session,))]


def by_time(conn: sqlite3.Connection, before: float, project_id: int | None) -> list[int]:
    """Every event dated before ``before`` (its own time, ``client_ts``), in one project or all (None)."""
    where = " AND project_id = ?" if project_id is not None else ""
    args = (before, project_id) if project_id is not None else (before,)
    return [row[0] for row in conn.execute(f"SELECT id FROM events WHERE client_ts < ?{where} ORDER BY id", args)]


# --- what goes ----------------------------------------------------------------------------


class Plan(NamedTuple):
    """What forgetting ``events`` takes with it."""

    events: list[int]
    """The events named, that exist."""
    derived: list[int]
    """Consolidated memories built from them (not already among ``events``)."""
    sessions: list[str]
    """Sessions that lose an event of their log: their summary and snapshot are recomputed."""
    task_events: list[int]
    """The task-state events among ``events``: the task lists are replayed without them."""


def plan(conn: sqlite3.Connection, event_ids: Iterable[int]) -> Plan:
    """What forgetting ``event_ids`` would delete (reads only: a dry run shows it)."""
    found = [row[0] for row in conn.execute(f"SELECT id FROM events WHERE id {_IN} ORDER BY id", (_json(event_ids),))]
    chosen = _json(found)
    derived = [
        row[0]
        for row in conn.execute(
            f"SELECT DISTINCT consolidation_id FROM consolidation_sources WHERE source_id {_IN}"
            f" AND consolidation_id NOT {_IN} ORDER BY consolidation_id",
            (chosen, chosen),
        )
    ]
    sessions = [
        row[0]
        for row in conn.execute(
            f"SELECT DISTINCT session_id FROM events WHERE id {_IN} AND session_id IS NOT NULL AND {LOGGED}"
            " ORDER BY session_id",
            (chosen,),
        )
    ]
    task_events = [
        row[0] for row in conn.execute(f"SELECT id FROM events WHERE id {_IN} AND kind = 'task_state'", (chosen,))
    ]
    return Plan(found, derived, sessions, task_events)


def batches(planned: Plan, size: int = BATCH) -> list[list[int]]:
    """``planned.events`` in transactions of ``size``, the task-state events all in the last
    one: the task lists are then replayed once, after every other event is gone (a snapshot
    recomputed in an earlier batch, from task lists that still had them, is recomputed again
    there)."""
    task_events = set(planned.task_events)
    others = [event_id for event_id in planned.events if event_id not in task_events]
    split = [others[start : start + size] for start in range(0, len(others), size)]
    return [*split, sorted(task_events)] if task_events else split


class Deleted(NamedTuple):
    events: int
    derived: int
    """Consolidated memories deleted because they summed up one of the events."""
    sessions: int
    """Sessions whose summary and snapshot were recomputed (or that went, having nothing left)."""
    keys: list[int]
    """The usearch keys of the vectors deleted."""


def forget(conn: sqlite3.Connection, event_ids: Sequence[int], now: float) -> Deleted:
    """Delete ``event_ids`` and everything that repeats them (module docstring), in one transaction."""
    with zeroing(conn), immediate(conn):
        return _delete(conn, plan(conn, event_ids), now)


def _delete(conn: sqlite3.Connection, planned: Plan, now: float) -> Deleted:
    doomed = planned.events + planned.derived
    if not doomed:
        return Deleted(0, 0, 0, [])
    ids = _json(doomed)
    keys = [row[0] for row in conn.execute(f"SELECT id FROM vectors WHERE event_id {_IN}", (ids,))]
    lost = conn.execute(
        f"SELECT session_id, count(*) FROM events WHERE id {_IN} AND session_id IS NOT NULL AND {LOGGED}"
        " GROUP BY session_id",
        (ids,),
    ).fetchall()
    tasks_of = f"SELECT DISTINCT project_id FROM events WHERE id {_IN} AND kind = 'task_state'"
    task_projects = {row[0] for row in conn.execute(tasks_of, (ids,))}
    conn.execute(  # to be forgotten on the other machines too, once sync was set up (memd.store.sync)
        "INSERT OR IGNORE INTO sync_tombstones (event_key, forgotten_at, project_key, teams)"
        " SELECT e.idem_key, ?, coalesce(p.key, ''),"
        " (SELECT json_group_array(team) FROM (SELECT team FROM sync_shares WHERE event_id = e.id"
        " UNION SELECT team FROM sync_remote WHERE event_id = e.id AND team <> ''))"
        f" FROM events e LEFT JOIN projects p ON p.id = e.project_id WHERE e.id {_IN}"
        f" AND e.kind NOT IN {DERIVED_KINDS!r} AND EXISTS (SELECT 1 FROM sync_state)",
        (now, ids),
    )
    conn.execute(f"DELETE FROM events WHERE id {_IN}", (ids,))
    conn.executemany("UPDATE sessions SET events = max(0, events - ?) WHERE id = ?", [(n, s) for s, n in lost])
    sessions = set(planned.sessions)
    if task_projects:
        rebuild_projects(conn, task_projects)
        sessions |= _sessions_listing(conn, set(planned.task_events), task_projects)
    for session in sorted(sessions):
        keys += recompute_session(conn, session, now)
    return Deleted(len(planned.events), len(planned.derived), len(sessions), keys)


def _sessions_listing(conn: sqlite3.Connection, task_events: set[int], project_ids: set[int | None]) -> set[str]:
    """Sessions of these projects whose snapshot lists a task last changed by one of ``task_events``."""
    sessions = set()
    for session, project_id, meta in conn.execute(
        "SELECT session_id, project_id, meta FROM events WHERE kind = 'snapshot' AND session_id IS NOT NULL"
    ):
        if project_id in project_ids and task_events & _task_sources(meta):
            sessions.add(session)
    return sessions


def _task_sources(meta: str) -> set[int]:
    try:
        listed = json.loads(meta).get("tasks", [])
    except (ValueError, AttributeError):
        return set()
    return {item["id"] for item in listed if isinstance(item, dict) and isinstance(item.get("id"), int)}


def recompute_session(conn: sqlite3.Connection, session: str, now: float) -> list[int]:
    """The session's summary and snapshot, from the events it has left; none if it has none.
    Returns the vector keys of the old ones: they embed what was forgotten too."""
    old = "FROM events WHERE session_id = ? AND kind IN ('session_summary', 'snapshot')"
    vectors = f"SELECT id FROM vectors WHERE event_id IN (SELECT id {old})"
    keys = [row[0] for row in conn.execute(vectors, (session,))]
    conn.execute(f"DELETE {old}", (session,))
    row = conn.execute("SELECT project_id FROM sessions WHERE id = ?", (session,)).fetchone()
    left = f"SELECT 1 FROM events WHERE session_id = ? AND kind NOT IN {DERIVED_KINDS!r} LIMIT 1"
    if not conn.execute(left, (session,)).fetchone():
        conn.execute("DELETE FROM sessions WHERE id = ?", (session,))
        return keys
    project_id = row[0] if row else None
    conn.execute("UPDATE sessions SET summary = NULL WHERE id = ?", (session,))
    refresh_summary(conn, session, project_id, now)
    refresh_snapshot(conn, session, project_id, now)
    return keys


def record(conn: sqlite3.Connection, selector: str, events: int, derived: int, now: float) -> None:
    """The audit row of one forget: when, by which selector kind, how many.  Never what."""
    if selector not in SELECTORS:
        raise ValueError(f"unknown selector {selector!r}")
    conn.execute(
        "INSERT INTO forget_log (at, selector, events, derived) VALUES (?, ?, ?, ?)",
        (now, selector, events, derived),
    )
