"""Reading the log back: ``memctl history``, ``search`` and smart search, their limits clamped.

A client may ask for any number of results; the daemon answers at most ``MAX_LIMIT`` (and at
least one), so that one request cannot make it read the whole store into a reply.
"""

from __future__ import annotations

from ..protocol import Events, History, Search, SearchResults, SmartResults, SmartSearch
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
        )
        return Events(events=rows)

    async def search(self, request: Search) -> SearchResults:
        request.limit = clamp(request.limit)
        return await self.retriever.search(request)

    async def smart_search(self, request: SmartSearch) -> SmartResults:
        request.limit = clamp(request.limit)
        return await self.recall.lookups.smart(request)
