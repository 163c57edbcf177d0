"""What people and agents do to memories on purpose: keep one, forget some, list sessions.

``remember`` goes through capture like a hook event (one code path: the privacy filter,
the normalizer, the idempotency key), as the ``Remember`` pseudo-event.

``forget`` takes one selector (``memd.store.forget``: ids, a session, a date, a query),
resolves it to events in the daemon, deletes the spooled frames it matches too (a frame
not yet ingested would bring a forgotten secret back at the next drain), then ``erase``s:

- the events in batches on the writer (hooks are served between them), with the vector
  index held still, so that no embedding batch can put a forgotten vector back; the index
  loses the keys and is saved;
- one audit row;
- ``purge``: both keyword indexes merged, free pages given back, the WAL truncated, so
  that the text leaves the files, not only the tables.

Retention (``memd.janitor``) deletes through ``erase`` as well.

``scan`` reads every stored event in batches and runs today's secret rules over it
(``memd.capture.rescan``): what an older memd, or a store kept with ``privacy.secrets``
off, let through.  It lists what it found (titles redacted: the listing must not show the
secret it is about); with ``apply`` it rewrites those events in place (``memd.store.redact``)
with the vector index held still, as ``erase`` deletes, then ``purge``s the files.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import NamedTuple

import anyio
import structlog

from .capture import Capture, InvalidPayload, NewEvent, Skipped, project_root
from .capture.prepare import SECRET_KIND, redaction_counts
from .capture.rescan import Content, Rescan
from .indexer import Indexer
from .protocol import (
    Error,
    EventRow,
    Forget,
    Forgotten,
    Ingest,
    Ingested,
    ProtocolError,
    Remember,
    Remembered,
    Reply,
    Scan,
    Scanned,
    SessionInfo,
    SessionList,
    Sessions,
    decode_request,
)
from .retrieve import layers
from .retrieve.engine import Retriever
from .services import spool
from .store import Store
from .store.forget import BATCH, Plan, batches, by_session, by_time, forget, plan, record
from .store.forget_query import QueryTerms, by_query, document_matches, query_terms, scratch_index
from .store.lanes import find_project
from .store.reclaim import KEYWORD_INDEXES, MAX_MERGE_STEPS, checkpoint_truncate, merge_step, vacuum_step
from .store.redact import Rewrite, Stored, content_after, rewrite

__all__ = ["LIST_MAX", "Erased", "Lifecycle", "selector_of"]

log = structlog.get_logger("memd.lifecycle")

MAX_SESSIONS = 200
LIST_MAX = 1000
"""Events a forget or gc reply lists (``total`` counts them all): a reply stays far below
the frame limit however many go."""
MAX_VACUUM_STEPS = 100_000
SCAN_READ = 500
"""Events a scan reads at a time: each batch is one short read, filtered in a worker thread."""


def selector_of(request: Forget) -> str:
    """The selector kind of a request: ids, session, before or query.  ``ValueError`` saying
    what to change when it names none, or more than one (one kind per forget, so that what
    goes is what the dry run listed, never a union nobody looked at)."""
    given = [
        name
        for name, value in (
            ("ids", request.ids or None),
            ("session", request.session),
            ("before", request.before),
            ("query", request.query),
        )
        if value is not None
    ]
    if not given:
        raise ValueError("say what to forget: ids, a session, a date (before) or a query")
    if len(given) > 1:
        raise ValueError(f"forget one kind of selector at a time, not {' and '.join(given)}")
    return given[0]


class Scope(NamedTuple):
    """Where a ``before`` or ``query`` forget looks: one project, or all (``root`` None)."""

    root: str | None
    project_id: int | None
    known: bool
    """False for a project memd has no event of: nothing there to forget."""


class Erased(NamedTuple):
    events: int
    derived: int
    sessions: int
    vectors: int


def frame_selected(
    kind: str,
    request: Forget,
    event: NewEvent,
    root: str | None,
    terms: QueryTerms | None,
    scratch: sqlite3.Connection | None,
) -> bool:
    """Whether a spooled frame, as capture would store it (``event``; ``root`` its project),
    is one the forget selects: the same rule as for stored events."""
    if kind == "session":
        return event.session_id == request.session
    if root is not None and (not event.cwd or project_root(event.cwd) != root):
        return False
    if kind == "before":
        return request.before is not None and event.client_ts < request.before
    if kind == "query" and terms is not None and scratch is not None:
        return document_matches(scratch, terms, event.title, event.text, f"{event.payload}\n{event.meta}")
    return False


class Lifecycle:
    def __init__(
        self,
        store: Store,
        retriever: Retriever,
        indexer: Indexer | None,
        ingest: Callable[[Ingest], Awaitable[Reply]],
        *,
        capture: Capture | None = None,
        spool_dir: str | None = None,
    ) -> None:
        self.store = store
        self.retriever = retriever
        self.indexer = indexer
        self._ingest = ingest
        self.capture = capture
        self.spool_dir = spool_dir
        self.spool_lock = anyio.Lock()
        """Held by the daemon's spool drain and by a forget from its look at the spool to its
        delete: no frame the forget missed is ingested in between."""

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

    # --- forget ---------------------------------------------------------------------

    async def forget(self, request: Forget) -> Reply:
        try:
            kind = selector_of(request)
        except ValueError as exc:
            return Error(code="invalid_request", message=str(exc))
        terms = query_terms(request.query) if request.query is not None else None
        if terms is not None and not terms.words and not terms.phrase:
            return Error(code="invalid_request", message="the query has no words to look for")
        scope = await self._scope(request) if kind in ("before", "query") else Scope(None, None, True)
        async with self.spool_lock:
            ids, missing = await self._select(kind, request, scope, terms)
            frames = await self._spooled(kind, request, scope, terms)
            planned = await self.store.readers.run(plan, ids)
            rows, kinds = await self.store.readers.run(listing, planned.events)
            reply = Forgotten(
                events=rows, total=len(planned.events), kinds=kinds, derived=len(planned.derived), missing=missing,
                spooled=len(frames), selector=kind, scope=scope.root, dry_run=request.dry_run,
            )  # fmt: skip
            if request.dry_run or not (planned.events or frames):
                return reply
            for path in frames:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            if frames:
                log.info("spooled_frames_forgotten", selector=kind, frames=len(frames))
            if planned.events:
                erased = await self.erase(planned, kind)
                reply.vectors, reply.refreshed = erased.vectors, erased.sessions
        return reply

    async def _scope(self, request: Forget) -> Scope:
        """A request's project (``project``, else the one of ``cwd``), or all of them."""
        if request.all_projects:
            return Scope(None, None, True)
        if request.project:
            found = await self.store.readers.run(find_project, request.project)
            return Scope(request.project, None, False) if found is None else Scope(*found, True)
        if request.cwd:
            root, project_id = await self.retriever.project(request.cwd)
            return Scope(root, project_id, project_id is not None)
        return Scope(None, None, True)

    async def _select(
        self, kind: str, request: Forget, scope: Scope, terms: QueryTerms | None
    ) -> tuple[list[int], list[str]]:
        """The stored events the selector names, and the ids that name none."""
        readers = self.store.readers
        if kind == "ids":
            resolved = await readers.run(layers.resolve_all, request.ids)
            missing = [ref for ref, event_id in zip(request.ids, resolved, strict=True) if event_id is None]
            return [event_id for event_id in resolved if event_id is not None], missing
        if not scope.known:
            return [], []
        if kind == "session":
            return await readers.run(by_session, request.session), []
        if kind == "before":
            return await readers.run(by_time, request.before, scope.project_id), []
        return await readers.run(by_query, terms, scope.project_id), []

    async def _spooled(self, kind: str, request: Forget, scope: Scope, terms: QueryTerms | None) -> list[str]:
        """The spooled frames the selector names (ids name stored events only).  A project
        with nothing stored yet may well have frames waiting: they are looked at too."""
        if kind == "ids" or self.spool_dir is None or self.capture is None:
            return []
        capture, spool_dir = self.capture, self.spool_dir

        def look() -> list[str]:
            scratch = scratch_index() if terms is not None else None
            selected = []
            try:
                for path in spool.pending(spool_dir) + spool.failed(spool_dir):  # set aside, not gone
                    event = _spooled_event(capture, path)
                    if event is not None and frame_selected(kind, request, event, scope.root, terms, scratch):
                        selected.append(path)
            finally:
                if scratch is not None:
                    scratch.close()
            return selected

        return await anyio.to_thread.run_sync(look)

    async def erase(self, planned: Plan, selector: str) -> Erased:
        """Delete what ``planned`` names (``memd.store.forget``), record it, and purge the files."""
        started = time.perf_counter()
        now = time.time()
        done = {"events": 0, "derived": 0, "sessions": 0}
        longest = 0.0  # the longest transaction: what a hook may have waited behind

        async def write() -> list[int]:
            nonlocal longest
            keys: list[int] = []
            for batch in batches(planned):
                batch_started = time.perf_counter()
                deleted = await self.store.writer.call(forget, batch, now)
                longest = max(longest, time.perf_counter() - batch_started)
                keys += deleted.keys
                done["events"] += deleted.events
                done["derived"] += deleted.derived
                done["sessions"] += deleted.sessions
            return keys

        vectors = await self.indexer.delete(write) if self.indexer is not None else len(await write())
        await self.store.writer.call(record, selector, done["events"], done["derived"], now)
        deleted_ms = round((time.perf_counter() - started) * 1000)
        await self.purge()
        log.info(
            "forgotten", selector=selector, **done, vectors=vectors, delete_ms=deleted_ms,
            longest_batch_ms=round(longest * 1000), ms=round((time.perf_counter() - started) * 1000),
        )  # fmt: skip
        return Erased(done["events"], done["derived"], done["sessions"], vectors)

    async def purge(self) -> None:
        """Make deleted text leave the files: merge both keyword indexes into one segment each,
        give free pages back (incremental auto-vacuum), truncate the WAL.  Every step is its
        own short transaction on the writer, so hooks are served in between."""
        writer = self.store.writer
        for table in KEYWORD_INDEXES:
            for step in range(MAX_MERGE_STEPS):
                if await writer.call(merge_step, table, step == 0):
                    break
        for _ in range(MAX_VACUUM_STEPS):
            if await writer.call(vacuum_step):
                break
        if not await writer.call(checkpoint_truncate):
            log.warning("wal_not_truncated", reason="a reader held it; the next checkpoint catches up")

    # --- scan -----------------------------------------------------------------------

    async def scan(self, request: Scan) -> Reply:
        """Today's secret rules over every stored event; with ``apply``, redacted in place."""
        if self.capture is None:
            return Error(code="unavailable", message="this daemon has no capture pipeline to scan with")
        started = time.perf_counter()
        rescan = self.capture.rescan
        found: list[Rewrite] = []
        checked = after = 0
        while rows := await self.store.readers.run(content_after, after, SCAN_READ):
            after, checked = rows[-1].id, checked + len(rows)
            found += await anyio.to_thread.run_sync(_rewrites, rescan, rows)
        kinds: dict[str, int] = {}
        for item in found:
            for name, n in item.counts.items():
                if name.startswith(SECRET_KIND):
                    kinds[name[len(SECRET_KIND) :]] = kinds.get(name[len(SECRET_KIND) :], 0) + n
        rows, _ = await self.store.readers.run(listing, [item.old.id for item in found])
        titles = {item.old.id: item.title for item in found}
        for row in rows:
            row.title = titles[row.id]
        reply = Scanned(checked=checked, events=rows, total=len(found), kinds=dict(sorted(kinds.items())))
        if request.apply and found:
            redacted = refreshed = 0

            async def write() -> list[int]:
                nonlocal redacted, refreshed
                keys: list[int] = []
                now = time.time()
                for start in range(0, len(found), BATCH):
                    done = await self.store.writer.call(rewrite, found[start : start + BATCH], now)
                    redacted, refreshed, keys = redacted + done.events, refreshed + done.sessions, keys + done.keys
                return keys

            vectors = await self.indexer.delete(write) if self.indexer is not None else len(await write())
            await self.purge()
            reply.applied, reply.redacted, reply.refreshed, reply.vectors = True, redacted, refreshed, vectors
        log.info(
            "scanned", checked=checked, found=len(found), secrets=sum(kinds.values()), redacted=reply.redacted,
            vectors=reply.vectors, ms=round((time.perf_counter() - started) * 1000),
        )  # fmt: skip
        return reply

    # --- sessions -------------------------------------------------------------------

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


def _spooled_event(capture: Capture, path: str) -> NewEvent | None:
    """The event a spooled frame would become; None for one that would not become an event
    (unreadable, not an Ingest, skipped or refused: the drain stores nothing of it)."""
    try:
        request = decode_request(spool.read_frame(path))
        if not isinstance(request, Ingest):
            return None
        event = capture.prepare(request, time.time())
    except (OSError, spool.CorruptSpoolFile, ProtocolError, InvalidPayload):
        return None
    return None if isinstance(event, Skipped) else event


def _rewrites(rescan: Rescan, rows: list[Stored]) -> list[Rewrite]:
    """The stored events today's secret rules would change, with their new fields."""
    rewrites = []
    for row in rows:
        changed = rescan.content(Content(row.title, row.text, row.meta, row.payload))
        if changed is not None:
            content, found = changed
            rewrites.append(Rewrite(row, *content, counts=redaction_counts(found)))
    return rewrites


def _cite(conn: sqlite3.Connection, event_id: int) -> str:
    row = conn.execute("SELECT cite FROM citations WHERE event_id = ?", (event_id,)).fetchone()
    return row[0] if row else ""


def listing(conn: sqlite3.Connection, event_ids: list[int]) -> tuple[list[EventRow], dict[str, int]]:
    """The first ``LIST_MAX`` of ``event_ids`` as rows, and how many there are of each kind."""
    kinds = dict(
        conn.execute(
            "SELECT kind, count(*) FROM events WHERE id IN (SELECT value FROM json_each(?)) GROUP BY kind"
            " ORDER BY count(*) DESC, kind",
            (json.dumps(event_ids),),
        )
    )
    return _rows(conn, event_ids[:LIST_MAX]), kinds


def _rows(conn: sqlite3.Connection, event_ids: list[int]) -> list[EventRow]:
    rows = conn.execute(
        "SELECT e.id, e.session_id, p.root, e.kind, e.tool, e.title, e.importance, e.received_at, e.size,"
        " e.event, e.client_ts, coalesce(c.cite, '') FROM events e LEFT JOIN projects p ON p.id = e.project_id"
        " LEFT JOIN citations c ON c.event_id = e.id WHERE e.id IN (SELECT value FROM json_each(?)) ORDER BY e.id",
        (json.dumps(event_ids),),
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
