"""Read-only queries over the event log, each a function of a read connection."""

from __future__ import annotations

import os
import re

import aiosqlite

from ..protocol import EventRow, Hit

__all__ = ["counts", "fts_query", "history", "search"]

_TOKEN = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str, operator: str = "AND") -> str:
    """An FTS5 MATCH expression for free text: its words joined by ``operator``, each quoted.

    Quoting makes FTS5 operators in user text (``AND``, ``-``, ``"``, ``*``) plain words.
    """
    return f" {operator} ".join(f'"{token}"' for token in _TOKEN.findall(text))


async def counts(conn: aiosqlite.Connection) -> dict[str, int]:
    row = await (
        await conn.execute(
            "SELECT (SELECT count(*) FROM events WHERE kind != 'session_summary'), (SELECT count(*) FROM sessions),"
            " (SELECT count(*) FROM projects), (SELECT count(*) FROM rejections)"
        )
    ).fetchone()
    assert row is not None
    return dict(zip(("events", "sessions", "projects", "rejected"), row, strict=True))


async def redaction_totals(conn: aiosqlite.Connection) -> dict[str, int]:
    return dict(await conn.execute_fetchall("SELECT name, total FROM redaction_totals ORDER BY name"))


def db_bytes(path: str) -> int:
    """Size on disk of the database with its WAL."""
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


async def history(
    conn: aiosqlite.Connection,
    limit: int,
    *,
    session: str | None = None,
    kind: str | None = None,
    tool: str | None = None,
    project: str | None = None,
) -> list[EventRow]:
    """The latest ``limit`` events matching every filter given, oldest first."""
    where, args = [], []
    for clause, value in (
        ("e.session_id = ?", session),
        ("e.kind = ?", kind),
        ("e.tool = ?", tool),
        ("p.root LIKE ? ESCAPE '\\'", f"%{_like(project)}%" if project else None),
    ):
        if value is not None:
            where.append(clause)
            args.append(value)
    rows = await conn.execute_fetchall(
        "SELECT e.id, e.session_id, p.root, e.kind, e.tool, e.title, e.importance, e.received_at, e.size,"
        " e.event, e.client_ts"
        f" FROM events e LEFT JOIN projects p ON p.id = e.project_id {'WHERE ' + ' AND '.join(where) if where else ''}"
        " ORDER BY e.id DESC LIMIT ?",
        [*args, max(0, limit)],
    )
    return [
        EventRow(
            id=r[0],
            session_id=r[1],
            project=r[2],
            kind=r[3],
            tool=r[4],
            title=r[5],
            importance=r[6],
            received_at=r[7],
            size=r[8],
            event=r[9],
            client_ts=r[10],
        )
        for r in reversed(rows)
    ]


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def search(conn: aiosqlite.Connection, query: str, limit: int) -> list[Hit]:
    """Keyword search, best match first; ``score`` is the negated BM25 (higher is better).

    Events with every word come first; only when none has them all does any word do.
    """
    hits = await _match(conn, fts_query(query, "AND"), limit)
    if not hits and len(_TOKEN.findall(query)) > 1:
        hits = await _match(conn, fts_query(query, "OR"), limit)
    return hits


async def _match(conn: aiosqlite.Connection, match: str, limit: int) -> list[Hit]:
    if not match:
        return []
    rows = await conn.execute_fetchall(
        "SELECT e.id, e.kind, e.tool, e.title,"
        " snippet(events_fts, 1, '[', ']', '…', 16), bm25(events_fts, 2.0, 1.0) AS rank,"
        " e.session_id, e.received_at"
        " FROM events_fts JOIN events e ON e.id = events_fts.rowid"
        " WHERE events_fts MATCH ? ORDER BY rank LIMIT ?",
        [match, max(0, limit)],
    )
    return [
        Hit(
            id=r[0],
            kind=r[1],
            tool=r[2],
            title=r[3],
            snippet=r[4],
            score=round(-r[5], 4),
            session_id=r[6],
            received_at=r[7],
        )
        for r in rows
    ]
