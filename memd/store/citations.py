"""Citation ids in the store: given to an event in the transaction that stores it, and
resolved back to it (``memd.cite`` says how an id is made).

``citations`` holds each event's id (``cite``, what it is shown and quoted as) and the
twelve characters every id of it begins with (``full_cite``).  Another machine may show the same
event by a longer id than this one does (it held an event whose id began alike first), so
an id resolves by what it is here, then by what it begins: an id one store gave resolves
in every other store holding the event.  Ids that stores gave before ids came from keys
stay in ``citation_aliases``; ids of forgotten events stay in ``retired_citations`` and
are never given, nor resolved, again.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Final

from ..cite import LEGACY_LENGTH, LENGTH, MAX_LENGTH, key_citation

__all__ = ["assign", "assign_all", "cites_of_keys", "event_of", "keep_alias"]

_END: Final = "\x7f"
"""After every character of an id, so that ``_BEGINNING`` with (id, id + ``_END``) is the
events whose ids begin with ``id``: a range of the unique index, not a scan."""
_BEGINNING: Final = "SELECT event_id FROM citations WHERE full_cite >= ? AND full_cite < ? LIMIT 2"


def assign(conn: sqlite3.Connection, event_id: int, idem_key: str, *, new: bool = False) -> str:
    """The event's citation id: the one it has, or the shortest beginning of its
    ``key_citation`` (``LENGTH`` characters or more) that no other event's begins with and
    no forgotten event had.  ``new``: the event was just inserted, so it has none yet."""
    if not new and (row := conn.execute("SELECT cite FROM citations WHERE event_id = ?", (event_id,)).fetchone()):
        return str(row[0])
    full = key_citation(idem_key)
    for length in range(LENGTH, MAX_LENGTH + 1):
        cite = full[:length]
        if conn.execute(_BEGINNING, (cite, cite + _END)).fetchone():
            continue  # another event's id begins so: a longer one tells them apart
        # a retired id is refused by the table's trigger, and RETURNING then gives no row
        inserted = conn.execute(
            "INSERT INTO citations (cite, event_id, full_cite) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING cite",
            (cite, event_id, full),
        ).fetchone()
        if inserted:
            return cite
    raise sqlite3.IntegrityError(f"no free citation id for event {event_id}: {MAX_LENGTH} characters shared")


def assign_all(conn: sqlite3.Connection) -> int:
    """Give every stored event its id at once (migration 15), oldest first, by ``assign``'s rule:
    the same ids, worked out in memory.  Two ids begin alike about once in 2·10^14 pairs, so
    the events are grouped by their first ``LENGTH`` characters and only a group of two or
    more looks further.  How many were given."""
    retired = {cite for (cite,) in conn.execute("SELECT cite FROM retired_citations")}
    by_start: dict[str, list[str]] = {}
    given = []
    for event_id, key in conn.execute("SELECT id, idem_key FROM events ORDER BY id"):
        full = key_citation(key)
        earlier = by_start.setdefault(full[:LENGTH], [])
        for length in range(LENGTH, MAX_LENGTH + 1):
            cite = full[:length]
            if cite not in retired and not any(other.startswith(cite) for other in earlier):
                break
        else:
            raise sqlite3.IntegrityError(f"no free citation id for event {event_id}: {MAX_LENGTH} characters shared")
        earlier.append(full)
        given.append((cite, event_id, full))
    given.sort()  # in the table's key order: appended to its B-tree, not spread over it
    conn.executemany("INSERT INTO citations (cite, event_id, full_cite) VALUES (?, ?, ?)", given)
    return len(given)


def event_of(conn: sqlite3.Connection, cite: str) -> int | None:
    """The event an id names here: its own id, a legacy alias, or the beginning of exactly one
    event's ``full_cite`` (the id another store gave it); None for an unknown, forgotten or
    ambiguous id."""
    row = conn.execute("SELECT event_id FROM citations WHERE cite = ?", (cite,)).fetchone()
    if row is None and len(cite) == LEGACY_LENGTH:
        row = conn.execute("SELECT event_id FROM citation_aliases WHERE cite = ?", (cite,)).fetchone()
    if row is not None:
        return int(row[0])
    if len(cite) < LENGTH or conn.execute("SELECT 1 FROM retired_citations WHERE cite = ?", (cite,)).fetchone():
        return None
    found = conn.execute(_BEGINNING, (cite, cite + _END)).fetchall()
    return int(found[0][0]) if len(found) == 1 else None


def keep_alias(conn: sqlite3.Connection, event_id: int, cite: str) -> bool:
    """Whether ``cite``, the id an export or another machine gave the event, resolves to it
    here; a legacy id does from now on if no other event here has it and none had it."""
    if (
        len(cite) == LEGACY_LENGTH
        and not conn.execute("SELECT 1 FROM retired_citations WHERE cite = ?", (cite,)).fetchone()
    ):
        conn.execute("INSERT OR IGNORE INTO citation_aliases (cite, event_id) VALUES (?, ?)", (cite, event_id))
    return event_of(conn, cite) == event_id


def cites_of_keys(conn: sqlite3.Connection, keys: list[str]) -> dict[str, str]:
    """The citation ids of the events stored here under ``keys``, by key."""
    return dict(conn.execute(
        "SELECT e.idem_key, c.cite FROM events e JOIN citations c ON c.event_id = e.id"
        " WHERE e.idem_key IN (SELECT value FROM json_each(?))",
        (json.dumps(keys),),
    ).fetchall())  # fmt: skip
