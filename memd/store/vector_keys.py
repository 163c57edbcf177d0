"""The stored vectors' keys, as the vector index is checked against them at start
(``memd.services.index_check``)."""

from __future__ import annotations

import sqlite3

__all__ = ["vectors_up_to"]


def vectors_up_to(conn: sqlite3.Connection, key: int) -> int:
    """How many stored vectors have a key of ``key`` or below."""
    (count,) = conn.execute("SELECT count(*) FROM vectors WHERE id <= ?", (key,)).fetchone()
    return int(count)
