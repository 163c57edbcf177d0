"""The indexer: one background task that keeps the vector index in step with the log.

    load the model (worker thread)          retrieval is keyword-only until ready
    record the embedding version            a new model or dimension re-embeds all
    open the index, check it against SQLite  current | caught up | rebuilt
    loop: claim a batch from the outbox → embed it (background threads) → store the
          vectors and mark the rows done (one transaction) → add them to the index

**Capture before everything.**  Documents are embedded on ``Background`` threads at the
lowest CPU priority (nice 19; the model computes on its caller's thread, ``memd.embed``),
one part of each batch per thread, one thread per core (``[embedding] threads``).  On an
idle machine they use every core; when hooks, ingest and searches want the CPU, the
kernel runs those first and embedding waits: its backlog grows under load and clears
after.  Queries are embedded on ordinary threads, so a search does not queue behind it.

The model loads in a thread while the daemon already serves hooks: capture never
waits for it.  Until the index is ready, ``search`` returns None and retrieval says
it is keyword-only.  If the model cannot load at all (files missing, bad config),
the reason is logged, shown by ``memctl status``, and events keep queueing in the
outbox, to be embedded once a daemon with a working model runs.

fastembed, ONNX Runtime and usearch are imported in the loading thread, not at
daemon start (they take ~0.5-1 s): the socket is up before any of it.

**Saving the index** stalls the whole daemon: usearch serializes while holding the GIL
(~100 ms per 150k vectors here, ~350 ms at 100k events on a busy machine), so no hook is
answered meanwhile.  The file is only a cache of the vectors in SQLite (a stale one is
caught up at start, without re-embedding), so it is saved when it costs nobody: after
``SAVE_IDLE`` seconds without an event or a search, at most every ``SAVE_INTERVAL``; at
the latest after ``SAVE_AT_MOST`` seconds of constant activity; and at shutdown.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Literal, Protocol

import anyio
import numpy as np
import structlog

from .config import EmbeddingConfig
from .store import outbox
from .store.writer import Writer

if TYPE_CHECKING:
    from .vectors import VectorIndex

__all__ = ["Indexer"]

log = structlog.get_logger("memd.indexer")

SAVE_INTERVAL = 60.0
SAVE_IDLE = 20.0
SAVE_AT_MOST = 1800.0
SAVE_CHECK = 5.0
SWEEP_INTERVAL = 60.0
IDLE_POLL = 1.0
"""Seconds between outbox polls when no ingest woke the indexer (retries become due)."""
STORE_RETRY = 5.0
"""Seconds the indexer waits after the database refused a write."""
SETTLE = 0.2
"""Seconds the indexer lets new events settle before embedding them: the rest of a burst of
hooks lands first (one batch instead of many), and embedding does not fight the hooks for CPU."""

State = Literal["disabled", "loading", "indexing", "ready", "unavailable"]


def lowest_priority() -> None:
    """Run the calling thread at the lowest CPU priority (nice 19): when the cores are busy,
    the kernel runs ingest, search and the hooks first.  Linux sets it per thread; where the
    call means the whole process, or is refused, the thread keeps its priority."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class Background:
    """Worker threads at the lowest CPU priority that embed documents, each its own part of
    a batch (the model computes on the caller's thread: ``memd.embed``)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="memd-embed", initializer=lowest_priority)

    async def embed(self, embedder: EmbedderLike, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        size = -(-len(texts) // self.workers)
        parts = [texts[at : at + size] for at in range(0, len(texts), size)]
        futures = [self._pool.submit(embedder.embed, part) for part in parts]
        # Waited for on an ordinary worker thread: any anyio backend, and the loop stays free.
        return np.concatenate(await anyio.to_thread.run_sync(lambda: [future.result() for future in futures]))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class EmbedderLike(Protocol):
    version: str
    dim: int

    def load(self) -> None: ...
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, text: str) -> np.ndarray: ...


class Indexer:
    """Owns the embedder and the vector index; ``run`` is its task."""

    def __init__(
        self,
        config: EmbeddingConfig,
        database: str,
        data_dir: str,
        writer: Writer,
        embedder: EmbedderLike | None = None,
    ) -> None:
        self.config = config
        self.database = database
        self.models_dir = os.path.join(data_dir, "models")
        self.index_dir = os.path.join(data_dir, "vectors")
        self.writer = writer
        self.embedder = embedder
        self.index: VectorIndex | None = None
        self.state: State = "loading" if config.enabled else "disabled"
        self.reason = "" if config.enabled else "disabled in config ([embedding] enabled = false)"
        self.embedded = 0
        self.failed = 0
        self._wake = anyio.Event()
        self._quiet_until = 0.0
        self._active_at = time.monotonic()
        """When the last event or search came: the index is saved in quiet moments."""
        self._index_lock = anyio.Lock()
        self._embed_thread = anyio.CapacityLimiter(1)
        self._query_thread = anyio.CapacityLimiter(2)
        self._background = Background(config.threads or os.cpu_count() or 1)

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @property
    def model(self) -> str:
        return self.embedder.version if self.embedder is not None else self.config.model

    def notify(self) -> None:
        """New events are in the outbox: look now rather than at the next poll."""
        self._active_at = time.monotonic()
        self._wake.set()

    def defer(self, seconds: float) -> None:
        """Embed nothing for ``seconds``: a bulk import is running, and on a small machine
        embedding its first batches would slow the import down tenfold (the import's
        batches come back to back; each one defers again, and the backlog follows after)."""
        self._quiet_until = max(self._quiet_until, time.monotonic() + seconds)

    # --- the task -------------------------------------------------------------------

    async def run(self) -> None:
        """Load, open, then embed until cancelled.  Never raises: whatever goes wrong here
        leaves the daemon serving (keyword-only), with the reason in ``memctl status``."""
        if not self.config.enabled:
            return
        try:
            if not await self._start():
                return
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._save_loop)
                tg.start_soon(self._sweep_loop)
                await self._embed_loop()
        except Exception as exc:
            log.exception("indexer_failed")
            self.state = "unavailable"
            self.reason = f"the indexer stopped ({type(exc).__name__}: {exc}); see the memd log, restart memd"
        finally:
            with anyio.CancelScope(shield=True):
                await self.save()
            self._background.close()

    def _load(self) -> str:
        """Import the engine and load the model (a worker thread); why not, if it cannot."""
        from .embed import Embedder, ModelUnavailable

        try:
            if self.embedder is None:
                self.embedder = Embedder(self.config, self.models_dir)
            self.embedder.load()
        except ModelUnavailable as exc:
            return str(exc)
        return ""

    async def _start(self) -> bool:
        started = time.perf_counter()
        reason = await anyio.to_thread.run_sync(self._load, limiter=self._embed_thread)
        if reason:
            self.state, self.reason = "unavailable", reason
            log.error("embedding_unavailable", reason=reason)
            return False
        from .vectors import VectorIndex, index_path  # after fastembed: see memd/vectors.py

        log.info("model_loaded", model=self.embedder.version, ms=round((time.perf_counter() - started) * 1000))
        if await self.writer.call(outbox.set_version, self.embedder.version):
            log.info("embedding_version_set", version=self.embedder.version)
        self.state = "indexing"
        self.index = VectorIndex(index_path(self.index_dir, self.embedder.version), self.embedder.dim)
        outcome = await anyio.to_thread.run_sync(self._open_index, self.index)
        recovered = await self.writer.call(outbox.recover, math.inf)  # the lock says nobody else is working
        log.info("vector_index_open", outcome=outcome, vectors=len(self.index), recovered=recovered)
        self.state = "ready"
        return True

    def _open_index(self, index: VectorIndex) -> str:
        """Load the saved index and make it match the stored vectors (a worker thread)."""
        conn = sqlite3.connect(self.database)
        try:
            count, top = outbox.extent(conn)
            loaded = index.load()
            if loaded and index.matches(count, top):
                return "current"
            if loaded and len(index) and index.max_key() < top:
                (older,) = conn.execute("SELECT count(*) FROM vectors WHERE id <= ?", (index.max_key(),)).fetchone()
                if older == len(index):
                    for keys, vectors in outbox.stored_vectors(conn, after=index.max_key()):
                        index.add(keys, vectors, threads=0)
                    index.save()
                    return "caught_up"
            if not loaded and count == 0:
                return "new"
            reason = "stale" if loaded else "unreadable" if os.path.exists(index.path) else "missing"
            started = time.perf_counter()
            index.clear()
            for keys, vectors in outbox.stored_vectors(conn):
                index.add(keys, vectors, threads=0)
            index.save()
            index.discard_others()
            log.warning(
                "vector_index_rebuilt",
                reason=reason,
                vectors=len(index),
                ms=round((time.perf_counter() - started) * 1000),
            )
            return "rebuilt"
        finally:
            conn.close()

    async def _embed_loop(self) -> None:
        while True:
            while (quiet := self._quiet_until - time.monotonic()) > 0:
                await anyio.sleep(quiet)
            self._wake = anyio.Event()
            try:
                claimed = await self.writer.call(outbox.claim, self.config.batch_size, time.time())
                if claimed:
                    await self._embed(claimed)
                    continue
            except (sqlite3.Error, OSError) as exc:  # a full disk, a lock held too long: try again later
                log.warning("embedding_paused", error=str(exc), seconds=STORE_RETRY)
                await anyio.sleep(STORE_RETRY)
                continue
            with anyio.move_on_after(IDLE_POLL):
                await self._wake.wait()
            if self._wake.is_set():
                await anyio.sleep(SETTLE)

    async def _embed(self, claimed: list[outbox.Claimed]) -> None:
        assert self.embedder is not None and self.index is not None
        started = time.perf_counter()
        try:
            results = await self._vectors(claimed)
            failures: list[tuple[outbox.Claimed, str]] = []
        except Exception:
            # Find the culprits one by one, so that one bad text does not fail its batch.
            results, failures = [], []
            for row in claimed:
                try:
                    results += await self._vectors([row])
                except Exception as exc:
                    failures.append((row, f"{type(exc).__name__}: {exc}"))
        async with self._index_lock:  # one lock over both: a forget cannot fall in between (``delete``)
            added, removed = await self.writer.call(outbox.complete, self.embedder.version, results)
            await anyio.to_thread.run_sync(self._apply, added, removed)
        for row, error in failures:
            failed = await self.writer.call(outbox.fail, [row], error, time.time())
            self.failed += failed
            log.warning("embedding_failed", event_id=row.event_id, error=error[:200], final=bool(failed))
        self.embedded += len(results)
        log.debug("embedded", events=len(results), vectors=len(added), ms=round((time.perf_counter() - started) * 1000))

    async def _vectors(self, claimed: Sequence[outbox.Claimed]) -> list[tuple[outbox.Claimed, np.ndarray, bool]]:
        """Each claim's vectors for its stage, and whether a stage 1 follows."""
        from .embed import event_windows

        assert self.embedder is not None
        texts = []
        for row in claimed:
            windows = event_windows(row.title, row.text, row.kind)
            texts.append((windows[:1], len(windows) > 1) if row.stage == 0 else (windows[1:], False))
        flat = [window for parts, _ in texts for window in parts]
        vectors = await self._background.embed(self.embedder, flat)
        results, at = [], 0
        for row, (parts, more) in zip(claimed, texts, strict=True):
            results.append((row, vectors[at : at + len(parts)], more))
            at += len(parts)
        return results

    def _apply(self, added: list[tuple[int, np.ndarray]], removed: list[int]) -> None:
        assert self.index is not None
        self.index.remove(removed)
        if added:
            self.index.add([key for key, _ in added], np.stack([vector for _, vector in added]))

    async def _save_loop(self) -> None:
        saved_at = time.monotonic()
        while True:
            await anyio.sleep(SAVE_CHECK)
            now = time.monotonic()
            idle = now - self._active_at >= SAVE_IDLE and now - saved_at >= SAVE_INTERVAL
            if idle or now - saved_at >= SAVE_AT_MOST:
                await self.save()
                saved_at = now

    async def _sweep_loop(self) -> None:
        while True:
            await anyio.sleep(SWEEP_INTERVAL)
            recovered = await self.writer.call(outbox.recover, time.time() - outbox.STUCK_AFTER)
            if recovered:
                log.warning("outbox_recovered", rows=recovered)

    async def delete(self, write: Callable[[], Awaitable[list[int]]]) -> int:
        """Run ``write``, a store change that deletes vectors and returns their keys, with no
        embedding batch in between; take the keys out of the index, scrub its free slots and
        save it, so the vectors leave memory and the index file too.  How many keys went."""
        async with self._index_lock:
            keys = await write()
            if self.index is not None and keys:
                index = self.index

                def remove() -> None:
                    index.remove(keys)
                    index.scrub()

                await anyio.to_thread.run_sync(remove)
        if keys:
            await self.save()
        return len(keys)

    async def save(self) -> None:
        """Write the index file if it changed since the last save."""
        if self.index is None or not self.index.dirty:
            return
        async with self._index_lock:
            started = time.perf_counter()
            try:
                await anyio.to_thread.run_sync(self.index.save)
            except OSError as exc:
                log.error("vector_index_save_failed", error=str(exc))
                return
        log.debug("vector_index_saved", vectors=len(self.index), ms=round((time.perf_counter() - started) * 1000))

    # --- queries --------------------------------------------------------------------

    async def neighbors(self, query: str, count: int) -> list[tuple[int, float]] | None:
        """(key, cosine similarity) of the stored vectors nearest ``query``; None while not ready."""
        if not self.ready or self.embedder is None or self.index is None:
            return None
        self._active_at = time.monotonic()
        embedder, index = self.embedder, self.index

        def search() -> list[tuple[int, float]]:
            return [(n.key, n.similarity) for n in index.search(embedder.embed_query(query), count)]

        return await anyio.to_thread.run_sync(search, limiter=self._query_thread)

    async def reset(self) -> int:
        """Forget every vector and embed every event again; return how many are queued."""
        async with self._index_lock:
            queued = await self.writer.call(outbox.requeue_all)
            if self.index is not None:
                self.index.clear()
                await anyio.to_thread.run_sync(self.index.save)
        self.notify()
        return queued
