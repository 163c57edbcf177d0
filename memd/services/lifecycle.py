"""What people and agents do to memories on purpose: keep one, forget some, scan for
secrets, list sessions.  The server's one handle on them.

    remember   goes through capture like a hook event (one code path: the privacy filter,
               the normalizer, the idempotency key), as the ``Remember`` pseudo-event
    forget     ``memd.services.forget``: a selector resolved, the spool too, then erased
    scan       ``memd.services.scan``: today's secret rules over every stored event
    sessions   ``memctl history``
    erase      ``memd.services.erasure``: deleting for good (retention, ``memd.services.janitor``, too)
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from functools import partial

import anyio

from ..capture.prepare import Capture
from ..protocol import Error, Forget, Ingest, Ingested, Remember, Remembered, Reply, Scan, SessionList, Sessions
from ..store import Store
from ..store.forget import Plan
from ..store.listings import cite_of, session_list
from ..store.projects import find_project
from . import erasure, scan
from .forget import Forgetting
from .indexer import Indexer
from .search import Retriever

__all__ = ["Lifecycle"]

MAX_SESSIONS = 200


class Lifecycle:
    """Remember, forget, scan, erase and list sessions (see the module doc)."""

    def __init__(
        self,
        store: Store,
        retriever: Retriever,
        indexer: Indexer | None,
        ingest: Callable[[Ingest], Awaitable[Reply]],
        *,
        capture: Capture | None = None,
        spool_dir: str | None = None,
        forgot: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.forgot = forgot
        """Called after each erase that removed memories: sync pushes the tombstones now, not at
        its next interval (``Syncer.notify``)."""
        self.retriever = retriever
        self.indexer = indexer
        self._ingest = ingest
        self.capture = capture
        self.spool_lock = anyio.Lock()
        """Held by the daemon's spool drain and by a forget from its look at the spool to its
        delete: no frame the forget missed is ingested in between."""
        self.forgetting = Forgetting(store, retriever, indexer, capture, spool_dir, self.spool_lock, forgot)

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
        cite = await self.store.readers.run(cite_of, reply.event_id)
        return Remembered(event_id=reply.event_id, cite=cite, duplicate=reply.duplicate)

    async def forget(self, request: Forget) -> Reply:
        return await self.forgetting.forget(request)

    async def erase(self, planned: Plan, selector: str) -> erasure.Erased:
        """Delete what ``planned`` names, record it, and purge the files."""
        erased = await erasure.erase(self.store, self.indexer, planned, selector)
        self.forgot()
        return erased

    async def scan(self, request: Scan) -> Reply:
        """Today's secret rules over every stored event; with ``apply``, redacted in place."""
        if self.capture is None:
            return Error(code="unavailable", message="this daemon has no capture pipeline to scan with")
        return await scan.scan(self.store, self.indexer, self.capture, request)

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
        listed = await self.store.readers.run(
            partial(session_list, agent=request.agent, before=request.before, session=request.id), project_id, limit
        )
        return SessionList(scope=root, sessions=listed)
