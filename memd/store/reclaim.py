"""Giving a forget's bytes back: what still holds the text of deleted rows, and the steps that
clear it.

**Bytes gone from the file.**  ``PRAGMA secure_delete`` zeroes what a delete frees, but
three places still hold the text afterwards:

- the FTS5 indexes: a delete only appends a tombstone segment, and the terms stay in the
  old segments until those are merged.  ``merge_step`` merges each index into one segment
  in bounded steps (FTS5's ``merge`` command, ``MERGE_PAGES`` pages a step, each its own
  transaction, so hooks are served between steps).  That rewrites the whole index: about
  0.7-1.4 s for the keyword index at 100k events here, in steps of ~0.1 s; ``optimize``
  does the same work in one blocking statement (0.75 s);
- free pages: zeroed by ``secure_delete``; with ``auto_vacuum = INCREMENTAL``
  (``memd.store.retention``) ``vacuum_step`` gives them back to the file system;
- the WAL: it holds the old pages until a checkpoint, and its frames stay in the file
  after one, so ``checkpoint_truncate`` empties it.

These run on the writer's connection (``Writer.call``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

__all__ = [
    "KEYWORD_INDEXES",
    "MAX_MERGE_STEPS",
    "MERGE_PAGES",
    "VACUUM_PAGES",
    "checkpoint_truncate",
    "immediate",
    "merge_step",
    "vacuum_step",
    "zeroing",
]

MERGE_PAGES: Final = 1000
"""Pages one FTS5 merge step writes: ~0.1 s at 100k events here (2,000: 0.15 s, 0.47 s with a
cold cache), for the same total."""
VACUUM_PAGES: Final = 8192
"""Free pages one incremental-vacuum step gives back (32 MB; ~0.25 s here)."""
MAX_MERGE_STEPS: Final = 100_000
"""A merge step that never reports done (it always does) still ends."""
KEYWORD_INDEXES: Final = ("events_fts", "events_cjk", "events_ctx")


@contextmanager
def zeroing(conn: sqlite3.Connection) -> Iterator[None]:
    """``secure_delete`` on (what is freed is overwritten with zeros), then as it was: some
    SQLite builds (Debian's) have it on for every connection, and it must stay so there."""
    (previous,) = conn.execute("PRAGMA secure_delete").fetchone()
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(previous)}")


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction: committed, or rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def merge_step(conn: sqlite3.Connection, table: str, first: bool) -> bool:
    """One bounded step of merging ``table``'s FTS5 index into a single segment, so that the
    terms of deleted rows leave the file; True once there is nothing left to merge.

    The first step passes a negative page count (FTS5: put every segment on one level and
    merge them whatever their number), the next ones a positive one (carry on with that
    merge even if new segments arrive meanwhile), until a step changes nothing."""
    if table not in KEYWORD_INDEXES:
        raise ValueError(f"not a keyword index: {table!r}")
    pages = -MERGE_PAGES if first else MERGE_PAGES
    before = conn.total_changes
    with zeroing(conn), immediate(conn):  # the old segments' pages are zeroed as they are freed
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (pages,))
    return conn.total_changes - before < 2


def vacuum_step(conn: sqlite3.Connection, pages: int = VACUUM_PAGES) -> bool:
    """Give up to ``pages`` free pages back to the file system (``auto_vacuum = INCREMENTAL``
    only; otherwise the file keeps them, zeroed); True once none is left to give."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
        return True
    with zeroing(conn):  # executescript steps the pragma to its end; execute would free a single page
        conn.executescript(f"PRAGMA incremental_vacuum({int(pages)});")
    return int(conn.execute("PRAGMA freelist_count").fetchone()[0]) == 0


def checkpoint_truncate(conn: sqlite3.Connection) -> bool:
    """Copy the WAL into the database and truncate it to nothing: its frames hold the old
    pages, and a passive checkpoint leaves them in the file.  False if a reader kept it
    from completing (the next forget or the writer's own checkpoints catch up)."""
    busy, _log, _copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return int(busy) == 0
