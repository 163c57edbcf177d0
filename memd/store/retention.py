"""Retention: which old, unimportant events go, and the SQL that feeds and measures it.

The policy (``[retention]`` in config.toml):

- an event of low importance (``importance <= max_importance``, 1 by default: reads,
  searches, trivial shell commands, notifications) older than ``max_age_days`` (90)
  goes;
- while the data is over ``max_db_bytes`` (2 GB), younger low-importance events go too,
  oldest first, until it is estimated under;
- whatever its importance and age, an event is **kept** if it is an error
  (``tool_error``), a memory someone kept on purpose (``memory``), derived (a session
  summary, snapshot or consolidation: recomputed from the log, never aged out), cited
  (any ``citation_usage`` row: it reached an agent or a person by id) or graduated
  (``memory_levels`` level 2 or higher).

``choose`` decides, on plain rows; ``select``, ``candidates`` and ``measure`` are the SQL
around it.
The deleting goes through the forget path (``memd.store.forget``, selector
``"retention"``), so derived data is recomputed and vectors leave the index.

**Size.**  ``max_db_bytes`` caps the pages in use (the file minus its free pages), which
is what the file shrinks to once freed pages are given back.  An event's share of them is
estimated from its own stored bytes (title, text, payload, meta) times the database's
ratio of pages to stored bytes, so that indexes, vectors and overhead are counted in
proportion.  The estimate errs; the janitor measures again after a round and goes on
while it is still over.

**Giving space back.**  SQLite returns freed pages to the file system only with
``auto_vacuum = INCREMENTAL`` (then ``PRAGMA incremental_vacuum``), and an existing
database switches only through a full ``VACUUM`` outside any transaction, which rewrites
the file (~8 s per GB here, with the WAL growing to the file's size meanwhile).
``switch_to_incremental`` does that: by itself at start for a database up to
``SWITCH_AT_START_BYTES`` (a new one costs nothing), and for a larger one only when asked
(``memctl gc --vacuum``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import Final, NamedTuple

from ..config import RetentionConfig

__all__ = [
    "KEPT_KINDS",
    "LAST_RUN",
    "SWITCH_AT_START_BYTES",
    "Candidate",
    "Choice",
    "Policy",
    "Size",
    "candidates",
    "choose",
    "content_bytes",
    "expired_on_arrival",
    "kept",
    "measure",
    "select",
    "switch_to_incremental",
]

DAY: Final = 86400.0
KEPT_KINDS: Final = frozenset({"tool_error", "memory", "session_summary", "snapshot", "consolidated"})
GRADUATED: Final = 2
"""The graduation level from which a memory is kept whatever its age (``capture.graduation``)."""
LAST_RUN: Final = "retention.last_run"
"""The ``settings`` key holding when the last pass ran (Unix time): a restart does not re-run it."""
SWITCH_AT_START_BYTES: Final = 128 * 1024 * 1024
"""Largest database switched to incremental vacuum at start by itself (~1 s of VACUUM here)."""
AUTO_VACUUM: Final = {0: "none", 1: "full", 2: "incremental"}


class Policy(NamedTuple):
    max_age_days: float
    max_importance: int
    max_db_bytes: int
    """0: no cap."""

    @classmethod
    def of(cls, config: RetentionConfig) -> Policy:
        return cls(config.max_age_days, config.max_importance, config.max_db_bytes)


class Candidate(NamedTuple):
    """A low-importance event, as retention weighs it."""

    id: int
    kind: str
    client_ts: float
    content: int
    """Bytes of its stored text (title, text, payload, meta); 0 when not measured."""
    cited: bool
    level: int


class Choice(NamedTuple):
    aged: list[int]
    """Older than ``max_age_days``, oldest first."""
    capped: list[int]
    """Younger, oldest first, to bring the data under ``max_db_bytes``."""


class Size(NamedTuple):
    file_bytes: int
    """The database file and its WAL."""
    used_bytes: int
    """Pages in use: what the file is without its free pages."""
    auto_vacuum: str


def kept(candidate: Candidate) -> bool:
    """Whether retention keeps an event whatever its age (module docstring)."""
    return candidate.kind in KEPT_KINDS or candidate.cited or candidate.level >= GRADUATED


def expired_on_arrival(policy: Policy, kind: str, importance: int, client_ts: float, now: float) -> bool:
    """Whether an event arriving now, dated ``client_ts`` (an import's history), would go at
    the next pass: low importance and past the age limit (a new event is neither cited nor
    graduated yet)."""
    young = client_ts >= now - policy.max_age_days * DAY
    return importance <= policy.max_importance and not young and not kept(Candidate(0, kind, client_ts, 0, False, 0))


def choose(candidates: Sequence[Candidate], policy: Policy, now: float, used_bytes: int, content_total: int) -> Choice:
    """What retention removes among ``candidates`` (low-importance events, oldest first).

    ``used_bytes`` is the data's size and ``content_total`` the stored bytes of every event
    (not only the candidates): their ratio turns an event's own bytes into its share of the
    file.  Both matter only when the data is over ``policy.max_db_bytes``."""
    removable = [c for c in candidates if not kept(c)]
    cutoff = now - policy.max_age_days * DAY
    aged = [c for c in removable if c.client_ts < cutoff]
    capped: list[int] = []
    if policy.max_db_bytes and used_bytes > policy.max_db_bytes:
        per_stored_byte = used_bytes / max(content_total, 1)
        to_free = used_bytes - policy.max_db_bytes - sum(c.content for c in aged) * per_stored_byte
        going = {c.id for c in aged}
        for candidate in removable:
            if to_free <= 0:
                break
            if candidate.id not in going:
                capped.append(candidate.id)
                to_free -= candidate.content * per_stored_byte
    return Choice([c.id for c in aged], capped)


_CONTENT = "length(e.title) + length(e.text) + length(e.payload) + length(e.meta)"


def candidates(conn: sqlite3.Connection, max_importance: int, *, before: float | None, sizes: bool) -> list[Candidate]:
    """Low-importance events, oldest first: only those dated before ``before`` unless None
    (the size cap looks at all of them); with their stored bytes if ``sizes``."""
    where, args = ("AND e.client_ts < ?", [before]) if before is not None else ("", [])
    return [
        Candidate(*row)
        for row in conn.execute(
            f"SELECT e.id, e.kind, e.client_ts, {_CONTENT if sizes else '0'},"
            " EXISTS (SELECT 1 FROM citation_usage u WHERE u.event_id = e.id), coalesce(l.level, 0)"
            f" FROM events e LEFT JOIN memory_levels l ON l.event_id = e.id WHERE e.importance <= ? {where}"
            " ORDER BY e.client_ts, e.id",
            [max_importance, *args],
        )
    ]


def select(conn: sqlite3.Connection, policy: Policy, now: float, used_bytes: int) -> Choice:
    """``choose`` over this database: only the events past the age limit are read, unless
    the data is over the cap (then every low-importance one, with its size)."""
    over = bool(policy.max_db_bytes) and used_bytes > policy.max_db_bytes
    cutoff = None if over else now - policy.max_age_days * DAY
    rows = candidates(conn, policy.max_importance, before=cutoff, sizes=over)
    return choose(rows, policy, now, used_bytes, content_bytes(conn) if over else 0)


def content_bytes(conn: sqlite3.Connection) -> int:
    """Stored bytes of every event (a full scan: only when over the size cap)."""
    return int(conn.execute(f"SELECT coalesce(sum({_CONTENT}), 0) FROM events e").fetchone()[0])


def measure(conn: sqlite3.Connection, path: str) -> Size:
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    mode = conn.execute("PRAGMA auto_vacuum").fetchone()[0]
    return Size(_file_bytes(path), (pages - free) * page_size, AUTO_VACUUM.get(mode, str(mode)))


def _file_bytes(path: str) -> int:
    total = 0
    for name in (path, f"{path}-wal"):
        try:
            total += os.path.getsize(name)
        except OSError:
            continue
    return total


def switch_to_incremental(conn: sqlite3.Connection, max_bytes: int | None) -> bool:
    """Set ``auto_vacuum = INCREMENTAL`` and rewrite the file (VACUUM) so that it takes
    effect, if it is not set yet and the file is at most ``max_bytes`` (None: any size).
    Runs on the writer's connection, outside any transaction; True if it switched."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        return False
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    if max_bytes is not None and conn.execute("PRAGMA page_count").fetchone()[0] * page_size > max_bytes:
        return False
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # VACUUM wrote the whole file into the WAL
    return True
