"""The store: SQLite as the product.  One writer task, separate read connections (WAL)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite

from .events import Committed
from .readers import Readers
from .schema import migrate
from .trouble import EventError, StoreError
from .working_set import DEFAULT, Limits
from .writer import Writer

__all__ = ["Committed", "EventError", "Readers", "Store", "StoreError", "Writer", "open_store"]


WAL_SIZE_LIMIT = 32 * 1024 * 1024
"""Bytes the WAL file is trimmed to when it restarts."""


def _pragmas(busy_timeout_ms: int) -> list[str]:
    """Per-connection settings (journal_mode=WAL is stored in the file, set once)."""
    return [f"PRAGMA busy_timeout = {int(busy_timeout_ms)}", "PRAGMA synchronous = NORMAL"]


class Store:
    """An open database: ``writer`` for every write, ``reader`` and ``readers`` for queries."""

    def __init__(self, path: str, writer: Writer, reader: aiosqlite.Connection, readers: Readers) -> None:
        self.path = path
        self.writer = writer
        self.reader = reader
        self.readers = readers


def _connect_writer(path: str, busy_timeout_ms: int) -> sqlite3.Connection:
    # Used from one worker thread at a time (the Writer's limiter), hence check_same_thread.
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    for pragma in _pragmas(busy_timeout_ms):
        conn.execute(pragma)
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # the Writer checkpoints when idle
    conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    # Freed pages are zeroed: text replaced in place (a summary) or forgotten leaves no copy in the
    # file.  Debian's SQLite has it on by default, others do not.
    conn.execute("PRAGMA secure_delete = ON")
    return conn


@asynccontextmanager
async def open_store(
    path: str, *, busy_timeout_ms: int = 5000, batch_max: int = 256, working: Limits = DEFAULT
) -> AsyncIterator[Store]:
    """Open (creating and migrating if needed) the database at ``path``.

    The caller runs ``store.writer.run()`` as a task and calls ``store.writer.close()``
    when done; the connections close when the context exits.
    """
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    write_conn = _connect_writer(path, busy_timeout_ms)
    try:
        migrate(write_conn)
        os.chmod(path, 0o600)
        read_conn = await aiosqlite.connect(path, isolation_level=None)
        writer = Writer(write_conn, batch_max, working)
        readers = Readers(path, busy_timeout_ms=busy_timeout_ms)
        try:
            for pragma in _pragmas(busy_timeout_ms):
                await read_conn.execute(pragma)
            yield Store(path, writer, read_conn, readers)
        finally:
            writer.release()
            readers.close()
            await read_conn.close()
    finally:
        write_conn.close()
