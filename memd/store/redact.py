"""Redacting stored events in place: ``memctl scan`` applies today's secret rules to the past.

``content_after`` reads the stored content in id order, a batch at a time, for the caller
to filter (``memd.capture.rescan``).  ``rewrite`` stores the filtered fields of a batch in
one transaction on the writer, as forget deletes (``memd.store.forget``):

- the append-only guard (``schema.APPEND_ONLY``) is lifted for that transaction only;
- a row is rewritten only if it still holds what was read (a session's summary or snapshot
  may have been replaced since: it is recomputed below anyway);
- the keyword indexes follow through their update triggers; where the title or text
  changed, the event's vectors are deleted (their keys returned, for the index to drop)
  and the outbox trigger has it embedded again from the redacted text;
- each session that had a logged event rewritten gets its summary and snapshot
  recomputed in place (same ids, same citation ids; where their text changed, their
  vectors go and are embedded again), and each project that had a task-state event
  rewritten its task lists replayed: both repeat what the events said;
- the secrets found are added to ``redaction_totals`` by kind, and the pass to
  ``forget_log`` (selector ``scan``: when and how many, never what).

``secure_delete`` is on meanwhile; the caller then purges the files as a forget does
(FTS merge, incremental vacuum, WAL truncation), so the old bytes leave the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from ..capture.events import DERIVED_KINDS
from .entities import refresh as refresh_entities
from .events import count_redactions, refresh_snapshot, refresh_summary
from .forget import record
from .reclaim import immediate, zeroing
from .schema import APPEND_ONLY
from .tasks import rebuild_projects

__all__ = ["Rewrite", "Rewritten", "Stored", "content_after", "rewrite"]


class Stored(NamedTuple):
    """One event's content as stored."""

    id: int
    session_id: str | None
    project_id: int | None
    kind: str
    title: str
    text: str
    meta: str
    payload: str


class Rewrite(NamedTuple):
    """An event to rewrite: as read, and its fields redacted."""

    old: Stored
    title: str
    text: str
    meta: str
    payload: str
    counts: dict[str, int]
    """What was found, as ``redaction_totals`` counts it (``secrets``, ``secret:<kind>``...)."""


class Rewritten(NamedTuple):
    events: int
    """Rows rewritten (a derived row replaced meanwhile is not)."""
    sessions: int
    """Sessions whose summary and snapshot were recomputed."""
    keys: list[int]
    """The usearch keys of the vectors deleted."""


def content_after(conn: sqlite3.Connection, after: int, limit: int) -> list[Stored]:
    """Up to ``limit`` events with an id above ``after``, in id order."""
    rows = conn.execute(
        "SELECT id, session_id, project_id, kind, title, text, meta, payload FROM events"
        " WHERE id > ? ORDER BY id LIMIT ?",
        (after, limit),
    ).fetchall()
    return [Stored(*row) for row in rows]


def rewrite(conn: sqlite3.Connection, batch: Sequence[Rewrite], now: float) -> Rewritten:
    """Store ``batch`` redacted and recompute what repeats it (module docstring)."""
    counts: dict[str, int] = {}
    keys: list[int] = []
    sessions: set[str] = set()
    task_projects: set[int | None] = set()
    events = 0
    with zeroing(conn), immediate(conn):
        conn.execute("DROP TRIGGER events_append_only")
        for item in batch:
            old = item.old
            held = conn.execute(
                "SELECT 1 FROM events WHERE id = ? AND title = ? AND text = ? AND meta = ? AND payload = ?",
                (old.id, old.title, old.text, old.meta, old.payload),
            ).fetchone()
            if held is None:
                continue
            events += 1
            for name, n in item.counts.items():
                counts[name] = counts.get(name, 0) + n
            if (item.title, item.text) != (old.title, old.text):
                conn.execute("UPDATE events SET title = ?, text = ? WHERE id = ?", (item.title, item.text, old.id))
                deleted = conn.execute("DELETE FROM vectors WHERE event_id = ? RETURNING id", (old.id,))
                keys += [row[0] for row in deleted]
            conn.execute("UPDATE events SET meta = ?, payload = ? WHERE id = ?", (item.meta, item.payload, old.id))
            refresh_entities(conn, old.id)  # what it names now, without the secret
            if old.kind not in DERIVED_KINDS and old.session_id is not None:
                sessions.add(old.session_id)
            if old.kind == "task_state":
                task_projects.add(old.project_id)
        conn.execute(APPEND_ONLY)
        if task_projects:
            rebuild_projects(conn, task_projects)
        for session in sorted(sessions):
            keys += _refresh(conn, session, now)
        count_redactions(conn, counts)
        record(conn, "scan", events, 0, now)
    return Rewritten(events, len(sessions), keys)


_DIGESTS = "SELECT id, title, text FROM events WHERE session_id = ? AND kind IN ('session_summary', 'snapshot')"


def _refresh(conn: sqlite3.Connection, session: str, now: float) -> list[int]:
    """The session's summary and snapshot recomputed in place; the vector keys of those whose
    text changed (the outbox trigger has them embedded again)."""
    before = set(conn.execute(_DIGESTS, (session,)).fetchall())
    row = conn.execute("SELECT project_id FROM sessions WHERE id = ?", (session,)).fetchone()
    project_id = row[0] if row else None
    refresh_summary(conn, session, project_id, now)
    refresh_snapshot(conn, session, project_id, now)
    changed = [event_id for event_id, *_ in set(conn.execute(_DIGESTS, (session,)).fetchall()) - before]
    keys: list[int] = []
    for event_id in changed:
        keys += [key for (key,) in conn.execute("DELETE FROM vectors WHERE event_id = ? RETURNING id", (event_id,))]
    return keys
