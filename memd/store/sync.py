"""This machine's side of sync (issue 20): what to push, where it is in the shared log, and
applying what other machines pushed.  The server's side is ``memd.store.remote``.

**What is pushed.**  Events captured here: a trigger queues each in ``sync_outbox`` in
the transaction that stores it (once sync was set up; ``begin`` queues what was there
before), and a push takes them off once the server committed them.  Not pushed: a
session's summary and snapshot (each machine derives its own, and they change in place)
and events pulled from elsewhere (``sync_remote``).  Content was filtered at capture; the
sync service filters it again with today's rules before it leaves.

**Forgets travel as tombstones.**  A forget here records the idempotency keys of the
events it deleted in ``sync_tombstones`` (only once sync was set up: a store that never
synced keeps no trace of what it forgot); the service pushes them, and a tombstone pulled
from the server forgets the memory here as a local forget does.

**Applying** a pulled event stores it as ``memctl import --from-export`` does
(``memd.store.restore``: same idempotency key, its citation id when free), in the local
project of its project key, and lists it in ``sync_remote`` so it is never pushed back.
Every step is one transaction on the writer: a crash between pulling and applying pulls
again, and what was applied is not applied twice (the idempotency key is unique).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final, NamedTuple

import msgspec
import structlog

from ..capture.events import DERIVED_KINDS
from ..protocol import ExportedEvent
from .export import exported_events
from .projects import remote_project
from .reclaim import immediate
from .remote import Cursor, Incoming
from .restore import restore

log = structlog.get_logger("memd.sync")

__all__ = [
    "NOT_YET",
    "Outbound",
    "State",
    "Tombstone",
    "applied",
    "begin",
    "failed",
    "forgettable",
    "forgotten_here",
    "local_ids",
    "outbound",
    "projects_for",
    "pushed",
    "share",
    "state",
    "touched",
]


class State(NamedTuple):
    server: str
    cursor: Cursor
    last_push: float | None
    last_pull: float | None
    last_error: str | None
    last_error_at: float | None
    pending: int
    """Local events not pushed yet."""
    tombstones: int


NOT_YET: Final = State("", Cursor(0, 0), None, None, None, None, 0, 0)
"""Where sync stands before its first start on this store."""


class Tombstone(NamedTuple):
    event_key: str
    project_key: str
    teams: tuple[str, ...]
    """The teams it was shared with by hand (``memctl share``)."""


class Outbound(NamedTuple):
    events: list[tuple[str, ExportedEvent]]
    """(project key, event) to push, oldest first."""
    ids: list[int]
    """The outbox rows these are (``pushed`` takes them off)."""
    tombstones: list[Tombstone]
    shares: list[tuple[str, str, ExportedEvent]]
    """(team, project key, event) promoted by hand and not pushed yet."""
    shared: list[tuple[int, str]]
    """The share rows these are: (event id, team)."""


def begin(conn: sqlite3.Connection, server: str, teams: bool = True) -> None:
    """Start syncing with ``server``.  The first time (or with another server than last
    time: it starts over, both ways) every event captured here is queued to be pushed.
    ``teams``: teammates' memories are pulled; when they were not (``[sync] pull_teams =
    false``) and are now, the pull starts over, so that the cursor never stays past a row that
    was not applied (applying again what is here already is a no-op)."""
    with immediate(conn):
        row = conn.execute("SELECT server FROM sync_state WHERE id = 1").fetchone()
        skipped = conn.execute("DELETE FROM settings WHERE key = 'sync_teams_skipped' RETURNING 1").fetchone()
        if not teams:
            conn.execute("INSERT INTO settings (key, value) VALUES ('sync_teams_skipped', '1')")
        elif skipped and row is not None:
            conn.execute("UPDATE sync_state SET pulled_txid = 0, pulled_seq = 0 WHERE id = 1")
        if row is not None and row[0] == server:
            return
        conn.execute(
            "INSERT INTO sync_state (id, server) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET"
            " server = excluded.server, pulled_txid = 0, pulled_seq = 0",
            (server,),
        )
        conn.execute(
            f"INSERT OR IGNORE INTO sync_outbox (event_id) SELECT id FROM events e WHERE kind NOT IN {DERIVED_KINDS!r}"
            " AND NOT EXISTS (SELECT 1 FROM sync_remote r WHERE r.event_id = e.id)"
        )


def state(conn: sqlite3.Connection) -> State | None:
    row = conn.execute(
        "SELECT server, pulled_txid, pulled_seq, last_push, last_pull, last_error, last_error_at"
        " FROM sync_state WHERE id = 1"
    ).fetchone()
    if row is None:
        return None
    (pending,) = conn.execute("SELECT count(*) FROM sync_outbox").fetchone()
    (tombstones,) = conn.execute("SELECT count(*) FROM sync_tombstones").fetchone()
    return State(row[0], Cursor(row[1], row[2]), row[3], row[4], row[5], row[6], pending, tombstones)


def outbound(conn: sqlite3.Connection, limit: int) -> Outbound:
    """The next ``limit`` local events to push, and the tombstones waiting."""
    ids = [r[0] for r in conn.execute("SELECT event_id FROM sync_outbox ORDER BY event_id LIMIT ?", (limit,))]
    keys = _project_keys(conn, ids)
    events = [(keys.get(e.idem_key, ""), e) for e in exported_events(conn, event_ids=ids)] if ids else []
    waiting = "SELECT event_key, project_key, teams FROM sync_tombstones ORDER BY forgotten_at LIMIT ?"
    tombstones = [Tombstone(r[0], r[1], tuple(msgspec.json.decode(r[2]))) for r in conn.execute(waiting, (limit,))]
    shared = [
        (r[0], r[1]) for r in conn.execute("SELECT event_id, team FROM sync_shares WHERE NOT pushed LIMIT ?", (limit,))
    ]
    teams: dict[int, list[str]] = {}
    for event_id, team in shared:
        teams.setdefault(event_id, []).append(team)
    keyed = _project_keys(conn, list(teams))
    shares = [
        (team, keyed.get(e.idem_key, ""), e)
        for event_id, e in zip(sorted(teams), exported_events(conn, event_ids=sorted(teams)), strict=True)
        for team in teams[event_id]
    ]
    return Outbound(events, ids, tombstones, shares, shared)


def _project_keys(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[str, str]:
    """idempotency key -> project key of the events ``ids``."""
    return dict(
        conn.execute(
            "SELECT e.idem_key, coalesce(p.key, '') FROM events e LEFT JOIN projects p ON p.id = e.project_id"
            " WHERE e.id IN (SELECT value FROM json_each(?))",
            (msgspec.json.encode(list(ids)).decode(),),
        ).fetchall()
    )


def share(conn: sqlite3.Connection, event_ids: Sequence[int], team: str) -> int:
    """Promote ``event_ids`` to ``team``; how many were not shared with it before."""
    with immediate(conn):
        before = conn.total_changes
        conn.executemany(
            "INSERT OR IGNORE INTO sync_shares (event_id, team) VALUES (?, ?)", [(i, team) for i in event_ids]
        )
        return conn.total_changes - before


def pushed(conn: sqlite3.Connection, out: Outbound, now: float) -> None:
    """The server committed what ``out`` held: off the queues."""
    with immediate(conn):
        conn.executemany("DELETE FROM sync_outbox WHERE event_id = ?", [(i,) for i in out.ids])
        conn.executemany("DELETE FROM sync_tombstones WHERE event_key = ?", [(t.event_key,) for t in out.tombstones])
        conn.executemany("UPDATE sync_shares SET pushed = 1 WHERE event_id = ? AND team = ?", out.shared)
        conn.execute("UPDATE sync_state SET last_push = ?, last_error = NULL WHERE id = 1", (now,))


def failed(conn: sqlite3.Connection, error: str, now: float) -> None:
    """Remember what went wrong last (``memctl sync status``): a class of problem, never content."""
    with immediate(conn):
        conn.execute("UPDATE sync_state SET last_error = ?, last_error_at = ? WHERE id = 1", (error[:500], now))


def applied(conn: sqlite3.Connection, rows: Sequence[Incoming], projects: dict[str, int], now: float) -> dict[str, str]:
    """Store the ``put`` rows of ``rows`` (each in the local project ``projects`` maps its
    project key to) and move the cursor past all of them, in one transaction; the ones
    stored, event key -> the machine that pushed it.  A row this store has already (this
    machine's own, mostly) is passed; the caller hands forgets to ``forgotten_here`` instead,
    after forgetting."""
    decoder = msgspec.json.Decoder(ExportedEvent)
    stored: dict[str, str] = {}
    with immediate(conn):
        for row in rows:
            if row.op != "put" or row.body is None:
                continue
            try:
                event = decoder.decode(row.body)
            except msgspec.DecodeError:  # not memd's (another client wrote the table): passed, never applied
                log.warning("sync_row_refused", seq=row.seq, machine=row.machine, size=len(row.body))
                continue
            if restore(conn, [event], {}, now, project_id=projects.get(row.project_key))[0]:
                stored[row.event_key] = row.machine  # listed as pulled, and off the outbox its trigger put it in
                (event_id,) = conn.execute("SELECT id FROM events WHERE idem_key = ?", (event.idem_key,)).fetchone()
                conn.execute(
                    "INSERT OR IGNORE INTO sync_remote (event_id, machine, team) VALUES (?, ?, ?)",
                    (event_id, row.machine, row.team),
                )
                conn.execute("DELETE FROM sync_outbox WHERE event_id = ?", (event_id,))
        _passed(conn, rows, now)
    return stored


def forgotten_here(conn: sqlite3.Connection, rows: Sequence[Incoming], now: float) -> None:
    """Pulled forgets were applied (by the forget path): move the cursor past them, and drop
    the tombstones that forgetting recorded here, which came from the server."""
    with immediate(conn):
        conn.executemany("DELETE FROM sync_tombstones WHERE event_key = ?", [(r.event_key,) for r in rows])
        _passed(conn, rows, now)


def touched(conn: sqlite3.Connection, now: float) -> None:
    """A pull found nothing new: the server was reached."""
    with immediate(conn):
        conn.execute("UPDATE sync_state SET last_pull = ?, last_error = NULL WHERE id = 1", (now,))


def _passed(conn: sqlite3.Connection, rows: Sequence[Incoming], now: float) -> None:
    if rows:
        conn.execute(
            "UPDATE sync_state SET pulled_txid = ?, pulled_seq = ?, last_pull = ?, last_error = NULL WHERE id = 1",
            (rows[-1].txid, rows[-1].seq, now),
        )


def projects_for(conn: sqlite3.Connection, roots: dict[str, str], now: float) -> dict[str, int]:
    """The local project of each project key (``roots``: key -> the root it has on the machine
    that pushed), created for a repository this machine has not seen yet (``memd.store.projects``)."""
    with immediate(conn):
        return {key: remote_project(conn, key, root, now) for key, root in roots.items() if key and root}


def forgettable(conn: sqlite3.Connection, rows: Sequence[Incoming], role: str) -> list[int]:
    """Which local events pulled forgets may erase; the forgets refused are logged.  A forget by this
    role (one of its machines) erases its key here; a team forget by a teammate erases only a
    memory this machine has through that team (someone's share, which any member may revoke);
    any other (a teammate naming this person's own memory) is refused."""
    ids: list[int] = []
    refused: list[int] = []
    for row in rows:
        here = local_ids(conn, [row.event_key])
        if not here or row.owner == role:
            ids += here
            continue
        through_team = [
            r[0]
            for r in conn.execute(
                "SELECT e.id FROM events e JOIN sync_remote r ON r.event_id = e.id WHERE e.idem_key = ? AND r.team = ?",
                (row.event_key, row.team),
            )
        ] if row.scope == "team" else []  # fmt: skip
        ids += through_team
        if len(through_team) < len(here):
            refused.append(row.seq)
    if refused:  # ids only: the rows' seqs
        log.warning("sync_forget_refused", rows=len(refused), seqs=refused[:20])
    return ids


def local_ids(conn: sqlite3.Connection, keys: Sequence[str]) -> list[int]:
    """The local events of these idempotency keys (a pulled forget's)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM events WHERE idem_key IN (SELECT value FROM json_each(?))",
            (msgspec.json.encode(list(keys)).decode(),),
        )
    ]
