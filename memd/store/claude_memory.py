"""Claude Code's memory files as memd mirrors them (migration 13), and what leaving them out saved.

``claude_memory_files`` maps each file to the ``claude-memory`` event of the version read
last (``memd.services.native_memory`` decides when a file changed: mtime, size, digest).
An event forgotten by hand keeps its row with no event, so that the same version is not
read back in; a new version is.  ``claude_memory_savings`` counts the context memd left
out because Claude Code had put the same facts in already (``memctl stats``).

Writes run on the writer's connection, each in its own transaction (``atomically``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

__all__ = [
    "MirroredFile",
    "Savings",
    "drop_file",
    "events_of_paths",
    "files",
    "paths_of_events",
    "put_file",
    "save",
    "saved_per_day",
    "savings",
    "texts_of",
]


class MirroredFile(NamedTuple):
    path: str
    mtime_ns: int
    size: int
    digest: str
    event_id: int | None


def files(conn: sqlite3.Connection, folder: str) -> dict[str, MirroredFile]:
    """Every file of ``folder`` memd mirrors, by path."""
    rows = conn.execute(
        "SELECT path, mtime_ns, size, digest, event_id FROM claude_memory_files WHERE folder = ?", (folder,)
    )
    return {row[0]: MirroredFile(*row) for row in rows}


def put_file(
    conn: sqlite3.Connection, path: str, folder: str, mtime_ns: int, size: int, digest: str, event_id: int | None
) -> None:
    conn.execute(
        "INSERT INTO claude_memory_files (path, folder, mtime_ns, size, digest, event_id) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (path) DO UPDATE SET folder = excluded.folder, mtime_ns = excluded.mtime_ns,"
        " size = excluded.size, digest = excluded.digest, event_id = excluded.event_id",
        (path, folder, mtime_ns, size, digest, event_id),
    )


def drop_file(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("DELETE FROM claude_memory_files WHERE path = ?", (path,))


def events_of_paths(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, int]:
    """The event each of ``paths`` is mirrored as (paths memd does not mirror are left out)."""
    rows = conn.execute(
        "SELECT path, event_id FROM claude_memory_files"
        " WHERE event_id IS NOT NULL AND path IN (SELECT value FROM json_each(?))",
        (json.dumps(list(paths)),),
    )
    return {path: event_id for path, event_id in rows}


def paths_of_events(conn: sqlite3.Connection, event_ids: Iterable[int]) -> dict[int, str]:
    rows = conn.execute(
        "SELECT event_id, path FROM claude_memory_files WHERE event_id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(event_ids)),),
    )
    return {event_id: path for event_id, path in rows}


def save(conn: sqlite3.Connection, now: float, session: str | None, hook: str, lines: int, tokens: int) -> None:
    """Count context left out (one row per hook answer that left something out)."""
    conn.execute(
        "INSERT INTO claude_memory_savings (at, session_id, hook, lines, tokens) VALUES (?, ?, ?, ?, ?)",
        (now, session, hook, lines, tokens),
    )


class Savings(NamedTuple):
    answers: int
    """Hook answers that left something out."""
    lines: int
    tokens: int
    files: int
    """Memory files mirrored now (with an event)."""


def savings(conn: sqlite3.Connection) -> Savings:
    answers, lines, tokens = conn.execute(
        "SELECT count(*), coalesce(sum(lines), 0), coalesce(sum(tokens), 0) FROM claude_memory_savings"
    ).fetchone()
    (mirrored,) = conn.execute("SELECT count(*) FROM claude_memory_files WHERE event_id IS NOT NULL").fetchone()
    return Savings(answers=int(answers), lines=int(lines), tokens=int(tokens), files=int(mirrored))


def saved_per_day(conn: sqlite3.Connection, since: float) -> dict[str, int]:
    """Tokens left out per local day (``YYYY-MM-DD``) from ``since`` on."""
    return dict(
        conn.execute(
            "SELECT date(at, 'unixepoch', 'localtime') AS day, sum(tokens) FROM claude_memory_savings"
            " WHERE at >= ? GROUP BY day",
            (since,),
        ).fetchall()
    )


def texts_of(conn: sqlite3.Connection, event_ids: Iterable[int]) -> dict[int, str]:
    """What each event says, to compare with what the agent has: its text (its title when it has
    none; a title is made from the text, with a prefix of memd's such as "Remember:")."""
    rows = conn.execute(
        "SELECT id, CASE WHEN text != '' THEN text ELSE title END FROM events"
        " WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(event_ids)),),
    )
    return {event_id: text for event_id, text in rows}
