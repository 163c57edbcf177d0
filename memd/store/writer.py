"""The single writer: every write to the database goes through one task.

Concurrent ingest requests queue up while a transaction commits, and the next
transaction takes all of them at once (group commit): one ``BEGIN IMMEDIATE`` ...
``COMMIT`` per batch instead of per event.  A caller's ``submit`` returns only after
its batch has committed, so the daemon acknowledges an event only once it is on disk
(WAL, ``synchronous=NORMAL``: durable across a process crash; a power loss may roll
back the last transactions).

The batch itself is plain synchronous SQL (``batch.write_batch``) run in a worker thread
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

import math
import sqlite3
import time
from collections.abc import Callable
from typing import Final, NamedTuple, TypeVar, cast

import anyio
import structlog

from ..capture.prepare import NewEvent
from .batch import SUMMARY_EVENTS, Failed, Rejection, write_batch
from .events import Committed
from .trouble import CommitHealth, EventError, StoreError, diagnose
from .working_set import DEFAULT, Limits

__all__ = ["Writer", "checkpoint"]

log = structlog.get_logger("memd.store")
T = TypeVar("T")

ALWAYS: Final = frozenset({"PreCompact", "SessionEnd"})
"""Of ``SUMMARY_EVENTS``, the ones that refresh a session's summary and snapshot every time
(a Stop at most every SUMMARY_INTERVAL)."""
SUMMARY_INTERVAL: Final = 15.0
"""Seconds between two Stop-triggered summaries of one session (SessionEnd always
refreshes): a summary reads the whole session, ~10 ms per 1,000 events."""
CHECKPOINT_IDLE: Final = 0.05
"""Seconds without a request after which the writer checkpoints the WAL."""
CHECKPOINT_FORCED: Final = 200
"""Commits after which the writer checkpoints even under sustained load."""


class _Event(NamedTuple):
    """An event to store, with its project root."""

    event: NewEvent
    project: str | None


class _Call(NamedTuple):
    """Any other write: ``fn(connection, *args)`` run on the writer's thread."""

    fn: Callable[..., object]
    args: tuple[object, ...]


class _Job:
    """One write waiting for its turn: an event (with its project root), a rejection or a call."""

    __slots__ = ("done", "error", "item", "result")

    def __init__(self, item: _Event | Rejection | _Call) -> None:
        self.item = item
        self.done = anyio.Event()
        self.result: object = None
        self.error: Exception | None = None


def checkpoint(conn: sqlite3.Connection) -> bool:
    """Move the WAL into the database without waiting on anyone (PASSIVE).

    True when the whole log was copied, so that the next commit restarts the WAL.
    """
    _busy, log_frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return bool(log_frames == copied)


class _SummaryClock:
    """Which sessions' summaries a batch refreshes: on PreCompact and SessionEnd always, on a
    Stop at most every ``SUMMARY_INTERVAL`` seconds per session."""

    def __init__(self) -> None:
        self._summarized: dict[str, float] = {}  # session -> when its summary was last refreshed

    def due(self, events: list[NewEvent]) -> frozenset[str]:
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


def _log_committed(results: list[Committed | Failed], rejections: int, started: float) -> None:
    new = sum(isinstance(r, Committed) and not r.duplicate for r in results)
    failed = sum(isinstance(r, Failed) for r in results)
    log.debug(
        "committed",
        events=new,
        duplicates=len(results) - new - failed,
        failed=failed,
        rejections=rejections,
        ms=round((time.perf_counter() - started) * 1000, 3),
    )


class Writer:
    """Owns the write connection; ``run`` is its task, ``submit``/``reject`` its API.

    The connection is used only from ``run``'s worker thread calls, one at a time.
    """

    def __init__(self, conn: sqlite3.Connection, batch_max: int = 256, working: Limits = DEFAULT) -> None:
        self._conn = conn
        self.database = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
        self._batch_max = batch_max
        self._working = working
        self._thread = anyio.CapacityLimiter(1)
        self._send, self._receive = anyio.create_memory_object_stream[_Job](math.inf)
        self._commits = 0  # since the last checkpoint
        self.health = CommitHealth()
        """The last commits' outcome (``memctl status``): failing since when and why, or fine."""
        self._summaries = _SummaryClock()

    async def submit(self, event: NewEvent, project: str | None) -> Committed:
        """Store ``event`` (of project root ``project``); return once it is committed.
        Raises ``EventError`` if this event could not be stored, ``StoreError`` if its batch
        could not be committed."""
        job = await self._done(_Job(_Event(event, project)))
        assert isinstance(job.result, Committed)
        return job.result

    async def call(self, fn: Callable[..., T], *args: object) -> T:
        """Run ``fn(connection, *args)`` on the writer's thread, in turn with the batches.

        ``fn`` manages its own transaction; its exceptions reach the caller as they are.
        """
        job = await self._done(_Job(_Call(fn, args)))
        return cast(T, job.result)  # a call's job holds what fn returned; jobs keep their results as object

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
        jobs = [(job, job.item) for job in batch if isinstance(job.item, _Event)]
        started = time.perf_counter()
        items = [item for _, item in jobs]
        summarize = self._summaries.due([item.event for item in items])
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
        _log_committed(results, len(rejections), started)
        for (job, item), result in zip(jobs, results, strict=True):
            if isinstance(result, Failed):
                job.error = EventError(f"{item.event.event} event not stored: {result.error}: {result.reason}")
            else:
                job.result = result
        for job in batch:
            job.done.set()
