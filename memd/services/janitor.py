"""The janitor: retention in the background, at most once a day.

At start it waits for the vector index to be open (so that the keys of deleted vectors
leave an index that is there, not one still loading), switches a small database to
incremental vacuum (``retention.switch_to_incremental``), then looks every ``CHECK``
seconds whether a day has passed since the last pass.  The time of the last pass is kept
in the ``settings`` table, so a restart, or a socket-activated daemon started and idled
out many times a day, does not run it again.  ``collect`` is the pass, and ``memctl gc``
(which also runs it when ``[retention] enabled`` is false).

A failure is logged and retried at the next day's pass; it never takes the daemon down.
"""

from __future__ import annotations

import sqlite3
import time

import anyio
import structlog

from ..config import RetentionConfig
from ..protocol import Collected, Gc
from ..store import Store, StoreError, settings
from ..store.forget import plan
from ..store.listings import listing
from ..store.retention import LAST_RUN, SWITCH_AT_START_BYTES, Policy, measure, select, switch_to_incremental
from .indexer import Indexer
from .lifecycle import Lifecycle

__all__ = ["INTERVAL", "Janitor", "seconds_until_due"]

log = structlog.get_logger("memd.janitor")

INTERVAL = 86400.0
"""At most one pass a day."""
CHECK = 3600.0
"""Seconds between looks at whether a pass is due."""
INDEX_POLL = 1.0
MAX_ROUNDS = 3
"""Passes over the size cap in one run, when the first estimate freed too little."""


def seconds_until_due(last_run: float | None, now: float) -> float:
    """How long until the next pass (0: now).  A last run in the future (the clock went
    back) waits at most one interval."""
    if last_run is None:
        return 0.0
    return max(0.0, min(INTERVAL, last_run + INTERVAL - now))


class Janitor:
    def __init__(
        self, store: Store, lifecycle: Lifecycle, config: RetentionConfig, database: str, indexer: Indexer | None
    ) -> None:
        self.store = store
        self.lifecycle = lifecycle
        self.config = config
        self.database = database
        self.indexer = indexer
        self._lock = anyio.Lock()

    @property
    def policy(self) -> Policy:
        return Policy.of(self.config)

    async def run(self) -> None:
        while self.indexer is not None and self.indexer.state in ("loading", "indexing"):
            await anyio.sleep(INDEX_POLL)
        await self._switch_small_database()
        while True:
            wait = CHECK
            if self.config.enabled:
                due_in = seconds_until_due(await self.last_run(), time.time())
                if due_in == 0:
                    await self._pass()
                    due_in = INTERVAL
                else:
                    log.info("retention_not_due", due_in_s=round(due_in))
                wait = min(CHECK, due_in)
            await anyio.sleep(wait)

    async def _pass(self) -> None:
        try:
            await self.collect(Gc())
        except StoreError as exc:  # the daemon is shutting down
            log.info("retention_skipped", error=str(exc))
        except Exception:  # a database error, a bug: tried again tomorrow
            log.exception("retention_failed")

    async def _switch_small_database(self) -> None:
        try:
            if await self.store.writer.call(switch_to_incremental, SWITCH_AT_START_BYTES):
                log.info("auto_vacuum_switched", mode="incremental")
        except (sqlite3.Error, StoreError) as exc:
            log.warning("auto_vacuum_not_switched", error=str(exc))

    async def last_run(self) -> float | None:
        value = await self.store.readers.run(settings.get, LAST_RUN, "")
        try:
            return float(value)
        except ValueError:
            return None

    async def collect(self, request: Gc) -> Collected:
        """One retention pass (``memctl gc``): what it removed, or would remove."""
        async with self._lock:
            started = time.perf_counter()
            readers, writer = self.store.readers, self.store.writer
            now = time.time()
            size = await readers.run(measure, self.database)
            reply = Collected(
                last_run=await self.last_run(), bytes_before=size.file_bytes, used_bytes=size.used_bytes,
                max_db_bytes=self.policy.max_db_bytes, max_age_days=self.policy.max_age_days,
                auto_vacuum=size.auto_vacuum, dry_run=request.dry_run,
            )  # fmt: skip
            for round_ in range(MAX_ROUNDS):
                choice = await readers.run(select, self.policy, now, size.used_bytes)
                planned = await readers.run(plan, choice.aged + choice.capped)
                if round_ == 0:
                    reply.events, reply.kinds = await readers.run(listing, planned.events)
                reply.total += len(planned.events)
                reply.aged += len(choice.aged)
                reply.capped += len(choice.capped)
                reply.derived += len(planned.derived)
                if request.dry_run or not planned.events:
                    break
                erased = await self.lifecycle.erase(planned, "retention")
                reply.vectors += erased.vectors
                reply.refreshed += erased.sessions
                size = await readers.run(measure, self.database)
                if not choice.capped or size.used_bytes <= self.policy.max_db_bytes:
                    break
            if request.dry_run:
                reply.bytes_after = reply.bytes_before
                return reply
            if request.vacuum:
                reply.vacuumed = await writer.call(switch_to_incremental, None)
            await writer.call(settings.put, LAST_RUN, repr(now))
            size = await readers.run(measure, self.database)
            reply.bytes_after, reply.used_bytes, reply.auto_vacuum = size.file_bytes, size.used_bytes, size.auto_vacuum
        log.info(
            "retention", events=reply.total, aged=reply.aged, capped=reply.capped, derived=reply.derived,
            vectors=reply.vectors, bytes_before=reply.bytes_before, bytes_after=reply.bytes_after,
            vacuumed=reply.vacuumed, ms=round((time.perf_counter() - started) * 1000),
        )  # fmt: skip
        return reply
