"""The vector index at start: the saved file, checked against the vectors SQLite holds.

SQLite is the truth and the file a cache of it (``memd.services.vectors``).  The same
count and the same highest key mean the file is current; a file that only lacks the
newest rows (the daemon stopped before its last save) is caught up; anything else —
missing, unreadable, another model, keys that disagree — is rebuilt from the stored
vectors, without re-embedding.
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import TYPE_CHECKING, Literal

import structlog

from ..store import outbox

if TYPE_CHECKING:  # usearch loads with the model, not at daemon start (``memd.services.indexer``)
    from .vectors import VectorIndex

__all__ = ["Outcome", "open_index"]

log = structlog.get_logger("memd.indexer")

Outcome = Literal["current", "caught_up", "new", "rebuilt"]


def open_index(database: str, index: VectorIndex) -> Outcome:
    """Load the saved index and make it match the stored vectors (blocking: a worker thread)."""
    conn = sqlite3.connect(database)
    try:
        count, top = outbox.extent(conn)
        loaded = index.load()
        if loaded and index.matches(count, top):
            return "current"
        if (
            loaded
            and len(index)
            and index.max_key() < top
            and outbox.vectors_up_to(conn, index.max_key()) == len(index)
        ):
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
