"""Deleting for good: what a forget, a scan's redaction or retention removes, removed from
the tables, the vector index and the files.

``erase`` deletes the events a plan names (``memd.store.forget``) in batches on the writer
(hooks are served between them), with the vector index held still, so that no embedding
batch can put a forgotten vector back; the index loses the keys and is saved; one audit
row records it.  ``purge`` then makes the text leave the files, not only the tables: both
keyword indexes merged, free pages given back, the WAL truncated.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import NamedTuple

import structlog

from ..store import Store
from ..store.forget import Plan, batches, forget, record
from ..store.reclaim import KEYWORD_INDEXES, MAX_MERGE_STEPS, checkpoint_truncate, merge_step, vacuum_step
from ..store.writer import Writer
from .indexer import Indexer

__all__ = ["Erased", "erase", "purge", "without_new_vectors"]

log = structlog.get_logger("memd.lifecycle")

MAX_VACUUM_STEPS = 100_000


class Erased(NamedTuple):
    events: int
    derived: int
    sessions: int
    vectors: int


async def without_new_vectors(indexer: Indexer | None, write: Callable[[], Awaitable[list[int]]]) -> int:
    """Run ``write`` (a store change that deletes vectors and returns their keys) with no
    embedding batch in between, and take the keys out of the index; how many went."""
    return await indexer.delete(write) if indexer is not None else len(await write())


async def erase(store: Store, indexer: Indexer | None, planned: Plan, selector: str) -> Erased:
    """Delete what ``planned`` names (``memd.store.forget``), record it, and purge the files."""
    started = time.perf_counter()
    now = time.time()
    done = {"events": 0, "derived": 0, "sessions": 0}
    longest = 0.0  # the longest transaction: what a hook may have waited behind

    async def write() -> list[int]:
        nonlocal longest
        keys: list[int] = []
        for batch in batches(planned):
            batch_started = time.perf_counter()
            deleted = await store.writer.call(forget, batch, now)
            longest = max(longest, time.perf_counter() - batch_started)
            keys += deleted.keys
            done["events"] += deleted.events
            done["derived"] += deleted.derived
            done["sessions"] += deleted.sessions
        return keys

    vectors = await without_new_vectors(indexer, write)
    await store.writer.call(record, selector, done["events"], done["derived"], now)
    deleted_ms = round((time.perf_counter() - started) * 1000)
    await purge(store.writer)
    log.info(
        "forgotten", selector=selector, **done, vectors=vectors, delete_ms=deleted_ms,
        longest_batch_ms=round(longest * 1000), ms=round((time.perf_counter() - started) * 1000),
    )  # fmt: skip
    return Erased(done["events"], done["derived"], done["sessions"], vectors)


async def purge(writer: Writer) -> None:
    """Make deleted text leave the files: merge both keyword indexes into one segment each,
    give free pages back (incremental auto-vacuum), truncate the WAL.  Every step is its
    own short transaction on the writer, so hooks are served in between."""
    for table in KEYWORD_INDEXES:
        for step in range(MAX_MERGE_STEPS):
            if await writer.call(merge_step, table, step == 0):
                break
    for _ in range(MAX_VACUUM_STEPS):
        if await writer.call(vacuum_step):
            break
    if not await writer.call(checkpoint_truncate):
        log.warning("wal_not_truncated", reason="a reader held it; the next checkpoint catches up")
