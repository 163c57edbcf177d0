"""Documents are embedded on background threads, at the lowest CPU priority.

The model computes on its caller's thread (``memd.services.embed``), so the priority of
the thread is the priority of the work: on an idle machine these threads use every core;
when hooks, ingest and searches want the CPU, the kernel runs those first and embedding
waits.  Queries are embedded on ordinary threads, so a search does not queue behind it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import anyio
import numpy as np

__all__ = ["Background", "EmbedderLike", "lowest_priority"]


class EmbedderLike(Protocol):
    """What the indexer needs of an embedder (``memd.services.embed.Embedder``; tests give fakes)."""

    @property
    def version(self) -> str:
        """What the vectors depend on (model, dimensions, weights): a change re-embeds everything."""

    @property
    def same_as(self) -> tuple[str, ...]:
        """Versions an earlier memd stored that name this very embedding (no re-embedding)."""

    dim: int

    def load(self) -> None: ...
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, text: str) -> np.ndarray: ...


def lowest_priority() -> None:
    """Run the calling thread at the lowest CPU priority (nice 19): when the cores are busy,
    the kernel runs ingest, search and the hooks first.  Linux sets it per thread; where the
    call means the whole process, or is refused, the thread keeps its priority."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class Background:
    """Worker threads at the lowest CPU priority that embed documents, each its own part of
    a batch."""

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
