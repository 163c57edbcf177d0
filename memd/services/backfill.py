"""The events stored before schema 14 get their links and entities in the background
(``memd.store.backfill``): a batch per writer transaction, a pause between, until none is left.
Hooks are served between batches; a failure is logged and tried again a little later."""

from __future__ import annotations

import sqlite3
import time
from typing import Final

import anyio
import structlog

from ..store import StoreError, backfill
from ..store.batch import atomically
from ..store.writer import Writer

__all__ = ["BATCH", "Backfill"]

log = structlog.get_logger("memd.backfill")

BATCH: Final = 100
"""Events a transaction derives: ~0.12 s of the writer at 100k events (hooks wait no longer)."""
PAUSE: Final = 0.05
"""Seconds between batches: the writer serves what hooks sent meanwhile."""
RETRY: Final = 30.0


class Backfill:
    def __init__(self, writer: Writer) -> None:
        self.writer = writer

    async def run(self) -> None:
        started, done = time.monotonic(), 0
        while True:
            try:
                left = await self.writer.call(atomically(backfill.step), BATCH)
            except (StoreError, sqlite3.Error) as exc:
                log.warning("backfill_failed", error=type(exc).__name__, reason=str(exc))
                await anyio.sleep(RETRY)
                continue
            if left == 0:
                break
            done += BATCH
            await anyio.sleep(PAUSE)
        if done:
            log.info("backfilled", events=done, seconds=round(time.monotonic() - started, 1))
