"""Consolidation over the database: the working set's new events in, consolidated memories
out (events of kind ``consolidated``, searchable and citable), in one transaction."""

from __future__ import annotations

import sqlite3

from ..capture.text import parse_meta, strings
from ..continuity.consolidate import Source, consolidate, groups, set_key
from .writer import insert_derived

__all__ = ["run"]


def _candidates(conn: sqlite3.Connection, project_id: int) -> list[Source]:
    """The project's working-set events that no consolidation has taken yet."""
    return [
        Source(r[0], r[1], r[2], r[3], r[4], tuple(strings(parse_meta(r[5]).get("files"))), r[6])
        for r in conn.execute(
            "SELECT e.id, coalesce(c.cite, ''), e.kind, e.title, substr(e.text, 1, 2000), e.meta, e.client_ts"
            " FROM working_set w JOIN events e ON e.id = w.event_id LEFT JOIN citations c ON c.event_id = e.id"
            " WHERE w.project_id = ? AND NOT EXISTS"
            " (SELECT 1 FROM consolidation_sources s WHERE s.source_id = w.event_id) ORDER BY e.id",
            (project_id,),
        )
    ]


def run(conn: sqlite3.Connection, now: float) -> int:
    """Consolidate every project's working set (one transaction); return the memories made."""
    conn.execute("BEGIN IMMEDIATE")
    made = 0
    try:
        projects = [row[0] for row in conn.execute("SELECT DISTINCT project_id FROM working_set") if row[0]]
        for project_id in projects:
            sources = {source.id: source for source in _candidates(conn, project_id)}
            taken: set[int] = set()
            for ids, topics in groups(list(sources.values())):
                members = [sources[i] for i in sorted(ids - taken)]
                key = set_key([m.id for m in members])
                if (
                    len(members) < 3
                    or conn.execute("SELECT 1 FROM consolidations WHERE set_key = ?", (key,)).fetchone()
                ):
                    continue
                memory = consolidate(members, topics)
                meta = {"sources": list(memory.sources), "topics": list(memory.topics), "files": list(memory.files),
                        "confidence": memory.confidence}  # fmt: skip
                event_id = insert_derived(
                    conn, f"consolidated:{key}", None, project_id, "consolidated", memory.title, memory.text, meta, 2,
                    max(m.ts for m in members), now,
                )  # fmt: skip
                conn.execute(
                    "INSERT INTO consolidations (event_id, set_key, confidence, created_at) VALUES (?, ?, ?, ?)",
                    (event_id, key, memory.confidence, now),
                )
                conn.executemany(
                    "INSERT INTO consolidation_sources (source_id, consolidation_id) VALUES (?, ?)",
                    [(source, event_id) for source in memory.sources],
                )
                taken.update(memory.sources)
                made += 1
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return made
