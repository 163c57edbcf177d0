"""The vector outbox and the stored vectors: SQL only, each function one transaction.

Every event gets an outbox row in the transaction that stores it (a trigger), so an
acknowledged event can never miss its vectors, whatever crashes when.  A row moves::

    pending --claim--> processing --complete--> done
       ^                   |   \
       |                   |    +--(stage 0 of a long text)--> pending, stage 1
       +----- fail --------+ (retry after RETRY_DELAYS[attempt]; after MAX_ATTEMPTS: failed)

Stage 0 stores an event's head vector, stage 1 the windows of a longer text
(``memd.retrieve.windows.event_windows``).  Claims take stage 0 first, newest event first: a live
session is searchable by meaning at once even behind a long backlog (an import, a
model change); the longer windows follow when no head is waiting.

A claim is one ``UPDATE ... RETURNING`` (atomic: no row is handed out twice).  A row
left ``processing`` by a crash goes back to ``pending``: all of them when the daemon
starts (it holds the instance lock, so nobody else is working on them), and those
claimed more than ``STUCK_AFTER`` seconds ago periodically.

These run on the writer's connection (``Writer.call``): the single writer stays single.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Final, NamedTuple

import numpy as np

__all__ = [
    "MAX_ATTEMPTS",
    "RETRY_DELAYS",
    "STUCK_AFTER",
    "Claimed",
    "OutboxStats",
    "claim",
    "complete",
    "decode",
    "encode",
    "extent",
    "fail",
    "recover",
    "requeue_all",
    "set_version",
    "similarities",
    "stats",
    "stored_vectors",
]

RETRY_DELAYS: Final = (1.0, 5.0, 30.0)
"""Seconds before the retry after the 1st, 2nd and 3rd failed attempt."""
MAX_ATTEMPTS: Final = len(RETRY_DELAYS) + 1
"""The first try and three retries; then the row is ``failed`` (``memctl rebuild --vectors`` retries it)."""
STUCK_AFTER: Final = 300.0
STAGE_1_SHARE: Final = 8
"""A stage 1 claim takes 1/8 of a batch: up to 3 long windows each, and a new event's head
should not wait behind many of them."""


class Claimed(NamedTuple):
    event_id: int
    stage: int
    kind: str
    title: str
    text: str
    claimed_at: float


class OutboxStats(NamedTuple):
    backlog: int
    unembedded: int
    failed: int
    oldest_pending_age: float
    vectors: int


def encode(vector: np.ndarray) -> bytes:
    """The stored form of a vector: float16, little-endian."""
    return np.asarray(vector, dtype="<f2").tobytes()


def decode(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f2").astype(np.float32)


def similarities(conn: sqlite3.Connection, ids: Sequence[int], query: np.ndarray) -> dict[int, float]:
    """Cosine similarity of ``query`` (a unit vector) and each event's closest stored window."""
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT event_id, vector FROM vectors WHERE event_id IN ({','.join('?' * len(ids))})", list(ids)
    ).fetchall()
    if not rows:
        return {}
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f2").reshape(len(rows), -1)
    if matrix.shape[1] != query.shape[0]:  # vectors of another model, until a rebuild re-embeds them
        return {}
    best: dict[int, float] = {}
    for (event_id, _), value in zip(rows, (matrix.astype(np.float32) @ query).tolist(), strict=True):
        best[event_id] = max(best.get(event_id, -1.0), round(value, 4))
    return best


def _transaction(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.execute("BEGIN IMMEDIATE")
    return conn


def _finish(conn: sqlite3.Connection, ok: bool) -> None:
    if ok:
        conn.execute("COMMIT")
    elif conn.in_transaction:
        conn.execute("ROLLBACK")


def claim(conn: sqlite3.Connection, limit: int, now: float) -> list[Claimed]:
    """Take up to ``limit`` due pending rows of one stage (0 first), newest event first, with their texts."""
    _transaction(conn)
    ok = False
    try:
        claimed: list[tuple[int, int]] = []
        for stage in (0, 1):
            claimed = conn.execute(
                "UPDATE vector_outbox SET state = 'processing', claimed_at = ?, attempts = attempts + 1"
                " WHERE event_id IN (SELECT event_id FROM vector_outbox"
                " WHERE state = 'pending' AND stage = ? AND due_at <= ? ORDER BY event_id DESC LIMIT ?)"
                " RETURNING event_id, stage",
                (now, stage, now, limit if stage == 0 else max(1, limit // STAGE_1_SHARE)),
            ).fetchall()
            if claimed:
                break
        stages = dict(claimed)
        rows = conn.execute(
            f"SELECT id, kind, title, text FROM events WHERE id IN ({','.join('?' * len(stages))})", list(stages)
        ).fetchall()
        ok = True
    finally:
        _finish(conn, ok)
    return [Claimed(event_id, stages[event_id], kind, title, text, now) for event_id, kind, title, text in rows]


def complete(
    conn: sqlite3.Connection, version: str, results: Sequence[tuple[Claimed, np.ndarray, bool]]
) -> tuple[list[tuple[int, np.ndarray]], list[int]]:
    """Store each claimed event's vectors for its stage and move its row on.

    A result is (the claim, its vectors, whether a stage 1 follows).  Stage 0 replaces
    every vector of the event (chunk 0 onwards), stage 1 adds chunks 1 onwards.  Returns
    the keys added (with their vectors) and the keys removed, for the caller to apply to
    the index.  Results for rows that changed meanwhile (re-queued, deleted) or for
    another embedding version are dropped: their rows will be claimed again.
    """
    added: list[tuple[int, np.ndarray]] = []
    removed: list[int] = []
    _transaction(conn)
    ok = False
    try:
        (current,) = conn.execute("SELECT coalesce(max(version), '') FROM embedding_version").fetchone()
        for claimed, vectors, more in results if current == version else ():
            row = conn.execute(
                "SELECT state, stage FROM vector_outbox WHERE event_id = ? AND claimed_at = ?",
                (claimed.event_id, claimed.claimed_at),
            ).fetchone()
            if row != ("processing", claimed.stage):
                continue
            first = 0 if claimed.stage == 0 else 1
            removed += [
                key
                for (key,) in conn.execute(
                    "DELETE FROM vectors WHERE event_id = ? AND chunk >= ? RETURNING id", (claimed.event_id, first)
                )
            ]
            for chunk, vector in enumerate(vectors, first):
                (key,) = conn.execute(
                    "INSERT INTO vectors (event_id, chunk, vector) VALUES (?, ?, ?) RETURNING id",
                    (claimed.event_id, chunk, encode(vector)),
                ).fetchone()
                added.append((key, vector))
            if claimed.stage == 0 and more:
                conn.execute(
                    "UPDATE vector_outbox SET state = 'pending', stage = 1, attempts = 0, due_at = 0,"
                    " claimed_at = NULL, error = NULL WHERE event_id = ?",
                    (claimed.event_id,),
                )
            else:
                conn.execute(
                    "UPDATE vector_outbox SET state = 'done', claimed_at = NULL, error = NULL WHERE event_id = ?",
                    (claimed.event_id,),
                )
        ok = True
    finally:
        _finish(conn, ok)
    return added, removed


def fail(conn: sqlite3.Connection, claimed: Sequence[Claimed], error: str, now: float) -> int:
    """Put rows back for a later retry, or mark them failed after ``MAX_ATTEMPTS``; return how many failed."""
    delays = " ".join(f"WHEN {n} THEN {delay}" for n, delay in enumerate(RETRY_DELAYS, 1))
    _transaction(conn)
    ok = False
    try:
        failed = 0
        for row in claimed:
            state = conn.execute(
                "UPDATE vector_outbox SET claimed_at = NULL, error = ?,"
                f" state = CASE WHEN attempts >= {MAX_ATTEMPTS} THEN 'failed' ELSE 'pending' END,"
                f" due_at = ? + CASE attempts {delays} ELSE 0 END"
                " WHERE event_id = ? AND state = 'processing' AND claimed_at = ? RETURNING state",
                (error[:500], now, row.event_id, row.claimed_at),
            ).fetchone()
            failed += state == ("failed",)
        ok = True
    finally:
        _finish(conn, ok)
    return failed


def recover(conn: sqlite3.Connection, claimed_before: float) -> int:
    """Return rows claimed before ``claimed_before`` (a crashed or hung worker's) to pending."""
    return conn.execute(
        "UPDATE vector_outbox SET state = 'pending', claimed_at = NULL WHERE state = 'processing' AND claimed_at < ?",
        (claimed_before,),
    ).rowcount


def requeue_all(conn: sqlite3.Connection) -> int:
    """Drop every stored vector and queue every event again (``memctl rebuild --vectors``)."""
    _transaction(conn)
    ok = False
    try:
        conn.execute("DELETE FROM vectors")
        conn.execute("INSERT OR IGNORE INTO vector_outbox (event_id) SELECT id FROM events")
        queued = conn.execute(
            "UPDATE vector_outbox SET state = 'pending', stage = 0, attempts = 0, due_at = 0, claimed_at = NULL,"
            " error = NULL"
        ).rowcount
        ok = True
    finally:
        _finish(conn, ok)
    return queued


def set_version(conn: sqlite3.Connection, version: str, same: Sequence[str] = ()) -> bool:
    """Record the embedding version; if it changed, drop every vector and queue every event
    again, unless the stored one is among ``same`` (another name of this very embedding: the
    vectors stay, only the name changes).  True when the version changed."""
    _transaction(conn)
    ok = False
    try:
        row = conn.execute("SELECT version FROM embedding_version").fetchone()
        changed = row is None or row[0] != version
        if changed:
            if row is not None and row[0] not in same:
                conn.execute("DELETE FROM vectors")
                conn.execute(
                    "UPDATE vector_outbox SET state = 'pending', stage = 0, attempts = 0, due_at = 0,"
                    " claimed_at = NULL, error = NULL"
                )
            conn.execute("INSERT OR REPLACE INTO embedding_version (id, version) VALUES (1, ?)", (version,))
        ok = True
    finally:
        _finish(conn, ok)
    return changed


def stats(conn: sqlite3.Connection, now: float) -> OutboxStats:
    backlog, oldest = conn.execute(
        "SELECT count(*), min(enqueued_at) FROM vector_outbox WHERE state IN ('pending', 'processing')"
    ).fetchone()
    (unembedded,) = conn.execute(
        "SELECT count(*) FROM vector_outbox WHERE state IN ('pending', 'processing') AND stage = 0"
    ).fetchone()
    (failed,) = conn.execute("SELECT count(*) FROM vector_outbox WHERE state = 'failed'").fetchone()
    (vectors,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
    return OutboxStats(backlog, unembedded, failed, round(max(0.0, now - oldest), 3) if oldest else 0.0, vectors)


def extent(conn: sqlite3.Connection) -> tuple[int, int]:
    """How many vectors are stored, and the highest key (0 when none)."""
    count, top = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM vectors").fetchone()
    return int(count), int(top)


def vectors_up_to(conn: sqlite3.Connection, key: int) -> int:
    """How many stored vectors have a key of ``key`` or below: the vector index file holds
    exactly those when it was saved after them and before any later one."""
    (count,) = conn.execute("SELECT count(*) FROM vectors WHERE id <= ?", (key,)).fetchone()
    return int(count)


def stored_vectors(
    conn: sqlite3.Connection, *, after: int = 0, batch: int = 10_000
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every stored vector with a key above ``after``, in key order, as (keys, vectors) batches."""
    while True:
        rows = conn.execute(
            "SELECT id, vector FROM vectors WHERE id > ? ORDER BY id LIMIT ?", (after, batch)
        ).fetchall()
        if not rows:
            return
        keys = np.fromiter((key for key, _ in rows), dtype=np.uint64, count=len(rows))
        yield keys, np.stack([decode(blob) for _, blob in rows])
        after = rows[-1][0]
