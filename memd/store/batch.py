"""One batch of the writer: one transaction for every event that came while the last one
committed (see ``writer.py`` for why), each event under a savepoint of its own.

An event is stored with what is derived from it (``events.py``), joins its project's
working set if it belongs there, and a Stop, PreCompact or SessionEnd that is due refreshes
its session's summary and snapshot; each working set touched is trimmed before the commit.
A step that raises is rolled back alone and recorded in ``quarantine`` (``writer.py``'s
docstring says what happens to its event); an error ``fatal`` names fails the batch.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Final, NamedTuple, TypeVar

import structlog

from ..capture.prepare import NewEvent
from .events import Committed, insert_event, refresh_snapshot, refresh_summary
from .projects import project_id_of
from .trouble import describe, fatal
from .working_set import DEFAULT, Limits, admit, trim

__all__ = ["QUARANTINE_KEEP", "SUMMARY_EVENTS", "Failed", "Rejection", "atomically", "write_batch"]

log = structlog.get_logger("memd.store")
T = TypeVar("T")

SUMMARY_EVENTS: Final = frozenset({"PreCompact", "Stop", "SessionEnd"})
"""Hook events after which the session's summary and snapshot are recomputed."""
QUARANTINE_KEEP: Final = 10_000
"""Rows ``quarantine`` keeps, the newest (a bug that fails every event must not grow it forever)."""


class Failed(NamedTuple):
    """``write_batch``'s result for an event it could not store (it is in ``quarantine``)."""

    error: str
    """The exception type."""
    reason: str


class Rejection(NamedTuple):
    received_at: float
    event: str
    size: int
    reason: str


def write_batch(
    conn: sqlite3.Connection,
    jobs: list[tuple[NewEvent, str | None]],
    rejections: list[Rejection],
    summarize_sessions: frozenset[str] = frozenset(),
    working: Limits = DEFAULT,
) -> list[Committed | Failed]:
    """Write one batch in one transaction; the result lines up with ``jobs``.

    An event whose idempotency key is already stored (earlier, or earlier in this
    batch) is not written again: its result is the stored id, ``duplicate=True``.
    The summaries of ``summarize_sessions`` are refreshed when one of their events in
    the batch is a new Stop or SessionEnd.  New events join their project's working set,
    which is then trimmed to ``working``.

    Each event, and each session's summary and snapshot, runs under its own savepoint:
    one that raises is rolled back alone and recorded in ``quarantine`` (see the module's
    docstring); an event that could not be stored at all gets ``Failed``.  An error that
    ``fatal`` names fails the whole batch, as a failed commit does.
    """
    now = time.time()
    quarantined: list[dict[str, object]] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("INSERT INTO rejections (received_at, event, size, reason) VALUES (?, ?, ?, ?)", rejections)
        project_ids: dict[str, int] = {}
        results: list[Committed | Failed] = []
        summaries: dict[str, tuple[int | None, NewEvent, int]] = {}
        trimmed: set[int | None] = set()
        for event, root in jobs:
            try:
                result, project_id, admitted = _savepoint(conn, _store, conn, event, root, project_ids, now, working)
            except Exception as exc:
                if fatal(conn, exc):
                    raise
                outcome = _store_raw(conn, event, root, project_ids, now, exc, quarantined)
                if isinstance(outcome, Failed):
                    results.append(outcome)
                    continue
                result, project_id, admitted = outcome
            if root and project_id is not None:
                project_ids[root] = project_id  # only once its savepoint is released: it exists
            results.append(result)
            if admitted:
                trimmed.add(project_id)
            if event.session_id in summarize_sessions and event.event in SUMMARY_EVENTS and not result.duplicate:
                summaries[event.session_id] = (project_id, event, result.event_id)
        for session_id, (project_id, event, event_id) in summaries.items():
            for stage, refresh in (("summary", refresh_summary), ("snapshot", refresh_snapshot)):
                try:
                    _savepoint(conn, refresh, conn, session_id, project_id, now)
                except Exception as exc:
                    if fatal(conn, exc):
                        raise
                    quarantined.append(_quarantine(conn, event, event_id, stage, exc, now))
        for project_id in trimmed:
            try:
                _savepoint(conn, trim, conn, project_id, now, working.hours, working.size)
            except Exception as exc:  # no event's fault; the next batch trims again
                if fatal(conn, exc):
                    raise
                log.warning("working_set_trim_failed", project_id=project_id, error=type(exc).__name__,
                            reason=describe(exc))  # fmt: skip
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
            conn.execute("ROLLBACK")
        raise
    for fields in quarantined:  # logged once it is on disk
        log.warning("event_quarantined", **fields)
    return results


def _store(
    conn: sqlite3.Connection, event: NewEvent, root: str | None, project_ids: dict[str, int], now: float,
    working: Limits,
) -> tuple[Committed, int | None, bool]:  # fmt: skip
    """Store one event with everything derived from it; (result, its project, whether it
    joined the project's working set)."""
    project_id = (project_ids.get(root) or project_id_of(conn, root, now)) if root else None
    result = insert_event(conn, event, project_id)
    admitted = not result.duplicate and admit(
        conn, result.event_id, project_id, event.session_id, event.kind, event.importance,
        event.client_ts, now, working.hours,
    )  # fmt: skip
    return result, project_id, admitted


def _store_raw(
    conn: sqlite3.Connection, event: NewEvent, root: str | None, project_ids: dict[str, int], now: float,
    failure: Exception, quarantined: list[dict[str, object]],
) -> tuple[Committed, int | None, bool] | Failed:  # fmt: skip
    """After ``failure`` rolled ``_store`` back: the event alone (citation id and session row,
    no tasks, not in the working set), under a savepoint of its own, quarantined either way."""

    def store() -> tuple[Committed, int | None, bool]:
        project_id = (project_ids.get(root) or project_id_of(conn, root, now)) if root else None
        return insert_event(conn, event, project_id, derive=False), project_id, False

    try:
        stored = _savepoint(conn, store)
    except Exception as exc:
        if fatal(conn, exc):
            raise
        quarantined.append(_quarantine(conn, event, None, "store", exc, now, first=failure))
        return Failed(type(exc).__name__, describe(exc))
    quarantined.append(_quarantine(conn, event, stored[0].event_id, "derive", failure, now))
    return stored


def _savepoint(conn: sqlite3.Connection, fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` done whole or, raising, undone whole (the transaction goes on)."""
    conn.execute("SAVEPOINT memd_step")
    try:
        result = fn(*args)
    except BaseException:
        if conn.in_transaction:  # else SQLite rolled the whole transaction back: the caller sees it
            conn.execute("ROLLBACK TO memd_step")
            conn.execute("RELEASE memd_step")
        raise
    conn.execute("RELEASE memd_step")
    return result


def _quarantine(
    conn: sqlite3.Connection, event: NewEvent, event_id: int | None, stage: str, exc: BaseException, now: float,
    *, first: BaseException | None = None,
) -> dict[str, object]:  # fmt: skip
    """Record that ``stage`` of ``event`` failed with ``exc``; the fields to log once committed."""
    error, reason = type(exc).__name__, describe(exc)
    conn.execute(
        "INSERT INTO quarantine (at, event, session_id, idem_key, size, event_id, stage, error, reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (now, event.event, event.session_id, event.idem_key, event.size, event_id, stage, error, reason),
    )
    conn.execute("DELETE FROM quarantine WHERE id <= last_insert_rowid() - ?", (QUARANTINE_KEEP,))
    fields: dict[str, object] = dict(
        hook_event=event.event, session_id=event.session_id, idem_key=event.idem_key, size=event.size,
        event_id=event_id, stage=stage, error=error, reason=reason,
    )  # fmt: skip
    if first is not None:
        fields.update(first_error=type(first).__name__, first_reason=describe(first))
    return fields


def atomically(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn(connection, ...)`` made one transaction, for ``Writer.call``: committed whole or
    rolled back whole."""

    def run(conn: sqlite3.Connection, *args: object) -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn, *args)
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    return run
