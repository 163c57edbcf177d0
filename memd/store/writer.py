"""The single writer: every write to the database goes through one task.

Concurrent ingest requests queue up while a transaction commits, and the next
transaction takes all of them at once (group commit): one ``BEGIN IMMEDIATE`` ...
``COMMIT`` per batch instead of per event.  A caller's ``submit`` returns only after
its batch has committed, so the daemon acknowledges an event only once it is on disk
(WAL, ``synchronous=NORMAL``: durable across a process crash; a power loss may roll
back the last transactions).

The batch itself is plain synchronous SQL (``write_batch``) run in a worker thread
in one hop: awaiting each statement through aiosqlite cost ~8 thread round trips per
commit and doubled the ingest latency.

WAL checkpoints: SQLite's automatic one runs inside a commit and added ~5 ms to
every ~60th acknowledgement, so it is off.  The writer checkpoints in its own thread
once no request has come for ``CHECKPOINT_IDLE`` seconds (hooks arrive in bursts with
gaps), and after ``CHECKPOINT_FORCED`` commits under sustained load.  Running it on
the writer's thread matters: only a checkpoint that no commit races can catch up with
the log, which lets the next commit restart the WAL from its beginning (and
``journal_size_limit`` trims the file); concurrent checkpoints let it grow without end.

If a commit fails (disk full, database locked past ``busy_timeout``), every caller
in the batch gets a ``StoreError`` and nothing of the batch is kept; the daemon
replies with an error and the hook client spools the event for a later try.

One bad event never fails its batch: each event is stored, with what is derived from
it (its citation id, session row, tasks, working-set membership), under its own
SAVEPOINT, and so is each session's summary and snapshot.  A step that raises is
rolled back alone and recorded in ``quarantine`` (ids, size, the exception type and
where it was raised: never content).  An event whose derivation raised is stored again
without it (``stage='derive'``) and acknowledged as usual: nothing acknowledged is
lost.  If even that fails (``stage='store'``) its caller gets an ``EventError``, so
the hook client spools it and the spool drain sets it aside after a few tries.  Only
the errors after which the transaction cannot go on (``fatal``: a full disk, an I/O
error, the database locked, out of memory) still fail the whole batch.
"""

from __future__ import annotations

import errno
import json
import math
import os
import sqlite3
import time
import traceback
from collections.abc import Callable
from typing import Final, NamedTuple, TypeVar

import anyio
import msgspec
import structlog

from ..capture import NewEvent
from ..capture.events import LOGGED
from ..capture.snapshot import plain, take
from ..capture.summary import SummaryRow, summarize
from ..cite import citation_id
from ..query import has_cjk
from . import tasks, working_set
from .schema import CITATION_ATTEMPTS
from .state import session_rows

__all__ = [
    "CommitHealth",
    "CommitTrouble",
    "Committed",
    "EventError",
    "Failed",
    "StoreError",
    "Writer",
    "atomically",
    "count_redactions",
    "describe",
    "diagnose",
    "fatal",
    "insert_derived",
    "write_batch",
]

log = structlog.get_logger("memd.store")
T = TypeVar("T")

SUMMARY_EVENTS = frozenset({"PreCompact", "Stop", "SessionEnd"})
"""Hook events after which the session's summary and snapshot are recomputed."""
ALWAYS = frozenset({"PreCompact", "SessionEnd"})
"""Of those, the ones that refresh them every time (a Stop at most every SUMMARY_INTERVAL)."""
SUMMARY_INTERVAL = 15.0
"""Seconds between two Stop-triggered summaries of one session (SessionEnd always
refreshes): a summary reads the whole session, ~10 ms per 1,000 events."""

CHECKPOINT_IDLE = 0.05
"""Seconds without a request after which the writer checkpoints the WAL."""
CHECKPOINT_FORCED = 200
"""Commits after which the writer checkpoints even under sustained load."""
QUARANTINE_KEEP: Final = 10_000
"""Rows ``quarantine`` keeps, the newest (a bug that fails every event must not grow it forever)."""
FATAL: Final = frozenset(
    {
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
        sqlite3.SQLITE_INTERRUPT,
        sqlite3.SQLITE_PERM,
    }
)
"""SQLite's primary result codes that are about the database, not about one event: the
transaction cannot go on (SQLite may have rolled it back already), so the batch fails."""


class StoreError(Exception):
    """The database could not commit; the message says why, without event content."""


class CommitTrouble(NamedTuple):
    """Why commits fail, in words a user acts on (``memctl status``)."""

    reason: str
    """``disk full``, ``read-only``, ``locked``, ``I/O error`` or ``error``."""
    fix: str


def diagnose(exc: BaseException, database: str) -> CommitTrouble:
    """What a failed commit means and what to do, from SQLite's error code (or the OS's)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    number = getattr(exc, "errno", None)
    folder = os.path.dirname(database) or "."
    later = "; events wait in the spool meanwhile and are stored once commits work again"
    if name.startswith("SQLITE_FULL") or number == errno.ENOSPC:
        try:
            stats = os.statvfs(folder)
            free = f" ({stats.f_bavail * stats.f_frsize // 1024} KB free)"
        except OSError:
            free = ""
        return CommitTrouble("disk full", f"free space on the filesystem of {folder}{free}{later}")
    if name.startswith("SQLITE_READONLY") or number in (errno.EROFS, errno.EACCES, errno.EPERM):
        return CommitTrouble("read-only", f"make {database} and {folder} writable by this user{later}")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return CommitTrouble(
            "locked", f"another program holds a lock on {database} (`fuser {database}` names it): close it{later}"
        )
    if name.startswith("SQLITE_IOERR") or number == errno.EIO:
        return CommitTrouble("I/O error", f"the disk under {folder} failed a write: check it (dmesg){later}")
    return CommitTrouble("error", f"see the daemon's log (commit_failed){later}")


class CommitHealth(NamedTuple):
    """Whether the last commits failed: since when, how many, and why."""

    failing_since: float | None = None
    failures: int = 0
    trouble: CommitTrouble | None = None
    detail: str = ""
    """SQLite's message (never content)."""


class EventError(StoreError):
    """This one event could not be stored, not even without its derived data (the rest of its
    batch was); retrying it fails the same way.  The message says why, without content."""


class Committed(NamedTuple):
    event_id: int
    duplicate: bool


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


class _Call(NamedTuple):
    """Any other write: ``fn(connection, *args)`` run on the writer's thread."""

    fn: Callable[..., object]
    args: tuple[object, ...]


class _Job:
    """One write waiting for its turn: an event (with its project root), a rejection or a call."""

    __slots__ = ("done", "error", "item", "result")

    def __init__(self, item: tuple[NewEvent, str | None] | Rejection | _Call) -> None:
        self.item = item
        self.done = anyio.Event()
        self.result: object = None
        self.error: Exception | None = None


def _project_id(conn: sqlite3.Connection, root: str, now: float) -> int:
    (project_id,) = conn.execute(
        "INSERT INTO projects (root, name, first_seen, last_seen) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(root) DO UPDATE SET last_seen = excluded.last_seen RETURNING id",
        (root, os.path.basename(root) or root, now, now),
    ).fetchone()
    return project_id


_INSERT_EVENT = (
    "INSERT INTO events (idem_key, event, session_id, project_id, kind, tool, title, text, meta, payload,"
    " importance, client_ts, received_at, size, truncated, cjk)"
    " VALUES (?, ?, ?, coalesce(?, (SELECT project_id FROM sessions WHERE id = ?)),"
    " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SESSION_COLUMNS = frozenset({"source", "model", "end_reason"})


_COMPACTIONS = "SELECT count(*) FROM events WHERE session_id = ? AND event = 'PostCompact'"
"""A session's compactions so far (``NewEvent.per_compaction``)."""


def _insert(conn: sqlite3.Connection, event: NewEvent, project_id: int | None, *, derive: bool = True) -> Committed:
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
        ),
    ).fetchone()  # fmt: skip
    if row is None:
        (existing,) = conn.execute("SELECT id FROM events WHERE idem_key = ?", (key,)).fetchone()
        return Committed(existing, duplicate=True)
    assign_citation(conn, row[0], new=True)
    if derive and event.kind == "task_state":
        tasks.apply(conn, row[0], row[1], event.session_id, json.loads(event.meta), event.client_ts)
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


def assign_citation(conn: sqlite3.Connection, event_id: int, *, new: bool = False) -> str:
    """The event's citation id: the one it has, or a new one (a collision tries the next salt).
    ``new``: the event was just inserted, so it has none yet (no lookup on the ingest path)."""
    if not new and (row := conn.execute("SELECT cite FROM citations WHERE event_id = ?", (event_id,)).fetchone()):
        return row[0]
    for salt in range(CITATION_ATTEMPTS):
        cite = citation_id(event_id, salt)
        if conn.execute(
            "INSERT INTO citations (cite, event_id) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING cite",
            (cite, event_id),
        ).fetchone():
            return cite
    raise sqlite3.IntegrityError(f"no free citation id for event {event_id} in {CITATION_ATTEMPTS} attempts")


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
    snapshot = take(rows, tasks.open_tasks(conn, project_id, now), session_id, now)
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
    text: str, meta: dict, importance: int, ts: float, now: float,
) -> int:  # fmt: skip
    """Store (or replace in place) the derived event of idempotency key ``key``; its id."""
    encoded = json.dumps(meta, ensure_ascii=False)
    (event_id,) = conn.execute(
        _INSERT_EVENT + " ON CONFLICT(idem_key) DO UPDATE SET title = excluded.title, text = excluded.text,"
        " cjk = excluded.cjk, meta = excluded.meta, client_ts = excluded.client_ts,"
        " received_at = excluded.received_at, size = excluded.size RETURNING id",
        (
            key, "memd", session_id, project_id, session_id, kind, None, title, text, encoded,
            encoded, importance, ts, now, len(encoded), False, has_cjk(title) or has_cjk(text),
        ),
    ).fetchone()  # fmt: skip
    assign_citation(conn, event_id)
    return event_id


def write_batch(
    conn: sqlite3.Connection,
    jobs: list[tuple[NewEvent, str | None]],
    rejections: list[Rejection],
    summarize_sessions: frozenset[str] = frozenset(),
    working: working_set.Limits = working_set.DEFAULT,
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
                _savepoint(conn, working_set.trim, conn, project_id, now, working.hours, working.size)
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
    working: working_set.Limits,
) -> tuple[Committed, int | None, bool]:  # fmt: skip
    """Store one event with everything derived from it; (result, its project, whether it
    joined the project's working set)."""
    project_id = (project_ids.get(root) or _project_id(conn, root, now)) if root else None
    result = _insert(conn, event, project_id)
    admitted = not result.duplicate and working_set.admit(
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
        project_id = (project_ids.get(root) or _project_id(conn, root, now)) if root else None
        return _insert(conn, event, project_id, derive=False), project_id, False

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


def fatal(conn: sqlite3.Connection, exc: BaseException) -> bool:
    """Whether ``exc`` ends the transaction (the batch fails) rather than one step of it."""
    if not isinstance(exc, Exception) or isinstance(exc, MemoryError) or not conn.in_transaction:
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF in FATAL


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def describe(exc: BaseException) -> str:
    """Why, without event content: SQLite's own message (it names tables, columns and
    constraints, never values); for any other exception, its type and where memd raised it
    (its message may quote the data)."""
    if isinstance(exc, sqlite3.Error):
        return str(exc)[:200]
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith(_PACKAGE + os.sep)]
    if not frames:
        return type(exc).__name__
    where = (ours or frames)[-1]
    path = os.path.relpath(where.filename, os.path.dirname(_PACKAGE)) if ours else os.path.basename(where.filename)
    return f"{type(exc).__name__} in {where.name} ({path}:{where.lineno})"


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


def checkpoint(conn: sqlite3.Connection) -> bool:
    """Move the WAL into the database without waiting on anyone (PASSIVE).

    True when the whole log was copied, so that the next commit restarts the WAL.
    """
    _busy, log_frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return log_frames == copied


class Writer:
    """Owns the write connection; ``run`` is its task, ``submit``/``reject`` its API.

    The connection is used only from ``run``'s worker thread calls, one at a time.
    """

    def __init__(
        self, conn: sqlite3.Connection, batch_max: int = 256, working: working_set.Limits = working_set.DEFAULT
    ) -> None:
        self._conn = conn
        self.database = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
        self._batch_max = batch_max
        self._working = working
        self._thread = anyio.CapacityLimiter(1)
        self._send, self._receive = anyio.create_memory_object_stream[_Job](math.inf)
        self._commits = 0  # since the last checkpoint
        self.health = CommitHealth()
        """The last commits' outcome (``memctl status``): failing since when and why, or fine."""
        self._summarized: dict[str, float] = {}  # session -> when its summary was last refreshed

    async def submit(self, event: NewEvent, project: str | None) -> Committed:
        """Store ``event`` (of project root ``project``); return once it is committed.
        Raises ``EventError`` if this event could not be stored, ``StoreError`` if its batch
        could not be committed."""
        job = await self._done(_Job((event, project)))
        assert isinstance(job.result, Committed)
        return job.result

    async def call(self, fn: Callable[..., T], *args: object) -> T:
        """Run ``fn(connection, *args)`` on the writer's thread, in turn with the batches.

        ``fn`` manages its own transaction; its exceptions reach the caller as they are.
        """
        job = await self._done(_Job(_Call(fn, args)))
        return job.result  # type: ignore[return-value]

    async def reject(self, event: str, size: int, reason: str) -> None:
        """Record that a payload was refused (never its content); return once it is recorded."""
        try:
            await self._done(_Job(Rejection(time.time(), event, size, reason[:500])))
        except StoreError:
            log.warning("rejection_not_recorded", hook_event=event, size=size)

    async def _done(self, job: _Job) -> _Job:
        try:
            self._send.send_nowait(job)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StoreError("the daemon is shutting down") from None
        await job.done.wait()
        if job.error is not None:
            raise job.error
        return job

    def close(self) -> None:
        """No more submissions; ``run`` commits what is queued, then returns."""
        self._send.close()

    def release(self) -> None:
        """Drop the queue for good (after ``run`` returned, or if it never ran)."""
        self._send.close()
        self._receive.close()

    async def run(self) -> None:
        async with self._receive:
            while True:
                first = None
                with anyio.move_on_after(CHECKPOINT_IDLE if self._commits else math.inf):
                    try:
                        first = await self._receive.receive()
                    except anyio.EndOfStream:
                        break
                if first is None:
                    await self._checkpoint()
                    continue
                batch = [first]
                while len(batch) < self._batch_max:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except anyio.WouldBlock:
                        break
                # A batch in flight is finished even during cancellation: half a
                # transaction would leave callers waiting on a result that never comes.
                with anyio.CancelScope(shield=True):
                    await self._commit(batch)
                    if self._commits >= CHECKPOINT_FORCED:
                        await self._checkpoint()
        with anyio.CancelScope(shield=True):
            await self._checkpoint()

    async def _checkpoint(self) -> None:
        try:
            complete = await self._in_thread(checkpoint, self._conn)
        except sqlite3.Error as exc:
            log.warning("checkpoint_failed", error=str(exc))
            complete = False
        # An incomplete one (a reader holds old pages) is retried at the next idle moment,
        # not in a loop: reset the count either way.
        self._commits = 0
        if not complete:
            log.debug("checkpoint_incomplete")

    def _due_summaries(self, events: list[NewEvent]) -> frozenset[str]:
        now = time.monotonic()
        due = set()
        for event in events:
            if not event.session_id or event.event not in SUMMARY_EVENTS:
                continue
            last = self._summarized.get(event.session_id)
            if event.event in ALWAYS or last is None or now - last >= SUMMARY_INTERVAL:
                due.add(event.session_id)
                self._summarized[event.session_id] = now
        if len(self._summarized) > 10_000:  # forget sessions long over
            self._summarized = dict(sorted(self._summarized.items(), key=lambda kv: kv[1])[-1_000:])
        return frozenset(due)

    async def _in_thread(self, fn: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._thread)

    async def _commit(self, batch: list[_Job]) -> None:
        calls = [job for job in batch if isinstance(job.item, _Call)]
        batch = [job for job in batch if not isinstance(job.item, _Call)]
        if batch:
            await self._write(batch)
        for job in calls:
            assert isinstance(job.item, _Call)
            try:
                job.result = await self._in_thread(job.item.fn, self._conn, *job.item.args)
                self._commits += 1
            except Exception as exc:
                job.error = exc
            job.done.set()

    async def _write(self, batch: list[_Job]) -> None:
        rejections = [job.item for job in batch if isinstance(job.item, Rejection)]
        jobs = [job for job in batch if not isinstance(job.item, Rejection)]  # (a Rejection is a tuple too)
        started = time.perf_counter()
        items = [job.item for job in jobs if isinstance(job.item, tuple)]
        summarize = self._due_summaries([event for event, _ in items])
        try:
            results = await self._in_thread(write_batch, self._conn, items, rejections, summarize, self._working)
        except Exception as exc:  # sqlite3.Error above all; any failure must reach the callers
            error = StoreError(f"could not commit {len(jobs)} event(s): {exc}")
            unexpected = not isinstance(exc, sqlite3.Error)
            log.error("commit_failed", events=len(jobs), error=str(exc), exc_info=unexpected)
            self.health = CommitHealth(
                self.health.failing_since or time.time(), self.health.failures + 1,
                diagnose(exc, self.database), str(exc),
            )  # fmt: skip
            for job in batch:
                job.error = error
                job.done.set()
            return
        self._commits += 1
        if self.health.failing_since is not None:
            log.info("commits_resumed", failures=self.health.failures)
            self.health = CommitHealth()
        new = sum(isinstance(r, Committed) and not r.duplicate for r in results)
        failed = sum(isinstance(r, Failed) for r in results)
        log.debug(
            "committed",
            events=new,
            duplicates=len(results) - new - failed,
            failed=failed,
            rejections=len(rejections),
            ms=round((time.perf_counter() - started) * 1000, 3),
        )
        for job, (event, _), result in zip(jobs, items, results, strict=True):
            if isinstance(result, Failed):
                job.error = EventError(f"{event.event} event not stored: {result.error}: {result.reason}")
            else:
                job.result = result
        for job in batch:
            job.done.set()
