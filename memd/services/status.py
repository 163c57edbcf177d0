"""What the daemon reports about itself: ``memctl status`` (``Status``), the embedding's
state, the daemon's part of ``memctl stats`` (``Stats``), and ``Ping``'s answer."""

from __future__ import annotations

import os
import time

from memd_wire import spooled
from memd_wire.frame import PROTOCOL_VERSION

from .. import __version__
from ..protocol import (
    CommitsFailing,
    EmbeddingStatus,
    Ping,
    Pong,
    Stats,
    StatsReport,
    Status,
    StatusReport,
)
from ..store import Store, outbox, queries
from ..store.trouble import CommitHealth
from .activity import Activity
from .indexer import Indexer
from .ingest import Ingester
from .limits import file_limit
from .places import Places
from .recall import Recall
from .sync import Syncer

__all__ = ["Reports", "commits_failing"]


def commits_failing(health: CommitHealth) -> CommitsFailing | None:
    """The writer's trouble, while its commits fail; None while they succeed."""
    if health.failing_since is None or health.trouble is None:
        return None
    return CommitsFailing(
        since=health.failing_since, failures=health.failures, reason=health.trouble.reason,
        fix=health.trouble.fix, detail=health.detail,
    )  # fmt: skip


class Reports:
    """Builds the daemon's reports from the store, the indexer and what the server saw."""

    def __init__(
        self,
        places: Places,
        store: Store,
        indexer: Indexer | None,
        model: str,
        activity: Activity,
        ingester: Ingester,
        recall: Recall,
        syncer: Syncer,
    ) -> None:
        """``model``: the configured embedding model, reported when there is no indexer."""
        self.places = places
        self.store = store
        self.indexer = indexer
        self.model = model
        self.activity = activity
        self.ingester = ingester
        self.recall = recall
        self.syncer = syncer

    async def ping(self, request: Ping) -> Pong:
        return Pong(version=__version__, pid=os.getpid())

    async def status(self, request: Status) -> StatusReport:
        store, places = self.store, self.places
        counts = await queries.counts(store.reader)
        return StatusReport(
            version=__version__,
            protocol=PROTOCOL_VERSION,
            pid=os.getpid(),
            uptime=round(self.activity.uptime(), 3),
            socket=places.socket,
            data_dir=places.data_dir,
            database=places.database,
            spool_backlog=spooled.backlog(places.spool_dir),
            spool_failed=len(spooled.failed(places.spool_dir)),
            db_bytes=queries.db_bytes(places.database),
            latency_ms=self.activity.latencies.snapshot(),
            redactions=await queries.redaction_totals(store.reader),
            skipped=self.ingester.skipped,
            lone_surrogates=await queries.lone_surrogate_events(store.reader),
            commits_failing=commits_failing(store.writer.health),
            connections=self.activity.connections,
            max_connections=self.activity.max_connections,
            open_files_limit=file_limit(),
            embedding=await self.embedding(),
            sync=await self.syncer.report(),
            **counts,
        )

    async def embedding(self) -> EmbeddingStatus:
        """The model, the index and the events waiting to be embedded."""
        waiting = await self.store.readers.run(outbox.stats, time.time())
        indexer = self.indexer
        return EmbeddingStatus(
            model=indexer.model if indexer else self.model,
            state=indexer.state if indexer else "disabled",
            reason=indexer.reason if indexer else "",
            index_vectors=len(indexer.index) if indexer and indexer.index is not None else 0,
            stored_vectors=waiting.vectors,
            backlog=waiting.backlog,
            unembedded=waiting.unembedded,
            oldest_pending_age=waiting.oldest_pending_age,
            failed=waiting.failed,
        )

    async def stats(self, request: Stats) -> StatsReport:
        """What the store holds and how it is used (recall's part), with what the daemon
        measures itself: the embedding's state and the hooks' latencies."""
        report = await self.recall.lookups.stats(request)
        report.embedding = await self.embedding()
        report.hook_latency_ms = self.activity.hook_latencies.snapshot()
        return report
