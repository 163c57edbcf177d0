"""Exported events back into a store (``memctl import --from-export``), on the writer.

Events go in as they were exported, through the writer's own insert (sessions, projects,
task state as for a live event), keyed by their idempotency key, so restoring a file
twice stores nothing new.  Each keeps its citation id (made from that key, so the same
here; an id of before that release becomes an alias when it is free here), so that
``[mem:Ab3xY9Kq]`` quoted anywhere still resolves after a move to another machine, and its
uses by id and graduation level, so that what was learned of it (ranking, retention's
protection of cited and graduated memories) moves along.
"""

from __future__ import annotations

import json
import sqlite3

from ..capture.events import DERIVED_KINDS
from ..capture.prepare import NewEvent
from ..protocol import ExportedEvent
from .citations import keep_alias
from .events import count_redactions, insert_derived, insert_event
from .projects import project_id_of

__all__ = ["restore"]


def restore(
    conn: sqlite3.Connection,
    rows: list[ExportedEvent],
    redactions: dict[str, int],
    now: float,
    project_id: int | None = None,
) -> tuple[int, int, int]:
    """Store ``rows`` (inside the caller's transaction), counting ``redactions`` (what today's
    rules found in them) in ``redaction_totals``: (stored, already there, cites kept).
    ``project_id``: the local project they belong to (sync knows it by the project's key),
    else the project of each row's root."""
    count_redactions(conn, redactions)
    stored = duplicates = kept = 0
    given = project_id
    for row in rows:
        project_id = given if given is not None else project_id_of(conn, row.project, now) if row.project else None
        if row.kind in DERIVED_KINDS:  # a summary, snapshot or consolidation: not counted in its session
            if conn.execute("SELECT 1 FROM events WHERE idem_key = ?", (row.idem_key,)).fetchone():
                duplicates += 1  # this instance's own is as new or newer: keep it
                continue
            meta_dict = row.meta if isinstance(row.meta, dict) else {}
            event_id = insert_derived(
                conn, row.idem_key, row.session_id, project_id, row.kind, row.title, row.text, meta_dict,
                row.importance, row.client_ts, now,
            )  # fmt: skip
            stored += 1
            kept += _keep_cite(conn, event_id, row.cite)
            _learned(conn, event_id, row)
            continue
        meta = row.meta if isinstance(row.meta, str) else json.dumps(row.meta, ensure_ascii=False)
        event = NewEvent(
            idem_key=row.idem_key, event=row.event, kind=row.kind, session_id=row.session_id, cwd=row.project,
            tool=row.tool, title=row.title, text=row.text, meta=meta, payload=row.payload or "{}",
            importance=row.importance, client_ts=row.client_ts, received_at=row.received_at,
            size=len(row.payload or meta), truncated=False, agent=row.agent,
        )  # fmt: skip
        committed = insert_event(conn, event, project_id)
        if committed.duplicate:
            duplicates += 1
            continue
        stored += 1
        kept += _keep_cite(conn, committed.event_id, row.cite)
        _learned(conn, committed.event_id, row)
    return stored, duplicates, kept


def _learned(conn: sqlite3.Connection, event_id: int, row: ExportedEvent) -> None:
    conn.executemany(
        "INSERT INTO citation_usage (event_id, session_id, used_at, how) VALUES (?, ?, ?, ?)",
        [(event_id, use.session_id, use.used_at, use.how) for use in row.uses],
    )
    if row.level is not None:
        level = row.level
        conn.execute(
            "INSERT OR REPLACE INTO memory_levels (event_id, level, accesses, best_confidence, sessions, last_access)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (event_id, level.level, level.accesses, level.best_confidence, level.sessions, level.last_access),
        )


def _keep_cite(conn: sqlite3.Connection, event_id: int, cite: str) -> int:
    """1 if the event's exported citation id resolves to it here (``citations.keep_alias``)."""
    return int(keep_alias(conn, event_id, cite))
