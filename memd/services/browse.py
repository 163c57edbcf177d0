"""Reading the log back: ``memctl history``, ``search``, smart search and ``entities``, their limits
clamped.

A client may ask for any number of results; the daemon answers at most ``MAX_LIMIT`` (and at
least one), so that one request cannot make it read the whole store into a reply.
"""

from __future__ import annotations

from ..protocol import Entities, EntitiesResult, Events, History, Search, SearchResults, SmartResults, SmartSearch
from ..retrieve.entity_view import details, most_mentioned
from ..store import Store, queries
from .recall import Recall
from .search import Retriever

__all__ = ["MAX_LIMIT", "Browse", "clamp"]

MAX_LIMIT = 1000


def clamp(limit: int) -> int:
    """``limit`` within 1..``MAX_LIMIT``."""
    return max(1, min(MAX_LIMIT, limit))


class Browse:
    def __init__(self, store: Store, retriever: Retriever, recall: Recall) -> None:
        self.store = store
        self.retriever = retriever
        self.recall = recall

    async def history(self, request: History) -> Events:
        """The latest events, newest first, as filtered."""
        rows = await queries.history(
            self.store.reader,
            clamp(request.limit),
            session=request.session,
            kind=request.kind,
            tool=request.tool,
            project=request.project,
            agent=request.agent,
            before=request.before,
            after=request.after,
            since=request.since,
            until=request.until,
            derived=request.derived,
        )
        return Events(events=rows)

    async def search(self, request: Search) -> SearchResults:
        request.limit = clamp(request.limit)
        return await self.retriever.search(request)

    async def smart_search(self, request: SmartSearch) -> SmartResults:
        request.limit = clamp(request.limit)
        return await self.recall.lookups.smart(request)

    async def entities(self, request: Entities) -> EntitiesResult:
        """The most mentioned entities, or every entity known by ``request.name``, in the scope."""
        scope, project_id, missing = await self.retriever.scope(request)
        reply = EntitiesResult(scope=scope)
        limit = clamp(request.limit)
        if missing:
            reply.notice = missing
        elif request.name:
            reply.details = await self.store.readers.run(details, request.name, request.kind, limit, project_id)
            if not reply.details:
                reply.notice = f"no entity called {request.name!r} in {scope or 'any project'}"
        else:
            reply.entities = await self.store.readers.run(most_mentioned, request.kind, limit, project_id)
        return reply
