"""What people and agents do to memories on purpose: keep one, forget some, list sessions.

``remember`` goes through capture like a hook event (one code path: the privacy filter,
the normalizer, the idempotency key), as the ``Remember`` pseudo-event.  ``forget``
deletes through ``memd.store.forget`` on the writer, with the vector index held still
so that no embedding batch can put a forgotten vector back.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Awaitable, Callable

import structlog

from .indexer import Indexer
from .protocol import (
    Error,
    EventRow,
    Forget,
    Forgotten,
    Ingest,
    Ingested,
    Remember,
    Remembered,
    Reply,
    SessionInfo,
    SessionList,
    Sessions,
)
from .retrieve import layers
from .retrieve.engine import Retriever
from .retrieve.lanes import find_project
from .store import Store
from .store.forget import forget, plan

__all__ = ["Lifecycle"]

log = structlog.get_logger("memd.lifecycle")

MAX_SESSIONS = 200


class Lifecycle:
    def __init__(
        self,
        store: Store,
        retriever: Retriever,
        indexer: Indexer | None,
        ingest: Callable[[Ingest], Awaitable[Reply]],
    ) -> None:
        self.store = store
        self.retriever = retriever
        self.indexer = indexer
        self._ingest = ingest

    async def remember(self, request: Remember) -> Reply:
        if not request.text.strip():
            return Error(code="invalid_request", message="nothing to remember: the text is empty")
        payload = {"hook_event_name": "Remember", "session_id": request.session, "cwd": request.cwd}
        payload["text"] = request.text
        reply = await self._ingest(
            Ingest(event="Remember", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())
        )
        if not isinstance(reply, Ingested):
            return reply
        cite = await self.store.readers.run(_cite, reply.event_id)
        return Remembered(event_id=reply.event_id, cite=cite, duplicate=reply.duplicate)

    async def forget(self, request: Forget) -> Forgotten:
        resolved = await self.store.readers.run(layers.resolve_all, request.ids)
        ids = [event_id for event_id in resolved if event_id is not None]
        missing = [ref for ref, event_id in zip(request.ids, resolved, strict=True) if event_id is None]
        planned = await self.store.writer.call(plan, ids)
        rows = await self.store.readers.run(_rows, planned.events)
        reply = Forgotten(events=rows, derived=len(planned.derived), missing=missing, dry_run=request.dry_run)
        if request.dry_run or not planned.events:
            return reply
        now = time.time()

        async def write() -> list[int]:
            return await self.store.writer.call(forget, planned, "ids", now)

        reply.vectors = await self.indexer.delete(write) if self.indexer else len(await write())
        reply.refreshed = len(planned.sessions)
        log.info("forgotten", events=len(planned.events), derived=len(planned.derived), vectors=reply.vectors)
        return reply

    async def sessions(self, request: Sessions) -> SessionList:
        root, project_id = None, None
        if request.project:
            found = await self.store.readers.run(find_project, request.project)
            if found is None:
                return SessionList(scope=request.project, sessions=[])
            root, project_id = found
        elif request.cwd:
            root, project_id = await self.retriever.project(request.cwd)
            if project_id is None:
                return SessionList(scope=root, sessions=[])
        limit = max(1, min(request.limit, MAX_SESSIONS))
        return SessionList(scope=root, sessions=await self.store.readers.run(_sessions, project_id, limit))


def _cite(conn: sqlite3.Connection, event_id: int) -> str:
    row = conn.execute("SELECT cite FROM citations WHERE event_id = ?", (event_id,)).fetchone()
    return row[0] if row else ""


def _rows(conn: sqlite3.Connection, event_ids: list[int]) -> list[EventRow]:
    marks = ",".join("?" * len(event_ids))
    rows = conn.execute(
        "SELECT e.id, e.session_id, p.root, e.kind, e.tool, e.title, e.importance, e.received_at, e.size,"
        " e.event, e.client_ts, coalesce(c.cite, '') FROM events e LEFT JOIN projects p ON p.id = e.project_id"
        f" LEFT JOIN citations c ON c.event_id = e.id WHERE e.id IN ({marks}) ORDER BY e.id",
        event_ids,
    )
    fields = ("id", "session_id", "project", "kind", "tool", "title", "importance", "received_at", "size")
    return [EventRow(**dict(zip((*fields, "event", "client_ts", "cite"), r, strict=True))) for r in rows]


def _sessions(conn: sqlite3.Connection, project_id: int | None, limit: int) -> list[SessionInfo]:
    where = "WHERE s.project_id = ?" if project_id is not None else ""
    args = (project_id, limit) if project_id is not None else (limit,)
    return [
        SessionInfo(id=r[0], project=r[1], first_seen=r[2], last_seen=r[3], events=r[4], summary=r[5] or "")
        for r in conn.execute(
            "SELECT s.id, p.root, s.first_seen, s.last_seen, s.events, s.summary FROM sessions s"
            f" LEFT JOIN projects p ON p.id = s.project_id {where} ORDER BY s.last_seen DESC LIMIT ?",
            args,
        )
    ]
