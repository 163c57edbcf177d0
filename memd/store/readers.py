"""Read connections for queries that run as plain SQL in a worker thread.

A search runs several statements (lanes, documents); awaiting each through aiosqlite
costs a thread round trip apiece.  ``Readers.run(fn, ...)`` instead runs the whole
``fn(connection, ...)`` in one hop, on one of a few connections (WAL: readers never
wait for the writer, nor it for them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

import anyio

__all__ = ["Readers"]

T = TypeVar("T")


class Readers:
    """A small pool of read connections; ``run`` borrows one for one call."""

    def __init__(self, path: str, *, size: int = 2, busy_timeout_ms: int = 5000) -> None:
        self._free = [self._connect(path, busy_timeout_ms) for _ in range(size)]
        self._slots = anyio.Semaphore(size)

    @staticmethod
    def _connect(path: str, busy_timeout_ms: int) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.execute("PRAGMA query_only = 1")
        return conn

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        async with self._slots:
            conn = self._free.pop()
            try:
                return await anyio.to_thread.run_sync(fn, conn, *args)
            finally:
                self._free.append(conn)

    def close(self) -> None:
        for conn in self._free:
            conn.close()
        self._free.clear()
