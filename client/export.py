"""``memctl export``: a project's memories (or all of them) as JSON lines, read straight
from the database (the daemon may be down).

The first line is a header (``{"format": "memd-export/1", ...}``); each other line is one
stored event (``memd.protocol.ExportedEvent``): its citation id, idempotency key, kind,
session, project, title, text, metadata, importance and times, the hook payload as
stored, and what memd learned of it: its uses by id and its graduation level (which rank
it, and keep it from retention, on the machine it moves to too).  All of it is what memd
stored, so already filtered: private spans and secrets never reached the database.
``memctl import --from-export FILE`` reads it back.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import BinaryIO

import msgspec

from memd import __version__
from memd.protocol import ExportedEvent, ExportedLevel, ExportedUse

from .importer import EXPORT_FORMAT

__all__ = ["export"]

_ROWS = (
    "SELECT coalesce(c.cite, ''), e.idem_key, e.event, e.kind, e.session_id, p.root, e.tool, e.title, e.text,"
    " e.meta, e.importance, e.client_ts, e.received_at, e.payload, e.id,"
    " l.level, l.accesses, l.best_confidence, l.sessions, l.last_access"
    " FROM events e LEFT JOIN citations c ON c.event_id = e.id LEFT JOIN projects p ON p.id = e.project_id"
    " LEFT JOIN memory_levels l ON l.event_id = e.id"
)
_USES = "SELECT session_id, used_at, how FROM citation_usage WHERE event_id = ? ORDER BY id"


class NoSuchProject(ValueError):
    pass


def _project(conn: sqlite3.Connection, name: str) -> tuple[int, str]:
    row = conn.execute(
        "SELECT id, root FROM projects WHERE root = ? OR instr(root, ?) > 0 ORDER BY root = ? DESC, last_seen DESC",
        (name, name, name),
    ).fetchone()
    if row is None:
        raise NoSuchProject(f"no project matches {name!r} (memctl history lists them)")
    return row[0], row[1]


def export(database: str, out: BinaryIO, project: str | None = None, since: float | None = None) -> int:
    """Write the header and every event matching the filters to ``out``; how many events."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5.0, isolation_level=None)
    try:
        conn.execute("BEGIN")  # one snapshot for the whole file, whatever the daemon commits meanwhile
        where, args, root = [], [], None
        if project:
            project_id, root = _project(conn, project)
            where.append("e.project_id = ?")
            args.append(project_id)
        if since is not None:
            where.append("e.client_ts >= ?")
            args.append(since)
        header = {"format": EXPORT_FORMAT, "memd": __version__, "exported_at": time.time(), "project": root}
        out.write(json.dumps(header | {"since": since}).encode() + b"\n")
        encode = msgspec.json.Encoder().encode
        count = 0
        sql = _ROWS + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY e.id"
        for r in conn.execute(sql, args):
            event = ExportedEvent(
                cite=r[0], idem_key=r[1], event=r[2], kind=r[3], session_id=r[4], project=r[5], tool=r[6],
                title=r[7], text=r[8], meta=_json(r[9]), importance=r[10], client_ts=r[11], received_at=r[12],
                payload=r[13], uses=[ExportedUse(*use) for use in conn.execute(_USES, (r[14],))],
                level=None if r[15] is None else ExportedLevel(
                    level=r[15], accesses=r[16], best_confidence=r[17], sessions=r[18], last_access=r[19],
                ),
            )  # fmt: skip
            out.write(encode(event) + b"\n")
            count += 1
        return count
    finally:
        conn.close()


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text
