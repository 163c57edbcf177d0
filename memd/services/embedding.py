"""The embedding loop: the outbox drained into the vector index, batch by batch.

    claim a batch from the outbox → embed it (background threads) → store the vectors and
    mark the rows done (one transaction) → add them to the index

Each event is embedded as its windows (``memd.retrieve.windows``): the head first for
every waiting event (stage 0), the rest of a long one later (stage 1).  A batch that
fails is retried one event at a time, so that one bad text does not fail its batch; an
event that keeps failing is given up on (``outbox.fail``).

New events wake the loop (``notify``); it lets them settle for ``SETTLE`` seconds, so a
burst of hooks becomes one batch.  A bulk import ``defer``s it: embedding the first
batches of an import would slow the import down tenfold on a small machine.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import numpy as np
import structlog

from ..config import EmbeddingConfig
from ..retrieve.windows import event_windows
from ..store import outbox
from ..store.writer import Writer
from .background import Background, EmbedderLike

if TYPE_CHECKING:  # usearch loads with the model, not at daemon start (``memd.services.indexer``)
    from .vectors import VectorIndex

__all__ = ["Embedding"]

log = structlog.get_logger("memd.indexer")

SWEEP_INTERVAL = 60.0
IDLE_POLL = 1.0
"""Seconds between outbox polls when no ingest woke the indexer (retries become due)."""
STORE_RETRY = 5.0
"""Seconds the indexer waits after the database refused a write."""
SETTLE = 0.2
"""Seconds the indexer lets new events settle before embedding them: the rest of a burst of
hooks lands first (one batch instead of many), and embedding does not fight the hooks for CPU."""

Embedded = tuple[outbox.Claimed, np.ndarray, bool]
"""A claim, its vectors for its stage, and whether a stage 1 follows."""


class Embedding:
    """Drains the outbox into ``index``; ``run`` and ``sweep`` are its tasks (the indexer's)."""

    def __init__(self, writer: Writer, config: EmbeddingConfig, index_lock: anyio.Lock) -> None:
        self.writer = writer
        self.batch_size = config.batch_size
        self.embedded = 0
        self.failed = 0
        self._index_lock = index_lock
        """The indexer's: one lock over storing a batch and adding it to the index."""
        self._wake = anyio.Event()
        self._quiet_until = 0.0
        self._background = Background(config.threads or os.cpu_count() or 1)

    def notify(self) -> None:
        """New events are in the outbox: look now rather than at the next poll."""
        self._wake.set()

    def defer(self, seconds: float) -> None:
        """Embed nothing for ``seconds`` (each import batch defers again; the backlog follows after)."""
        self._quiet_until = max(self._quiet_until, time.monotonic() + seconds)

    def close(self) -> None:
        self._background.close()

    async def run(self, embedder: EmbedderLike, index: VectorIndex) -> None:
        """Embed what the outbox holds, then wait for more; until cancelled."""
        while True:
            while (quiet := self._quiet_until - time.monotonic()) > 0:
                await anyio.sleep(quiet)
            self._wake = anyio.Event()
            try:
                claimed = await self.writer.call(outbox.claim, self.batch_size, time.time())
                if claimed:
                    await self._embed(embedder, index, claimed)
                    continue
            except (sqlite3.Error, OSError) as exc:  # a full disk, a lock held too long: try again later
                log.warning("embedding_paused", error=str(exc), seconds=STORE_RETRY)
                await anyio.sleep(STORE_RETRY)
                continue
            with anyio.move_on_after(IDLE_POLL):
                await self._wake.wait()
            if self._wake.is_set():
                await anyio.sleep(SETTLE)

    async def sweep(self) -> None:
        """Give claims back that a crashed batch left behind (``outbox.recover``); until cancelled."""
        while True:
            await anyio.sleep(SWEEP_INTERVAL)
            recovered = await self.writer.call(outbox.recover, time.time() - outbox.STUCK_AFTER)
            if recovered:
                log.warning("outbox_recovered", rows=recovered)

    async def _embed(self, embedder: EmbedderLike, index: VectorIndex, claimed: list[outbox.Claimed]) -> None:
        started = time.perf_counter()
        try:
            results = await self._vectors(embedder, claimed)
            failures: list[tuple[outbox.Claimed, str]] = []
        except Exception:
            # Find the culprits one by one, so that one bad text does not fail its batch.
            results, failures = [], []
            for row in claimed:
                try:
                    results += await self._vectors(embedder, [row])
                except Exception as exc:
                    failures.append((row, f"{type(exc).__name__}: {exc}"))
        async with self._index_lock:  # one lock over both: a forget cannot fall in between (``Indexer.delete``)
            added, removed = await self.writer.call(outbox.complete, embedder.version, results)
            await anyio.to_thread.run_sync(_apply, index, added, removed)
        for row, error in failures:
            failed = await self.writer.call(outbox.fail, [row], error, time.time())
            self.failed += failed
            log.warning("embedding_failed", event_id=row.event_id, error=error[:200], final=bool(failed))
        self.embedded += len(results)
        log.debug("embedded", events=len(results), vectors=len(added), ms=round((time.perf_counter() - started) * 1000))

    async def _vectors(self, embedder: EmbedderLike, claimed: Sequence[outbox.Claimed]) -> list[Embedded]:
        """Each claim's vectors for its stage, and whether a stage 1 follows."""
        texts = []
        for row in claimed:
            windows = event_windows(row.title, row.text, row.kind)
            texts.append((windows[:1], len(windows) > 1) if row.stage == 0 else (windows[1:], False))
        flat = [window for parts, _ in texts for window in parts]
        vectors = await self._background.embed(embedder, flat)
        results, at = [], 0
        for row, (parts, more) in zip(claimed, texts, strict=True):
            results.append((row, vectors[at : at + len(parts)], more))
            at += len(parts)
        return results


def _apply(index: VectorIndex, added: list[tuple[int, np.ndarray]], removed: list[int]) -> None:
    """A stored batch into the index: re-embedded keys out, new vectors in (a worker thread)."""
    index.remove(removed)
    if added:
        index.add([key for key, _ in added], np.stack([vector for _, vector in added]))
