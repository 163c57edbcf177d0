"""Entities in the store (schema 14): what events name, under which aliases, and how they relate.

    record     an event's entities, mentions and edges (inside the writer's transaction)
    refresh    an event's entities found again (after a redaction rewrote its text)
    named      the entities a query names, by alias
    mentions   which of some events mention (or were said by) some entities
    find       the entities known by a name or alias
    about      one entity: first and last seen, sessions, related entities, the events naming it
    listing    the most mentioned entities

Co-occurrence is not stored: two entities named in one event or one session are found by
joining ``mentions`` (one source of truth).  ``entity_edges`` holds only what a join cannot
tell: a test file and the file it tests, an error and a file edited after it in its session.
Forgetting an event deletes its mentions and edges by trigger, and an entity no event
mentions any more goes with them.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Final

import msgspec

from ..capture.entities import Entity, aliases_of, extract, named_in

__all__ = [
    "About",
    "Named",
    "Related",
    "about",
    "backfill",
    "find",
    "listing",
    "mentioned",
    "mentions",
    "named",
    "of_event",
    "rebuild",
    "record",
    "refresh",
]

EDIT_TOOLS: Final = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
FIX_WINDOW: Final = 50
"""Events back in a session an edit looks for the errors it may fix."""
_TEST_FILE: Final = re.compile(r"^(?:test_(?P<a>.+)|(?P<b>.+?)(?:_test|\.test|\.spec|_spec|Test|Tests))$")


class Named(msgspec.Struct, frozen=True):
    id: int
    kind: str
    name: str


def _entity_id(conn: sqlite3.Connection, entity: Entity) -> tuple[int, bool]:
    """The id of ``entity`` (created with its aliases when new) and whether it is new."""
    row = conn.execute("SELECT id FROM entities WHERE kind = ? AND name = ?", (entity.kind, entity.name)).fetchone()
    if row is not None:
        return int(row[0]), False
    (entity_id,) = conn.execute(
        "INSERT INTO entities (kind, name) VALUES (?, ?) RETURNING id", (entity.kind, entity.name)
    ).fetchone()
    conn.executemany(
        "INSERT OR IGNORE INTO entity_aliases (alias, entity_id) VALUES (?, ?)",
        [(alias, entity_id) for alias in aliases_of(entity.kind, entity.name)],
    )
    return int(entity_id), True


def record(
    conn: sqlite3.Connection, event_id: int, kind: str, tool: str | None, text: str, meta: str,
    session_id: str | None,
) -> int:  # fmt: skip
    """Store the entities ``event_id`` names; how many."""
    try:  # a tool's file and command are in its meta; nothing else's entities are
        fields = json.loads(meta) if tool and meta and meta != "{}" else {}
    except ValueError:
        fields = {}
    found = extract(kind, tool, text, fields if isinstance(fields, dict) else {})
    if not found:
        return 0
    ids: list[tuple[int, Entity, bool]] = []
    for entity in found:
        entity_id, new = _entity_id(conn, entity)
        ids.append((entity_id, entity, new))
    conn.executemany(
        "INSERT OR IGNORE INTO mentions (event_id, entity_id, role) VALUES (?, ?, ?)",
        [(event_id, entity_id, entity.role) for entity_id, entity, _ in ids],
    )
    for entity_id, entity, new in ids:
        if new and entity.kind == "file":
            _test_edges(conn, event_id, entity_id, entity.name)
    if kind == "tool" and tool in EDIT_TOOLS and session_id:
        _fix_edges(conn, event_id, session_id, [entity_id for entity_id, entity, _ in ids if entity.kind == "file"])
    return len(ids)


def _stem(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]


def _test_edges(conn: sqlite3.Connection, event_id: int, entity_id: int, path: str) -> None:
    """A new file entity: edges between it and the test of it, or the file it tests."""
    stem = _stem(path)
    if match := _TEST_FILE.match(stem):
        subject = (match.group("a") or match.group("b") or "").lower()
        pairs = [(entity_id, other) for other in _files_named(conn, [subject]) if other != entity_id]
    else:
        low = stem.lower()
        tests = [f"test_{low}", f"{low}_test", f"{low}.test", f"{low}.spec", f"{low}_spec", f"{low}test"]
        pairs = [(other, entity_id) for other in _files_named(conn, tests) if other != entity_id]
    conn.executemany(
        "INSERT OR IGNORE INTO entity_edges (a, b, kind, event_id) VALUES (?, ?, 'tests', ?)",
        [(test, subject_id, event_id) for test, subject_id in pairs],
    )


def _files_named(conn: sqlite3.Connection, stems: Sequence[str]) -> list[int]:
    if not stems:
        return []
    rows = conn.execute(
        f"SELECT DISTINCT a.entity_id FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
        f" WHERE a.alias IN ({','.join('?' * len(stems))}) AND e.kind = 'file'",
        list(stems),
    ).fetchall()
    return [row[0] for row in rows]


def _fix_edges(conn: sqlite3.Connection, event_id: int, session_id: str, files: Sequence[int]) -> None:
    """An edit: edges from the errors its session met shortly before to the files it edits."""
    if not files:
        return
    errors = conn.execute(
        "SELECT DISTINCT m.entity_id FROM events e JOIN mentions m ON m.event_id = e.id"
        " JOIN entities n ON n.id = m.entity_id"
        " WHERE e.session_id = ? AND e.id > ? AND e.id < ? AND e.kind = 'tool_error' AND n.kind = 'error'",
        (session_id, event_id - FIX_WINDOW, event_id),
    ).fetchall()
    conn.executemany(
        "INSERT OR IGNORE INTO entity_edges (a, b, kind, event_id) VALUES (?, ?, 'fix', ?)",
        [(error, file, event_id) for (error,) in errors for file in files],
    )


def refresh(conn: sqlite3.Connection, event_id: int) -> None:
    """Find ``event_id``'s entities again from its stored text (a redaction rewrote it): what it
    no longer names is no longer mentioned, and an entity nobody mentions is gone."""
    conn.execute("DELETE FROM mentions WHERE event_id = ?", (event_id,))
    conn.execute("DELETE FROM entity_edges WHERE event_id = ?", (event_id,))
    row = conn.execute("SELECT kind, tool, text, meta, session_id FROM events WHERE id = ?", (event_id,)).fetchone()
    if row is not None:
        record(conn, event_id, *row)


def rebuild(conn: sqlite3.Connection) -> int:
    """Find every event's entities again, from nothing (``memctl rebuild``: after the rules
    changed); the events read.  Inside the caller's transaction."""
    for table in ("mentions", "entity_edges", "entity_aliases", "entities"):
        conn.execute(f"DELETE FROM {table}")
    return backfill(conn)


def backfill(conn: sqlite3.Connection) -> int:
    """Record the entities of every stored event (a migration's ``then``); the events read."""
    rows = conn.execute("SELECT id, kind, tool, text, meta, session_id FROM events ORDER BY id").fetchall()
    for row in rows:
        record(conn, *row)
    return len(rows)


def named(conn: sqlite3.Connection, words: Iterable[str], raw: str = "") -> list[Named]:
    """The entities a query names: its words, neighbouring pairs of them, and its path-like tokens
    (``src/app/login.py``) matched against the aliases; rare entities first."""
    candidates = named_in(words)
    candidates += [token.strip(".,;:'\"`()[]{}?!").lower() for token in raw.split() if "/" in token or "." in token]
    candidates = [c for c in dict.fromkeys(candidates) if len(c) >= 3][:64]
    if not candidates:
        return []
    rows = conn.execute(
        f"SELECT e.id, e.kind, e.name FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
        f" WHERE a.alias IN ({','.join('?' * len(candidates))})",
        candidates,
    ).fetchall()
    return [Named(*row) for row in dict.fromkeys(rows)]


def mentions(
    conn: sqlite3.Connection, events: Sequence[int], entities: Sequence[int]
) -> dict[int, list[tuple[int, str]]]:
    """For each of ``events`` that mentions any of ``entities``: (entity id, role) pairs."""
    if not events or not entities:
        return {}
    rows = conn.execute(
        f"SELECT event_id, entity_id, role FROM mentions WHERE event_id IN ({','.join('?' * len(events))})"
        f" AND entity_id IN ({','.join('?' * len(entities))})",
        [*events, *entities],
    ).fetchall()
    found: dict[int, list[tuple[int, str]]] = {}
    for event_id, entity_id, role in rows:
        found.setdefault(event_id, []).append((entity_id, role))
    return found


def mentioned(conn: sqlite3.Connection, entity_id: int, cap: int) -> int:
    """How many events name ``entity_id``, counted up to ``cap``."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM mentions WHERE entity_id = ? LIMIT ?)", (entity_id, cap)
    ).fetchone()
    return int(row[0])


class Related(msgspec.Struct, frozen=True):
    kind: str
    name: str
    how: str
    """``with`` (named in the same events), ``tests``, ``fix``."""
    count: int


class About(msgspec.Struct, frozen=True):
    id: int
    kind: str
    name: str
    aliases: list[str]
    mentions: int
    sessions: int
    first_seen: float
    last_seen: float
    related: list[Related]
    events: list[int]
    """The newest events that name it."""


def _in_project(project_id: int | None) -> tuple[str, list[object]]:
    return (" AND e.project_id = ?", [project_id]) if project_id is not None else ("", [])


def find(conn: sqlite3.Connection, name: str, kind: str | None = None) -> list[Named]:
    """The entities known by ``name`` (their name or an alias, any case)."""
    rows = conn.execute(
        "SELECT DISTINCT e.id, e.kind, e.name FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
        " WHERE a.alias = ?" + (" AND e.kind = ?" if kind else "") + " ORDER BY e.id",
        [name.strip().lower(), *([kind] if kind else [])],
    ).fetchall()
    return [Named(*row) for row in rows]


def about(conn: sqlite3.Connection, entity_id: int, limit: int = 10, project_id: int | None = None) -> About | None:
    """One entity as seen in ``project_id`` (None: everywhere); None when it names nothing there."""
    row = conn.execute("SELECT id, kind, name FROM entities WHERE id = ?", (entity_id,)).fetchone()
    if row is None:
        return None
    where, args = _in_project(project_id)
    count, sessions, first, last = conn.execute(
        "SELECT count(*), count(DISTINCT e.session_id), min(e.client_ts), max(e.client_ts)"
        f" FROM mentions m JOIN events e ON e.id = m.event_id WHERE m.entity_id = ?{where}",
        [entity_id, *args],
    ).fetchone()
    if not count:
        return None
    aliases = [
        a
        for (a,) in conn.execute(
            "SELECT alias FROM entity_aliases WHERE entity_id = ? ORDER BY length(alias) DESC, alias", (entity_id,)
        )
    ]
    related = [
        Related(*found)
        for found in conn.execute(
            "SELECT n.kind, n.name, 'with', count(*) AS c FROM mentions m JOIN events e ON e.id = m.event_id"
            " JOIN mentions o ON o.event_id = m.event_id JOIN entities n ON n.id = o.entity_id"
            f" WHERE m.entity_id = ? AND o.entity_id != m.entity_id{where}"
            " GROUP BY o.entity_id ORDER BY c DESC, n.name LIMIT ?",
            [entity_id, *args, limit],
        )
    ]
    related += [
        Related(*found)
        for found in conn.execute(
            "SELECT n.kind, n.name, g.kind, count(*) AS c FROM entity_edges g JOIN events e ON e.id = g.event_id"
            " JOIN entities n ON n.id = CASE WHEN g.a = ? THEN g.b ELSE g.a END"
            f" WHERE (g.a = ? OR g.b = ?){where} GROUP BY n.id, g.kind ORDER BY c DESC, n.name LIMIT ?",
            [entity_id, entity_id, entity_id, *args, limit],
        )
    ]
    events = [
        event_id
        for (event_id,) in conn.execute(
            f"SELECT m.event_id FROM mentions m JOIN events e ON e.id = m.event_id WHERE m.entity_id = ?{where}"
            " ORDER BY m.event_id DESC LIMIT ?",
            [entity_id, *args, limit],
        )
    ]
    return About(row[0], row[1], row[2], aliases, count, sessions, first or 0.0, last or 0.0, related, events)


def listing(
    conn: sqlite3.Connection, kind: str | None, limit: int, project_id: int | None = None
) -> list[tuple[Named, int]]:
    """The most mentioned entities (of ``kind``, in ``project_id``), with their mention counts."""
    where, args = _in_project(project_id)
    if kind:
        where, args = where + " AND n.kind = ?", [*args, kind]
    rows = conn.execute(
        "SELECT n.id, n.kind, n.name, count(*) AS c FROM entities n JOIN mentions m ON m.entity_id = n.id"
        f" JOIN events e ON e.id = m.event_id WHERE 1{where} GROUP BY n.id ORDER BY c DESC, n.name LIMIT ?",
        [*args, limit],
    ).fetchall()
    return [(Named(i, k, name), c) for i, k, name, c in rows]


def of_event(conn: sqlite3.Connection, event_id: int, limit: int = 20) -> list[tuple[Named, int]]:
    """The entities an event names, with the events that name each, the most named first."""
    rows = conn.execute(
        "SELECT n.id, n.kind, n.name, (SELECT count(*) FROM mentions c WHERE c.entity_id = n.id) AS k"
        " FROM mentions m JOIN entities n ON n.id = m.entity_id WHERE m.event_id = ? ORDER BY k DESC, n.name LIMIT ?",
        (event_id, limit),
    ).fetchall()
    return [(Named(i, kind, name), count) for i, kind, name, count in rows]
