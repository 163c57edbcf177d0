"""One consolidation pass over the database: the working sets' new events in, consolidated
memories out (events of kind ``consolidated``, searchable and citable), in one transaction.

Run on the writer's thread (``writer.call(consolidations.run, now)``); the grouping and the
memories are ``consolidate``'s, the reads and writes ``store/consolidations.py``'s.
"""

from __future__ import annotations

import sqlite3

from ..store import consolidations as table
from ..store.batch import atomically
from ..store.events import insert_derived
from .consolidate import MIN_GROUP, consolidate, groups, set_key

__all__ = ["run"]


def _run(conn: sqlite3.Connection, now: float) -> int:
    made = 0
    for project_id in table.working_set_projects(conn):
        sources = {source.id: source for source in table.candidates(conn, project_id)}
        taken: set[int] = set()
        for ids, topics in groups(list(sources.values())):
            members = [sources[i] for i in sorted(ids - taken)]
            key = set_key([m.id for m in members])
            if len(members) < MIN_GROUP or table.is_consolidated(conn, key):
                continue
            memory = consolidate(members, topics)
            meta = {"sources": list(memory.sources), "topics": list(memory.topics), "files": list(memory.files),
                    "confidence": memory.confidence}  # fmt: skip
            event_id = insert_derived(
                conn, f"consolidated:{key}", None, project_id, "consolidated", memory.title, memory.text, meta, 2,
                max(m.ts for m in members), now,
            )  # fmt: skip
            table.record(conn, event_id, key, memory.confidence, memory.sources, now)
            taken.update(memory.sources)
            made += 1
    return made


run = atomically(_run)
"""Consolidate every project's working set (one transaction); return the memories made."""
