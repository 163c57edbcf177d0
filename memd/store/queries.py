"""Read-only queries over the event log, each a function of a read connection."""

from __future__ import annotations

import os

import aiosqlite

from ..capture.events import LOGGED
from ..protocol import EventRow

__all__ = ["counts", "db_bytes", "history", "redaction_totals"]


async def counts(conn: aiosqlite.Connection) -> dict[str, int]:
    row = await (
        await conn.execute(
            f"SELECT (SELECT count(*) FROM events WHERE {LOGGED}), (SELECT count(*) FROM sessions),"
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
        " e.event, e.client_ts, c.cite"
        " FROM events e LEFT JOIN projects p ON p.id = e.project_id LEFT JOIN citations c ON c.event_id = e.id"
        f" {'WHERE ' + ' AND '.join(where) if where else ''}"
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
            cite=r[11] or "",
        )
        for r in reversed(rows)
    ]


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
