"""``forget``: what people and agents ask memd to forget, found and erased.

A forget takes one selector (``memd.store.forget``: ids, a session, a date, a query),
resolves it to events in the daemon, deletes the spooled frames it matches too (a frame
not yet ingested would bring a forgotten secret back at the next drain), then erases
(``memd.services.erasure``).  A dry run lists what would go and stops there.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from typing import NamedTuple

import anyio
import structlog

from memd_wire import spooled

from ..capture.events import Skipped
from ..capture.prepare import Capture, InvalidPayload, NewEvent
from ..capture.project import project_root
from ..protocol import Error, Forget, Forgotten, Ingest, ProtocolError, Reply, decode_request
from ..retrieve import layers
from ..store import Store
from ..store.forget import by_session, by_time, plan
from ..store.forget_query import QueryTerms, by_query, document_matches, query_terms, scratch_index
from ..store.listings import listing
from ..store.projects import find_project, local_projects
from .erasure import erase
from .indexer import Indexer
from .search import Retriever

__all__ = ["Forgetting", "Scope", "frame_selected", "selector_of"]

log = structlog.get_logger("memd.lifecycle")


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


def frame_selected(
    kind: str,
    request: Forget,
    event: NewEvent,
    in_scope: bool,
    terms: QueryTerms | None,
    scratch: sqlite3.Connection | None,
) -> bool:
    """Whether a spooled frame, as capture would store it (``event``; ``in_scope``: in the
    project the forget looks in), is one the forget selects: the same rule as for stored events."""
    if kind == "session":
        return event.session_id == request.session
    if not in_scope:
        return False
    if kind == "before":
        return request.before is not None and event.client_ts < request.before
    if kind == "query" and terms is not None and scratch is not None:
        return document_matches(scratch, terms, event.title, event.text, f"{event.payload}\n{event.meta}")
    return False


class Forgetting:
    """``Forget`` requests: selected, listed (a dry run stops there), the spool looked at, erased."""

    def __init__(
        self,
        store: Store,
        retriever: Retriever,
        indexer: Indexer | None,
        capture: Capture | None,
        spool_dir: str | None,
        spool_lock: anyio.Lock,
        forgot: Callable[[], None],
    ) -> None:
        self.store = store
        self.forgot = forgot  # sync pushes the tombstones now
        self.retriever = retriever
        self.indexer = indexer
        self.capture = capture
        self.spool_dir = spool_dir
        self.spool_lock = spool_lock
        """Held from the look at the spool to the delete: no frame missed is ingested in between."""

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
                erased = await erase(self.store, self.indexer, planned, kind)
                reply.vectors, reply.refreshed = erased.vectors, erased.sessions
                self.forgot()
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

        def read() -> list[tuple[str, NewEvent, str | None]]:
            """Each frame (set-aside ones too: not gone) as the event it would become, and its root."""
            frames = []
            for path in spooled.pending(spool_dir) + spooled.failed(spool_dir):
                event = _spooled_event(capture, path)
                if event is not None:
                    frames.append((path, event, project_root(event.cwd) if event.cwd else None))
            return frames

        frames = await anyio.to_thread.run_sync(read)
        roots = {root for _, _, root in frames if root is not None}
        projects = await self.store.readers.run(local_projects, roots) if scope.project_id is not None else {}

        def in_scope(root: str | None) -> bool:
            """Whether a frame at ``root`` would join the scope's project: another checkout of
            it too; for a project with nothing stored, the same root only."""
            if scope.root is None:
                return True
            if scope.project_id is None:
                return root == scope.root
            return root is not None and projects[root] == scope.project_id

        def select() -> list[str]:
            scratch = scratch_index() if terms is not None else None
            try:
                return [
                    path
                    for path, event, root in frames
                    if frame_selected(kind, request, event, in_scope(root), terms, scratch)
                ]
            finally:
                if scratch is not None:
                    scratch.close()

        return await anyio.to_thread.run_sync(select)


def _spooled_event(capture: Capture, path: str) -> NewEvent | None:
    """The event a spooled frame would become; None for one that would not become an event
    (unreadable, not an Ingest, skipped or refused: the drain stores nothing of it)."""
    try:
        request = decode_request(spooled.read_frame(path))
        if not isinstance(request, Ingest):
            return None
        event = capture.prepare(request, time.time())
    except (OSError, spooled.CorruptSpoolFile, ProtocolError, InvalidPayload):
        return None
    return None if isinstance(event, Skipped) else event
