"""The indexer: one background task that keeps the vector index in step with the log.

    load the model (worker thread)          retrieval is keyword-only until ready
    record the embedding version            a new model or dimension re-embeds all
    open the index, check it against SQLite  current | caught up | rebuilt
    loop: claim a batch from the outbox → embed it (background threads) → store the
          vectors and mark the rows done (one transaction) → add them to the index
                                            ``memd.services.embedding``

**Capture before everything.**  Documents are embedded on ``Background`` threads at the
lowest CPU priority (nice 19; the model computes on its caller's thread, ``memd.services.background``),
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

**Saving the index** stalls the whole daemon: it is saved when that costs nobody
(``memd.services.index_saver``).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

import anyio
import structlog

from ..config import EmbeddingConfig
from ..store import outbox
from ..store.writer import Writer
from .background import EmbedderLike
from .embedding import Embedding
from .index_check import open_index
from .index_saver import Saver

if TYPE_CHECKING:
    import numpy as np

    from .vectors import VectorIndex

__all__ = ["Indexer", "State"]

log = structlog.get_logger("memd.indexer")

State = Literal["disabled", "loading", "indexing", "ready", "unavailable"]


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
        self._index_lock = anyio.Lock()
        self._embed_thread = anyio.CapacityLimiter(1)
        self._query_thread = anyio.CapacityLimiter(2)
        self.embedding = Embedding(writer, config, self._index_lock)
        self.saver = Saver(self._index_lock, lambda: self.index)

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @property
    def model(self) -> str:
        return self.embedder.version if self.embedder is not None else self.config.model

    @property
    def embedded(self) -> int:
        """Events embedded since start."""
        return self.embedding.embedded

    def notify(self) -> None:
        """New events are in the outbox: look now rather than at the next poll."""
        self.saver.touch()
        self.embedding.notify()

    def defer(self, seconds: float) -> None:
        """Embed nothing for ``seconds``: a bulk import is running, and on a small machine
        embedding its first batches would slow the import down tenfold (the import's
        batches come back to back; each one defers again, and the backlog follows after)."""
        self.embedding.defer(seconds)

    # --- the task -------------------------------------------------------------------

    async def run(self) -> None:
        """Load, open, then embed until cancelled.  Never raises: whatever goes wrong here
        leaves the daemon serving (keyword-only), with the reason in ``memctl status``."""
        if not self.config.enabled:
            return
        try:
            started = await self._start()
            if started is None:
                return
            embedder, index = started
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.saver.run)
                tg.start_soon(self.embedding.sweep)
                await self.embedding.run(embedder, index)
        except Exception as exc:
            log.exception("indexer_failed")
            self.state = "unavailable"
            self.reason = f"the indexer stopped ({type(exc).__name__}: {exc}); see the memd log, restart memd"
        finally:
            with anyio.CancelScope(shield=True):
                await self.saver.save()
            self.embedding.close()

    async def _start(self) -> tuple[EmbedderLike, VectorIndex] | None:
        """The loaded model and the open index; None (and why, in ``reason``) if the model cannot load."""
        started = time.perf_counter()
        self.embedder, reason = await anyio.to_thread.run_sync(
            _load_model, self.config, self.models_dir, self.embedder, limiter=self._embed_thread
        )
        embedder = self.embedder
        if reason or embedder is None:
            self.state, self.reason = "unavailable", reason
            log.error("embedding_unavailable", reason=reason)
            return None
        from .vectors import VectorIndex, index_path  # after fastembed: see memd/services/vectors.py

        log.info("model_loaded", model=embedder.version, ms=round((time.perf_counter() - started) * 1000))
        if await self.writer.call(outbox.set_version, embedder.version, embedder.same_as):
            log.info("embedding_version_set", version=embedder.version)
        self.state = "indexing"
        index = self.index = VectorIndex(index_path(self.index_dir, embedder.version), embedder.dim)
        outcome = await anyio.to_thread.run_sync(open_index, self.database, index)
        recovered = await self.writer.call(outbox.recover, math.inf)  # the lock says nobody else is working
        log.info("vector_index_open", outcome=outcome, vectors=len(index), recovered=recovered)
        self.state = "ready"
        return embedder, index

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
            await self.saver.save()
        return len(keys)

    # --- queries --------------------------------------------------------------------

    async def neighbors(self, query: str, count: int) -> tuple[list[tuple[int, float]], np.ndarray] | None:
        """(key, cosine similarity) of the stored vectors nearest ``query``, and the query's own
        unit vector (to measure other events against); None while not ready."""
        if not self.ready or self.embedder is None or self.index is None:
            return None
        self.saver.touch()
        embedder, index = self.embedder, self.index

        def search() -> tuple[list[tuple[int, float]], np.ndarray]:
            vector = embedder.embed_query(query)
            return [(n.key, n.similarity) for n in index.search(vector, count)], vector

        return await anyio.to_thread.run_sync(search, limiter=self._query_thread)

    async def anticipate(self, query: str) -> None:
        """Embed ``query`` for a search about to ask for it (``neighbors`` takes the vector from
        the embedder's cache, or waits for it); a failure is left for that search to report."""
        if self.ready and self.embedder is not None:
            with contextlib.suppress(Exception):
                await anyio.to_thread.run_sync(self.embedder.embed_query, query, limiter=self._query_thread)

    async def reset(self) -> int:
        """Forget every vector and embed every event again; return how many are queued."""
        async with self._index_lock:
            queued = await self.writer.call(outbox.requeue_all)
            if self.index is not None:
                self.index.clear()
                await anyio.to_thread.run_sync(self.index.save)
        self.notify()
        return queued


def _load_model(
    config: EmbeddingConfig, models_dir: str, embedder: EmbedderLike | None
) -> tuple[EmbedderLike | None, str]:
    """Import the engine and load the model (a worker thread): the embedder (None if none
    could be made) and why it cannot load ("" when it did)."""
    from .embed import Embedder, ModelUnavailable

    try:
        if embedder is None:
            embedder = Embedder(config, models_dir)
        embedder.load()
    except ModelUnavailable as exc:
        return embedder, str(exc)
    return embedder, ""
