"""The retrieval lanes: SQL over one read connection, each returning ranked event ids.

    keyword    events_fts (porter + unicode61): every concept (AND), then any (OR)
    trigram    events_cjk: CJK tokens of 3+ characters, inside words ('검색을' for 검색어...)
    substring  events_cjk LIKE: 1-2 character CJK tokens (2-syllable Korean words), recent rows
    vector     nearest stored vectors (the indexer searches, this maps keys to events)

Every lane applies the same ``Filters`` in SQL, so a filtered search is not a global
top-N with most hits thrown away.  Ranked FTS5 costs ~1.5 µs per matching row, so a
lane ranks at most the ``CANDIDATE_CAP`` newest filtered rows that match, looked for
among the ``SCAN_CAP`` newest matches: a word found in half a million events costs
the same as one found in five thousand (recency decides which of its matches
compete, BM25 the order among them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

import msgspec

from .query import Query, like_patterns, match_expression, trigram_expression

__all__ = ["CANDIDATE_CAP", "Doc", "Filters", "docs", "keyword", "substring", "trigram", "vector_events"]

CANDIDATE_CAP: Final = 5_000
SCAN_CAP: Final = 20_000
SUBSTRING_WINDOW: Final = 50_000
"""Newest CJK rows a LIKE scan looks at: substring search is a scan, so it is bounded."""


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    """What a search is restricted to; None means no restriction."""

    project_id: int | None = None
    kind: str | None = None
    tool: str | None = None
    session: str | None = None
    path: str | None = None
    since: float | None = None
    until: float | None = None

    def sql(self) -> tuple[str, list[object]]:
        """``AND ...`` clauses over ``events e`` and their arguments."""
        clauses: list[str] = []
        args: list[object] = []
        for clause, value in (
            ("e.project_id = ?", self.project_id),
            ("e.kind = ?", self.kind),
            ("e.tool = ?", self.tool),
            ("e.session_id = ?", self.session),
            ("e.client_ts >= ?", self.since),
            ("e.client_ts < ?", self.until),
        ):
            if value is not None:
                clauses.append(clause)
                args.append(value)
        if self.path:
            pattern = "%" + _escape_like(self.path) + "%"
            clauses.append("(e.meta LIKE ? ESCAPE '\\' OR e.title LIKE ? ESCAPE '\\')")
            args += [pattern, pattern]
        return "".join(f" AND {c}" for c in clauses), args


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _ranked(conn: sqlite3.Connection, table: str, match: str, filters: Filters, limit: int) -> list[int]:
    """Ids of the best ``limit`` rows of ``table`` for ``match`` that pass ``filters``.

    Ranking is bounded: only the newest CANDIDATE_CAP filtered matches compete, found
    among the newest SCAN_CAP matches overall.  A word rarer than that is ranked over
    all of its matches.
    """
    where, args = filters.sql()
    floor = conn.execute(
        f"SELECT min(rowid) FROM (SELECT m.rowid FROM"
        f" (SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?) m"
        f" JOIN events e ON e.id = m.rowid WHERE 1{where} ORDER BY m.rowid DESC LIMIT ?)",
        [match, SCAN_CAP, *args, CANDIDATE_CAP],
    ).fetchone()[0]
    if floor is None:
        return []
    rows = conn.execute(
        f"SELECT f.rowid FROM {table} f JOIN events e ON e.id = f.rowid"
        f" WHERE {table} MATCH ? AND f.rowid >= ?{where} ORDER BY bm25({table}, 2.0, 1.0) LIMIT ?",
        [match, floor, *args, limit],
    ).fetchall()
    return [row[0] for row in rows]


def keyword(conn: sqlite3.Connection, query: Query, filters: Filters, limit: int) -> list[int]:
    """Rows with every concept first (BM25 order), then rows with any of them."""
    found = (
        _ranked(conn, "events_fts", match_expression(query.groups, operator="AND"), filters, limit)
        if query.groups
        else []
    )
    if len(found) < limit and len(query.groups) > 1:
        seen = set(found)
        relaxed = _ranked(conn, "events_fts", match_expression(query.groups, operator="OR"), filters, limit)
        found += [event_id for event_id in relaxed if event_id not in seen][: limit - len(found)]
    return found


def trigram(conn: sqlite3.Connection, query: Query, filters: Filters, limit: int) -> list[int]:
    match = trigram_expression(query.cjk)
    return _ranked(conn, "events_cjk", match, filters, limit) if match else []


def substring(conn: sqlite3.Connection, query: Query, filters: Filters, limit: int) -> list[int]:
    """Newest CJK rows containing a 1-2 character token (trigrams cannot match those)."""
    patterns = like_patterns(query.cjk)
    if not patterns:
        return []
    where, args = filters.sql()
    (top,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM events_cjk").fetchone()
    like = " OR ".join("c.title LIKE ? ESCAPE '\\' OR c.text LIKE ? ESCAPE '\\'" for _ in patterns)
    rows = conn.execute(
        f"SELECT c.rowid FROM events_cjk c JOIN events e ON e.id = c.rowid"
        f" WHERE c.rowid > ? AND ({like}){where} ORDER BY c.rowid DESC LIMIT ?",
        [top - SUBSTRING_WINDOW, *[p for p in patterns for _ in (0, 1)], *args, limit],
    ).fetchall()
    return [row[0] for row in rows]


def vector_events(
    conn: sqlite3.Connection, neighbors: Sequence[tuple[int, float]], filters: Filters, limit: int
) -> list[tuple[int, float]]:
    """Map nearest vector keys to events (best window per event), filtered, most similar first."""
    if not neighbors:
        return []
    similarity = dict(neighbors)
    where, args = filters.sql()
    keys = list(similarity)
    rows = conn.execute(
        f"SELECT v.id, v.event_id FROM vectors v JOIN events e ON e.id = v.event_id"
        f" WHERE v.id IN ({','.join('?' * len(keys))}){where}",
        [*keys, *args],
    ).fetchall()
    best: dict[int, float] = {}
    for key, event_id in rows:
        best[event_id] = max(best.get(event_id, -1.0), similarity[key])
    return sorted(best.items(), key=lambda item: -item[1])[:limit]


class Doc(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    kind: str
    tool: str | None
    title: str
    text: str
    importance: int
    client_ts: float
    received_at: float
    session_id: str | None
    project: str | None


def docs(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, Doc]:
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT e.id, e.kind, e.tool, e.title, e.text, e.importance, e.client_ts, e.received_at, e.session_id, p.root"
        f" FROM events e LEFT JOIN projects p ON p.id = e.project_id WHERE e.id IN ({','.join('?' * len(ids))})",
        list(ids),
    ).fetchall()
    fields = Doc.__struct_fields__
    return {row[0]: Doc(**dict(zip(fields, row, strict=True))) for row in rows}


def project_id(conn: sqlite3.Connection, root: str) -> int | None:
    row = conn.execute("SELECT id FROM projects WHERE root = ?", (root,)).fetchone()
    return row[0] if row else None
