"""The single writer: every write to the database goes through one task.

Concurrent ingest requests queue up while a transaction commits, and the next
transaction takes all of them at once (group commit): one ``BEGIN IMMEDIATE`` ...
``COMMIT`` per batch instead of per event.  A caller's ``submit`` returns only after
its batch has committed, so the daemon acknowledges an event only once it is on disk
(WAL, ``synchronous=NORMAL``: durable across a process crash; a power loss may roll
back the last transactions, which the hook's spool does not cover either).

If a commit fails (disk full, database locked past ``busy_timeout``), every caller
in the batch gets a ``StoreError`` and nothing of the batch is kept; the daemon
replies with an error and the hook client spools the event for a later try.
"""

from __future__ import annotations

import math
import os
import sqlite3
import time
from typing import NamedTuple

import aiosqlite
import anyio
import structlog

from ..capture import NewEvent

__all__ = ["Committed", "StoreError", "Writer"]

log = structlog.get_logger("memd.store")


class StoreError(Exception):
    """The database could not commit; the message says why, without event content."""


class Committed(NamedTuple):
    event_id: int
    duplicate: bool


class _Job:
    __slots__ = ("done", "error", "event", "project", "result")

    def __init__(self, event: NewEvent, project: str | None) -> None:
        self.event = event
        self.project = project
        self.done = anyio.Event()
        self.result: Committed | None = None
        self.error: StoreError | None = None


class _Rejection(NamedTuple):
    received_at: float
    event: str
    size: int
    reason: str


def _marks(n: int) -> str:
    return ",".join("?" * n)


class Writer:
    """Owns the write connection; ``run`` is its task, ``submit``/``reject`` its API."""

    def __init__(self, conn: aiosqlite.Connection, batch_max: int = 256) -> None:
        self._conn = conn
        self._batch_max = batch_max
        self._send, self._receive = anyio.create_memory_object_stream[_Job | _Rejection](math.inf)

    async def submit(self, event: NewEvent, project: str | None) -> Committed:
        """Store ``event`` (of project root ``project``); return once it is committed."""
        job = _Job(event, project)
        try:
            self._send.send_nowait(job)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StoreError("the daemon is shutting down") from None
        await job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    def reject(self, event: str, size: int, reason: str) -> None:
        """Record that a payload was refused (never its content); written with the next batch."""
        try:
            self._send.send_nowait(_Rejection(time.time(), event, size, reason[:500]))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.warning("rejection_not_recorded", hook_event=event, size=size)

    def close(self) -> None:
        """No more submissions; ``run`` commits what is queued, then returns."""
        self._send.close()

    def release(self) -> None:
        """Drop the queue for good (after ``run`` returned, or if it never ran)."""
        self._send.close()
        self._receive.close()

    async def run(self) -> None:
        async with self._receive:
            async for first in self._receive:
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

    async def _commit(self, batch: list[_Job | _Rejection]) -> None:
        jobs = [item for item in batch if isinstance(item, _Job)]
        rejections = [item for item in batch if isinstance(item, _Rejection)]
        started = time.perf_counter()
        try:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                results = await self._write(jobs, rejections)
                await self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
                    await self._conn.execute("ROLLBACK")
                raise
        except Exception as exc:  # sqlite3.Error above all; any failure must reach the callers
            error = StoreError(f"could not commit {len(jobs)} event(s): {exc}")
            unexpected = not isinstance(exc, sqlite3.Error)
            log.error("commit_failed", events=len(jobs), error=str(exc), exc_info=unexpected)
            for job in jobs:
                job.error = error
                job.done.set()
            return
        new = sum(not r.duplicate for r in results)
        log.debug(
            "committed",
            events=new,
            duplicates=len(results) - new,
            rejections=len(rejections),
            ms=round((time.perf_counter() - started) * 1000, 3),
        )
        for job, result in zip(jobs, results, strict=True):
            job.result = result
            job.done.set()

    async def _write(self, jobs: list[_Job], rejections: list[_Rejection]) -> list[Committed]:
        conn = self._conn
        if rejections:
            await conn.executemany(
                "INSERT INTO rejections (received_at, event, size, reason) VALUES (?, ?, ?, ?)", rejections
            )
        if not jobs:
            return []
        keys = list({job.event.idem_key: None for job in jobs})
        existing = dict(
            await conn.execute_fetchall(
                f"SELECT idem_key, id FROM events WHERE idem_key IN ({_marks(len(keys))})", keys
            )
        )
        fresh: dict[str, _Job] = {}
        for job in jobs:
            if job.event.idem_key not in existing:
                fresh.setdefault(job.event.idem_key, job)
        if fresh:
            await self._insert(list(fresh.values()))
            keys = list(fresh)
            existing.update(
                await conn.execute_fetchall(
                    f"SELECT idem_key, id FROM events WHERE idem_key IN ({_marks(len(keys))})", keys
                )
            )
        return [
            Committed(existing[job.event.idem_key], duplicate=fresh.get(job.event.idem_key) is not job) for job in jobs
        ]

    async def _insert(self, jobs: list[_Job]) -> None:
        conn = self._conn
        now = time.time()
        roots = list({job.project: None for job in jobs if job.project})
        project_ids: dict[str, int] = {}
        if roots:
            await conn.executemany(
                "INSERT INTO projects (root, name, first_seen, last_seen) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(root) DO UPDATE SET last_seen = excluded.last_seen",
                [(root, os.path.basename(root) or root, now, now) for root in roots],
            )
            project_ids = dict(
                await conn.execute_fetchall(
                    f"SELECT root, id FROM projects WHERE root IN ({_marks(len(roots))})", roots
                )
            )
        await conn.executemany(
            "INSERT INTO sessions (id, project_id, first_seen, last_seen, events) VALUES (?, ?, ?, ?, 1)"
            " ON CONFLICT(id) DO UPDATE SET events = events + 1,"
            " last_seen = max(last_seen, excluded.last_seen),"
            " project_id = coalesce(project_id, excluded.project_id)",
            [
                (
                    job.event.session_id,
                    project_ids.get(job.project or ""),
                    job.event.client_ts,
                    job.event.client_ts,
                )
                for job in jobs
                if job.event.session_id
            ],
        )
        await conn.executemany(
            "INSERT INTO events (idem_key, session_id, project_id, kind, tool, title, text, payload,"
            " importance, client_ts, received_at, size, truncated)"
            " VALUES (?, ?, coalesce(?, (SELECT project_id FROM sessions WHERE id = ?)),"
            " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    e.idem_key,
                    e.session_id,
                    project_ids.get(job.project or ""),
                    e.session_id,
                    e.kind,
                    e.tool,
                    e.title,
                    e.text,
                    e.payload,
                    e.importance,
                    e.client_ts,
                    e.received_at,
                    e.size,
                    e.truncated,
                )
                for job in jobs
                for e in (job.event,)
            ],
        )
