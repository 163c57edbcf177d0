"""Rebuild: recreate derived data from the event log (``memctl rebuild``).

The keyword indexes (and the entities events name, read by the same rules) are rebuilt in
place on the writer's thread; the vectors are queued
again (the indexer drops its index and embeds every event anew, or, without an indexer,
the outbox is refilled for the next daemon that has a model).
"""

from __future__ import annotations

import time

import structlog

from ..protocol import Rebuild, Rebuilt
from ..store import Store, entities, outbox
from ..store.batch import atomically
from ..store.schema import rebuild_keyword_indexes
from .indexer import Indexer

__all__ = ["Rebuilder"]

log = structlog.get_logger("memd.rebuild")


class Rebuilder:
    def __init__(self, store: Store, indexer: Indexer | None) -> None:
        self.store = store
        self.indexer = indexer

    async def rebuild(self, request: Rebuild) -> Rebuilt:
        reply = Rebuilt()
        if request.fts:
            reply.fts_rows = await self.store.writer.call(rebuild_keyword_indexes)
            log.info("keyword_indexes_rebuilt", rows=reply.fts_rows)
            await self.store.writer.call(atomically(entities.rebuild))
            log.info("entities_rebuilt", rows=reply.fts_rows)
        if request.vectors:
            if self.indexer is not None:
                await self.indexer.reset()
            else:
                await self.store.writer.call(outbox.requeue_all)
            reply.vectors_queued = (await self.store.readers.run(outbox.stats, time.time())).backlog
            log.info("vectors_requeued", events=reply.vectors_queued)
        return reply
