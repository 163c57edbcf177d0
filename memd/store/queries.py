"""Read-only queries over the event log, each a function of a read connection: an
aiosqlite one (``Store.reader``) for the async ones, a plain one (``Readers.run``) for
the rest.

The inventory ``memctl stats`` shows stays cheap however big the log grows: counts are
one ``GROUP BY`` over an index that covers it (~7 ms per 100k events here), and the
keyword indexes are sized from their own pages only (``dbstat`` constrained by name
reads nothing else: ~15 ms for the 43 MB of both indexes at 100k events).
"""

from __future__ import annotations

import glob
import os
import sqlite3
from typing import Final

import aiosqlite

from ..capture.events import DERIVED_KINDS, LOGGED
from ..capture.prepare import REPAIR_COUNTER
from ..protocol import DayCount, EventRow, ProjectCount, StorageSizes
from .listings import EVENT_COLUMNS, event_row, where_given
from .projects import MATCHING, like

__all__ = [
    "KEYWORD_INDEXES",
    "counts",
    "db_bytes",
    "history",
    "index_bytes",
    "kinds",
    "lone_surrogate_events",
    "per_day",
    "redaction_totals",
    "storage",
    "top_projects",
]

KEYWORD_INDEXES: Final = {"keyword_index": "events_fts", "trigram_index": "events_cjk", "context_index": "events_ctx"}
"""The FTS5 tables ``memctl stats`` sizes, by the name it reports them under."""


async def counts(conn: aiosqlite.Connection) -> dict[str, int]:
    row = await (
        await conn.execute(
            f"SELECT (SELECT count(*) FROM events WHERE {LOGGED}), (SELECT count(*) FROM sessions),"
            " (SELECT count(*) FROM projects), (SELECT count(*) FROM rejections), (SELECT count(*) FROM quarantine)"
        )
    ).fetchone()
    assert row is not None
    return dict(zip(("events", "sessions", "projects", "rejected", "quarantined"), row, strict=True))


async def redaction_totals(conn: aiosqlite.Connection) -> dict[str, int]:
    """What privacy filtering removed, summed over all events (not the repair counter the
    same table holds)."""
    rows = await conn.execute_fetchall(
        "SELECT name, total FROM redaction_totals WHERE name != ? ORDER BY name", (REPAIR_COUNTER,)
    )
    return {str(name): int(total) for name, total in rows}


async def lone_surrogate_events(conn: aiosqlite.Connection) -> int:
    """Events stored with lone UTF-16 surrogates replaced by U+FFFD (``memd.surrogates``)."""
    rows = list(await conn.execute_fetchall("SELECT total FROM redaction_totals WHERE name = ?", (REPAIR_COUNTER,)))
    return rows[0][0] if rows else 0


def db_bytes(path: str) -> int:
    """Size on disk of the database with its WAL."""
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def kinds(conn: sqlite3.Connection) -> dict[str, int]:
    """Events per kind, derived ones included, most first (read off ``events_by_kind``)."""
    return dict(conn.execute("SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC, kind"))


def agents(conn: sqlite3.Connection) -> dict[str, int]:
    """Events per agent, most first (read off ``events_by_agent``)."""
    return dict(conn.execute("SELECT agent, count(*) AS n FROM events GROUP BY agent ORDER BY n DESC, agent"))


def top_projects(conn: sqlite3.Connection, limit: int) -> tuple[list[ProjectCount], int]:
    """The ``limit`` projects with the most events (read off ``events_by_project``), and how
    many projects there are."""
    rows = conn.execute(
        "SELECT p.root, c.n FROM (SELECT project_id, count(*) AS n FROM events GROUP BY project_id) c"
        " LEFT JOIN projects p ON p.id = c.project_id ORDER BY c.n DESC, p.root IS NULL, p.root LIMIT ?",
        (limit,),
    ).fetchall()
    (total,) = conn.execute("SELECT count(*) FROM projects").fetchone()
    return [ProjectCount(root=root, events=n) for root, n in rows], total


def per_day(conn: sqlite3.Connection, since: float) -> list[DayCount]:
    """Events per local day and project from ``since`` on, oldest day first (derived kinds left
    out: they count what memd made, not what happened)."""
    rows = conn.execute(
        "SELECT date(e.client_ts, 'unixepoch', 'localtime') AS day, p.root, count(*) FROM events e"
        f" LEFT JOIN projects p ON p.id = e.project_id WHERE e.client_ts >= ? AND e.kind NOT IN {DERIVED_KINDS!r}"
        " GROUP BY day, p.root ORDER BY day, p.root",
        (since,),
    ).fetchall()
    return [DayCount(day=day, project=root, events=n) for day, root, n in rows]


def index_bytes(conn: sqlite3.Connection, table: str, *, dbstat: bool = True) -> int:
    """Bytes the FTS5 table ``table`` takes in the database: the pages of its shadow
    tables by ``dbstat``, or with ``dbstat=False`` the length of its data blocks (the
    inverted index itself: most of it, not all).  Raises ``sqlite3.OperationalError``
    when ``dbstat`` is asked for and this SQLite was built without it."""
    shadows = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND rootpage > 0 AND name GLOB ?",
            (f"{table}_*",),
        )
    ]
    if not shadows:
        return 0
    if dbstat:
        # Constrained by name, dbstat walks those b-trees only, not the whole file.
        marks = ", ".join("?" * len(shadows))
        sql = f"SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE aggregate = 1 AND name IN ({marks})"
        return int(conn.execute(sql, shadows).fetchone()[0])
    if f"{table}_data" not in shadows:
        return 0
    return int(conn.execute(f'SELECT coalesce(sum(length(block)), 0) FROM "{table}_data"').fetchone()[0])


def storage(conn: sqlite3.Connection, database: str, index_dir: str | None) -> StorageSizes:
    """Bytes on disk: the database and its WAL, the keyword indexes, the vector index files
    in ``index_dir``."""
    try:
        indexes = {name: index_bytes(conn, table) for name, table in KEYWORD_INDEXES.items()}
        measured = "dbstat"
    except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
        indexes = {name: index_bytes(conn, table, dbstat=False) for name, table in KEYWORD_INDEXES.items()}
        measured = "estimate"
    vector_files = glob.glob(os.path.join(glob.escape(index_dir), "vectors-*.usearch")) if index_dir else []
    return StorageSizes(
        database=_size(database),
        wal=_size(database + "-wal"),
        keyword_index=indexes["keyword_index"],
        trigram_index=indexes["trigram_index"],
        context_index=indexes["context_index"],
        vector_index=sum(_size(path) for path in vector_files),
        measured=measured,
    )


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


async def history(
    conn: aiosqlite.Connection,
    limit: int,
    *,
    session: str | None = None,
    kind: str | None = None,
    tool: str | None = None,
    project: str | None = None,
    agent: str | None = None,
    before: int | None = None,
    after: int | None = None,
    since: float | None = None,
    until: float | None = None,
    derived: bool = True,
) -> list[EventRow]:
    """The latest ``limit`` events matching every filter given (older than event ``before``,
    dated in [``since``, ``until``), what memd made left out unless ``derived``), oldest first;
    with ``after``, the first ``limit`` newer than that event."""
    where, args = where_given((
        ("e.session_id = ?", session),
        ("e.kind = ?", kind),
        ("e.tool = ?", tool),
        ("e.agent = ?", agent),
        ("e.id < ?", before),
        ("e.id > ?", after),
        ("e.client_ts >= ?", since),
        ("e.client_ts < ?", until),
    ))  # fmt: skip
    if not derived:
        where.append(f"e.kind NOT IN {DERIVED_KINDS!r}")
    if project:  # a root, a key or a checkout's path, or part of one
        where.append(f"e.project_id IN ({MATCHING})")
        args += [like(project)] * 3
    rows = await conn.execute_fetchall(
        f"SELECT {EVENT_COLUMNS}"
        " FROM events e LEFT JOIN projects p ON p.id = e.project_id LEFT JOIN citations c ON c.event_id = e.id"
        f" {'WHERE ' + ' AND '.join(where) if where else ''}"
        f" ORDER BY e.id {'DESC' if after is None else 'ASC'} LIMIT ?",
        [*args, max(0, limit)],
    )
    return [event_row(r) for r in (reversed(list(rows)) if after is None else rows)]
