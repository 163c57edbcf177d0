"""Bulk loads: ``memctl import`` (transcripts) and ``memctl import --from-export`` (a restore).

They come in batches, one request after another; embedding waits ``IMPORT_QUIET`` seconds
after each, since the next batch usually comes first and would compete with it.  Once a
batch stored events, the background workers hear of them as of live ones.
"""

from __future__ import annotations

from ..protocol import Import, Imported, Restore
from .consolidation import Consolidator
from .importer import Importer
from .indexer import Indexer

__all__ = ["IMPORT_QUIET", "BulkLoad"]

IMPORT_QUIET = 3.0
"""Seconds the indexer waits after an import or restore batch: the next batch usually comes first."""


class BulkLoad:
    def __init__(self, importer: Importer, consolidator: Consolidator, indexer: Indexer | None) -> None:
        self.importer = importer
        self.consolidator = consolidator
        self.indexer = indexer

    async def import_events(self, request: Import) -> Imported:
        self._loading()
        return self._stored(await self.importer.import_events(request))

    async def restore(self, request: Restore) -> Imported:
        self._loading()
        return self._stored(await self.importer.restore(request))

    def _loading(self) -> None:
        """A batch came: embedding waits, the next batch usually comes first."""
        if self.indexer is not None:
            self.indexer.defer(IMPORT_QUIET)

    def _stored(self, reply: Imported) -> Imported:
        """After events were stored in bulk: the background workers have work."""
        if reply.stored:
            self.consolidator.notify()
            if self.indexer is not None:
                self.indexer.notify()
        return reply
