"""Saving the vector index file, when it costs nobody.

Saving stalls the whole daemon: usearch serializes while holding the GIL (~100 ms per
150k vectors here, ~350 ms at 100k events on a busy machine), so no hook is answered
meanwhile.  The file is only a cache of the vectors in SQLite (a stale one is caught up
at start, without re-embedding: ``memd.services.index_check``), so it is saved when it
costs nobody: after ``SAVE_IDLE`` seconds without an event or a search, at most every
``SAVE_INTERVAL``; at the latest after ``SAVE_AT_MOST`` seconds of constant activity; and
at shutdown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import structlog

if TYPE_CHECKING:  # usearch loads with the model, not at daemon start (``memd.services.indexer``)
    from .vectors import VectorIndex

__all__ = ["Saver"]

log = structlog.get_logger("memd.indexer")

SAVE_INTERVAL = 60.0
SAVE_IDLE = 20.0
SAVE_AT_MOST = 1800.0
SAVE_CHECK = 5.0


class Saver:
    """Saves the indexer's index (``index_of()``, None until it is open) under its lock."""

    def __init__(self, index_lock: anyio.Lock, index_of: Callable[[], VectorIndex | None]) -> None:
        self._index_lock = index_lock
        self._index_of = index_of
        self._active_at = time.monotonic()
        """When the last event or search came: the index is saved in quiet moments."""

    def touch(self) -> None:
        """An event or a search came: not a quiet moment."""
        self._active_at = time.monotonic()

    async def run(self) -> None:
        """Save in quiet moments, or after ``SAVE_AT_MOST``; until cancelled."""
        saved_at = time.monotonic()
        while True:
            await anyio.sleep(SAVE_CHECK)
            now = time.monotonic()
            idle = now - self._active_at >= SAVE_IDLE and now - saved_at >= SAVE_INTERVAL
            if idle or now - saved_at >= SAVE_AT_MOST:
                await self.save()
                saved_at = now

    async def save(self) -> None:
        """Write the index file if it changed since the last save."""
        index = self._index_of()
        if index is None or not index.dirty:
            return
        async with self._index_lock:
            started = time.perf_counter()
            try:
                await anyio.to_thread.run_sync(index.save)
            except OSError as exc:
                log.error("vector_index_save_failed", error=str(exc))
                return
        log.debug("vector_index_saved", vectors=len(index), ms=round((time.perf_counter() - started) * 1000))
