"""The search lanes: SQL over one read connection, each returning ranked event ids.

    keyword    events_fts (porter + unicode61): every concept (AND), then any (OR)
    context    events_ctx: each event's words with its neighbours' (any rare concept, BM25)
    entity     events that mention an entity the query names (newest first)
    trigram    events_cjk: CJK tokens of 3+ characters, inside words ('검색을' for 검색어...)
    substring  events_cjk LIKE: 1-2 character CJK tokens (2-syllable Korean words), recent rows
    vector     nearest stored vectors (the indexer searches, this maps keys to events)

Every lane applies the same ``Filters`` in SQL, so a filtered search is not a global
top-N with most hits thrown away.

**Cost.** Everything here is paid per matching row: ~0.5 µs to walk a match, ~1.3 µs
to look its event up for the filters, ~2.5 µs for BM25.  A word in a quarter of a
million events would cost a second, so the keyword lane looks at document
frequencies first (``events_fts_terms``, one B-tree probe per word):

- an expression expected to match at most ``RANK_CAP`` rows is ranked in full (BM25);
- a larger one is ranked within its ``RANK_CAP`` newest matches, and topped up with
  the newest filtered matches among the ``TOP_UP_CAP`` next ones: recency decides
  which matches of a very common word compete, BM25 the order among them;
- the OR fallback leaves out words that are that common (when rarer ones remain),
  as a stop-word list would: they say little about which event is meant;
- the last word is a prefix (``rebuil*``) only when it is not a word of the index
  already, i.e. when the user seems to be still typing it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Final

import msgspec

from ..protocol import CLAUDE_CODE
from ..query import Query, like_patterns, match_expression, trigram_expression
from .schema import TOKENIZER, context_row

__all__ = [
    "RANK_CAP",
    "Doc",
    "Filters",
    "Frequencies",
    "context",
    "context_start",
    "docs",
    "entity",
    "keyword",
    "substring",
    "surroundings",
    "trigram",
    "vector_events",
]

RANK_CAP: Final = 500
"""Most rows one expression ranks with BM25 (~2 ms: ~4 µs a row with its filter lookup)."""
TOP_UP_CAP: Final = 4 * RANK_CAP
"""Most further matches walked (newest first) to fill up a filtered result."""
CONTEXT_WEIGHTS: Final = (1.0, 0.5)
"""BM25 weights of an event's own words and its neighbours' in the context lane."""
CONTEXT_CAP: Final = 200
"""Most rows the context lane ranks with BM25: it runs beside the keyword lane on every search
(the prompt hook's too), and a common word's newest 200 neighbourhoods are as many as it needs."""
CONTEXT_SPREAD: Final = 3
"""A word's rows in ``events_ctx`` per row of ``events_fts``: its own and two neighbours'."""
SUBSTRING_WINDOW: Final = 50_000
"""Newest CJK rows a LIKE scan looks at: substring search is a scan, so it is bounded."""
UNKNOWN: Final = 1 << 62
"""The frequency assumed when it cannot be looked up (trigram expressions, prefixes)."""


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    """What a search is restricted to; None means no restriction."""

    project_id: int | None = None
    kind: str | None = None
    tool: str | None = None
    session: str | None = None
    path: str | None = None
    since: float | None = None
    until: float | None = None
    kinds: tuple[str, ...] = ()
    """Only these kinds (empty: any)."""
    min_importance: int | None = None
    not_session: str | None = None
    """Leave out this session's events (what an agent's context already holds)."""
    entity: str | None = None
    """Only events that name an entity known by this alias (``memd.store.entities``)."""
    agent: str | None = None
    """Only events of this agent's hooks (``memd.capture.agents``)."""

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
            ("e.importance >= ?", self.min_importance),
            ("e.session_id IS NOT ?", self.not_session),
            ("e.agent = ?", self.agent),
        ):
            if value is not None:
                clauses.append(clause)
                args.append(value)
        if self.kinds:
            clauses.append(f"e.kind IN ({','.join('?' * len(self.kinds))})")
            args += self.kinds
        if self.entity:
            clauses.append(
                "e.id IN (SELECT m.event_id FROM entity_aliases a JOIN mentions m ON m.entity_id = a.entity_id"
                " WHERE a.alias = ?)"
            )
            args.append(self.entity.strip().lower())
        if self.path:
            pattern = "%" + _escape_like(self.path) + "%"
            clauses.append("(e.meta LIKE ? ESCAPE '\\' OR e.title LIKE ? ESCAPE '\\')")
            args += [pattern, pattern]
        return "".join(f" AND {c}" for c in clauses), args


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _ranked(
    conn: sqlite3.Connection, table: str, match: str, estimate: int, filters: Filters, limit: int,
    weights: tuple[float, float] = (2.0, 1.0), cap: int = RANK_CAP,
) -> list[int]:  # fmt: skip
    """Ids of the best ``limit`` rows of ``table`` for ``match`` that pass ``filters``.

    ``estimate`` is an upper bound of the rows ``match`` finds: up to ``cap`` they are
    all ranked, beyond it only the newest ``cap`` (then the newest others fill up).
    """
    where, args = filters.sql()
    floor = 0
    if estimate > cap:
        floor = conn.execute(
            f"SELECT min(rowid) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?)",
            (match, cap),
        ).fetchone()[0]
        if floor is None:
            return []
    # CROSS JOIN: walk the matches, look each event up; never the other way round.
    found = [
        row[0]
        for row in conn.execute(
            f"SELECT f.rowid FROM {table} f CROSS JOIN events e ON e.id = f.rowid"
            f" WHERE {table} MATCH ? AND f.rowid >= ?{where}"
            f" ORDER BY bm25({table}, {float(weights[0])}, {float(weights[1])}) LIMIT ?",
            [match, floor, *args, limit],
        )
    ]
    if floor and len(found) < limit:
        found += [
            row[0]
            for row in conn.execute(
                f"SELECT m.rowid FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid < ?"
                f" ORDER BY rowid DESC LIMIT ?) m CROSS JOIN events e ON e.id = m.rowid"
                f" WHERE 1{where} ORDER BY m.rowid DESC LIMIT ?",
                [match, floor, TOP_UP_CAP, *args, limit - len(found)],
            )
        ]
    return found


class Frequencies:
    """Document frequencies of query words, from the index's own vocabulary, remembered a while.

    The vocabulary holds Porter stems (``empti``, ``queri``), so a word is first stemmed
    by the very tokenizer the index uses: a scratch FTS5 table in memory, read back
    through ``fts5vocab``.  A lookup costs ~0.3 ms; frequencies move slowly and only
    their order of magnitude matters here, so each is kept for ``ttl`` seconds.
    """

    def __init__(self, ttl: float = 300.0, size: int = 10_000) -> None:
        self.ttl = ttl
        self.size = size
        self._known: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()  # the scratch connection serves every reader thread
        self._scratch = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._scratch.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{TOKENIZER}')")
        self._scratch.execute("CREATE VIRTUAL TABLE stems USING fts5vocab(words, 'instance')")

    def of(self, conn: sqlite3.Connection, words: Sequence[str]) -> list[int]:
        """Documents holding each of ``words``, as the keyword index counts them."""
        now = time.monotonic()
        fresh = {w: known[1] for w in words if (known := self._known.get(w)) and now - known[0] < self.ttl}
        missing = [w for w in dict.fromkeys(words) if w not in fresh]
        if missing:
            if len(self._known) + len(missing) > self.size:
                self._known.clear()
            for word, stem in self._stems(missing).items():
                row = conn.execute("SELECT doc FROM events_fts_terms WHERE term = ?", (stem,)).fetchone()
                fresh[word] = row[0] if row else 0
                self._known[word] = (now, fresh[word])
        return [fresh.get(w, 0) for w in words]

    def _stems(self, words: list[str]) -> dict[str, str]:
        with self._lock:
            self._scratch.execute("BEGIN")
            self._scratch.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(words))
            stems = dict(self._scratch.execute("SELECT doc, term FROM stems ORDER BY doc, offset DESC"))
            self._scratch.execute("ROLLBACK")
        return {word: stems.get(i, word) for i, word in enumerate(words)}


def keyword(
    conn: sqlite3.Connection, query: Query, filters: Filters, limit: int, frequency: Frequencies | None = None
) -> list[int]:
    """Rows with every concept first (BM25 order), then rows with any rare enough one."""
    if not query.groups:
        return []
    frequency = frequency or Frequencies(ttl=0)
    counts_of = dict(zip(terms := [t for g in query.groups for t in g], frequency.of(conn, terms), strict=True))
    frequencies = [[counts_of[term] for term in group] for group in query.groups]
    counts = [sum(group) for group in frequencies]
    typing = frequencies[-1][0] == 0  # the last word is no word of the index (yet): a prefix
    every = match_expression(query.groups, operator="AND", prefix_last=typing)
    found = _ranked(conn, "events_fts", every, UNKNOWN if typing else min(counts), filters, limit)
    if len(found) < limit and len(query.groups) > 1:
        pairs = list(zip(query.groups, counts, strict=True))
        rare = [(group, n) for group, n in pairs if n <= RANK_CAP] or pairs
        any_of = match_expression([group for group, _ in rare], operator="OR", prefix_last=False)
        seen = set(found)
        more = _ranked(conn, "events_fts", any_of, sum(n for _, n in rare), filters, limit)
        found += [event_id for event_id in more if event_id not in seen][: limit - len(found)]
    return found


def context(
    conn: sqlite3.Connection, query: Query, filters: Filters, limit: int, frequency: Frequencies | None = None
) -> list[int]:
    """The context lane: events whose own words with their neighbours' (``events_ctx``, see
    ``memd.store.neighbours``) hold the query's rarer concepts, by BM25 (own words count more)."""
    if not query.groups:
        return []
    frequency = frequency or Frequencies(ttl=0)
    counts = [sum(frequency.of(conn, list(group))) for group in query.groups]
    pairs = list(zip(query.groups, counts, strict=True))
    rare = [(group, n) for group, n in pairs if n <= RANK_CAP] or pairs
    any_of = match_expression([group for group, _ in rare], operator="OR", prefix_last=False)
    estimate = CONTEXT_SPREAD * sum(n for _, n in rare)
    return _ranked(conn, "events_ctx", any_of, estimate, filters, limit, CONTEXT_WEIGHTS, CONTEXT_CAP)


def entity(conn: sqlite3.Connection, entities: Sequence[int], filters: Filters, limit: int) -> list[int]:
    """The entity lane: the newest events (within ``filters``) that mention any of ``entities``."""
    if not entities:
        return []
    where, args = filters.sql()
    rows = conn.execute(
        f"SELECT DISTINCT m.event_id FROM mentions m CROSS JOIN events e ON e.id = m.event_id"
        f" WHERE m.entity_id IN ({','.join('?' * len(entities))}){where} ORDER BY m.event_id DESC LIMIT ?",
        [*entities, *args, limit],
    ).fetchall()
    return [row[0] for row in rows]


def trigram(conn: sqlite3.Connection, query: Query, filters: Filters, limit: int) -> list[int]:
    match = trigram_expression(query.cjk)
    return _ranked(conn, "events_cjk", match, UNKNOWN, filters, limit) if match else []


def substring(conn: sqlite3.Connection, query: Query, filters: Filters, limit: int) -> list[int]:
    """Newest CJK rows containing a 1-2 character token (trigrams cannot match those)."""
    patterns = like_patterns(query.cjk)
    if not patterns:
        return []
    where, args = filters.sql()
    (top,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM events_cjk").fetchone()
    like = " OR ".join("c.title LIKE ? ESCAPE '\\' OR c.text LIKE ? ESCAPE '\\'" for _ in patterns)
    rows = conn.execute(
        f"SELECT c.rowid FROM events_cjk c CROSS JOIN events e ON e.id = c.rowid"
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
        f"SELECT v.id, v.event_id FROM vectors v CROSS JOIN events e ON e.id = v.event_id"
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
    meta: str = "{}"
    level: int = 0
    """Graduation level (``memd.capture.graduation``)."""
    agent: str = CLAUDE_CODE


def docs(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, Doc]:
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT e.id, e.kind, e.tool, e.title, e.text, e.importance, e.client_ts, e.received_at, e.session_id, p.root,"
        " e.meta, coalesce(l.level, 0), e.agent FROM events e LEFT JOIN projects p ON p.id = e.project_id"
        f" LEFT JOIN memory_levels l ON l.event_id = e.id WHERE e.id IN ({','.join('?' * len(ids))})",
        list(ids),
    ).fetchall()
    fields = Doc.__struct_fields__
    return {row[0]: Doc(**dict(zip(fields, row, strict=True))) for row in rows}


def surroundings(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    """Each event's neighbours' words as the context lane indexes them (``memd.store.neighbours``)."""
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT {context_row('l')} FROM event_links l WHERE l.event_id IN ({','.join('?' * len(ids))})", list(ids)
    ).fetchall()
    return {event_id: around for event_id, _, around in rows if around.strip()}


def context_start(conn: sqlite3.Connection, session: str) -> int:
    """The id after which ``session``'s events are still in its model's context: its last
    compaction summary's (0: it never compacted)."""
    row = conn.execute(  # ``+kind``: the session's events, not every compaction of the store
        "SELECT max(id) FROM events WHERE session_id = ? AND +kind = 'compact_summary'", (session,)
    ).fetchone()
    return row[0] or 0
