"""Settings changed at run time (``memctl endless on|off``), kept in the database so they
survive restarts; config.toml holds what a person edits by hand."""

from __future__ import annotations

import sqlite3

__all__ = ["get", "put"]


def get(conn: sqlite3.Connection, key: str, default: str) -> str:
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def put(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Set ``key`` (one transaction)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
