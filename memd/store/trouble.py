"""Why a write failed, in words a user acts on, and which failures end a transaction.

``fatal`` tells an error about the database (a full disk, an I/O error, a lock: the batch
fails, its events are spooled) from an error about one event (it is quarantined, the batch
goes on); ``describe`` says why without event content; ``diagnose`` turns a failed commit
into what ``memctl status`` shows (``CommitHealth``).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import traceback
from typing import Final, NamedTuple

__all__ = [
    "FATAL",
    "CommitHealth",
    "CommitTrouble",
    "EventError",
    "StoreError",
    "describe",
    "diagnose",
    "fatal",
]

FATAL: Final = frozenset(
    {
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
        sqlite3.SQLITE_INTERRUPT,
        sqlite3.SQLITE_PERM,
    }
)
"""SQLite's primary result codes that are about the database, not about one event: the
transaction cannot go on (SQLite may have rolled it back already), so the batch fails."""


class StoreError(Exception):
    """The database could not commit; the message says why, without event content."""


class CommitTrouble(NamedTuple):
    """Why commits fail, in words a user acts on (``memctl status``)."""

    reason: str
    """``disk full``, ``read-only``, ``locked``, ``I/O error`` or ``error``."""
    fix: str


def diagnose(exc: BaseException, database: str) -> CommitTrouble:
    """What a failed commit means and what to do, from SQLite's error code (or the OS's)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    number = getattr(exc, "errno", None)
    folder = os.path.dirname(database) or "."
    later = "; events wait in the spool meanwhile and are stored once commits work again"
    if name.startswith("SQLITE_FULL") or number == errno.ENOSPC:
        try:
            stats = os.statvfs(folder)
            free = f" ({stats.f_bavail * stats.f_frsize // 1024} KB free)"
        except OSError:
            free = ""
        return CommitTrouble("disk full", f"free space on the filesystem of {folder}{free}{later}")
    if name.startswith("SQLITE_READONLY") or number in (errno.EROFS, errno.EACCES, errno.EPERM):
        return CommitTrouble("read-only", f"make {database} and {folder} writable by this user{later}")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return CommitTrouble(
            "locked", f"another program holds a lock on {database} (`fuser {database}` names it): close it{later}"
        )
    if name.startswith("SQLITE_IOERR") or number == errno.EIO:
        return CommitTrouble("I/O error", f"the disk under {folder} failed a write: check it (dmesg){later}")
    return CommitTrouble("error", f"see the daemon's log (commit_failed){later}")


class CommitHealth(NamedTuple):
    """Whether the last commits failed: since when, how many, and why."""

    failing_since: float | None = None
    failures: int = 0
    trouble: CommitTrouble | None = None
    detail: str = ""
    """SQLite's message (never content)."""


class EventError(StoreError):
    """This one event could not be stored, not even without its derived data (the rest of its
    batch was); retrying it fails the same way.  The message says why, without content."""


def fatal(conn: sqlite3.Connection, exc: BaseException) -> bool:
    """Whether ``exc`` ends the transaction (the batch fails) rather than one step of it."""
    if not isinstance(exc, Exception) or isinstance(exc, MemoryError) or not conn.in_transaction:
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF in FATAL


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def describe(exc: BaseException) -> str:
    """Why, without event content: SQLite's own message (it names tables, columns and
    constraints, never values); for any other exception, its type and where memd raised it
    (its message may quote the data)."""
    if isinstance(exc, sqlite3.Error):
        return str(exc)[:200]
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith(_PACKAGE + os.sep)]
    if not frames:
        return type(exc).__name__
    where = (ours or frames)[-1]
    path = os.path.relpath(where.filename, os.path.dirname(_PACKAGE)) if ours else os.path.basename(where.filename)
    return f"{type(exc).__name__} in {where.name} ({path}:{where.lineno})"
