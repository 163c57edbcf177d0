"""The shared log on a PostgreSQL server: what every machine pushes and pulls (issue 20).

One table, ``memd.log``, append-only but for forgets: a row is an event a machine pushed
(``put``, its exported form in ``body``) or a memory forgotten (``forget``, a tombstone,
no content).  A row belongs to the PostgreSQL role that pushed it (``owner``) and to a
**scope**: ``personal`` rows are read by their owner alone (all of one person's machines
log in as that person), ``team`` rows by the members of the row's ``team`` role.
Row-level security, not memd, enforces it: a teammate's connection cannot read another
person's personal rows whatever memd does (``tests/test_sync.py`` proves it with two roles).

**Pulling in order.**  ``seq`` values are handed out when a row is inserted, not when its
transaction commits, so a reader that only remembered the highest ``seq`` it saw could
skip a row committed later with a lower one.  Each row records its transaction id
(``txid``), and a pull reads only rows of transactions older than every transaction still
running (``pg_snapshot_xmin``), in (txid, seq) order: what it has passed can no longer
change.  A push is idempotent (one row per owner, scope, team, operation and event key),
so a push retried after a lost reply stores nothing twice.

This module is the only one that speaks SQL to the server (memd's rule: SQL lives in
``memd/store``); ``memd.services.sync`` drives it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, NamedTuple

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "SCHEMA", "Cursor", "Incoming", "Outgoing", "Setup", "install", "listen", "present", "pull", "push", "role", "wait",
]  # fmt: skip

SCHEMA: Final = """
CREATE SCHEMA IF NOT EXISTS memd;
CREATE TABLE IF NOT EXISTS memd.log (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    txid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
    owner       name NOT NULL DEFAULT current_user,
    scope       text NOT NULL CHECK (scope IN ('personal', 'team')),
    team        name NOT NULL DEFAULT '',
    op          text NOT NULL CHECK (op IN ('put', 'forget')),
    event_key   text NOT NULL,
    project_key text NOT NULL,
    machine     text NOT NULL,
    body        bytea,            -- the event as ExportedEvent JSON (bytes: jsonb refuses NUL escapes)
    pushed_at   timestamptz NOT NULL DEFAULT now(),
    CHECK ((scope = 'team') = (team <> '')),
    CHECK ((op = 'put') = (body IS NOT NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS log_once ON memd.log (owner, scope, team, op, event_key);
CREATE INDEX IF NOT EXISTS log_order ON memd.log (txid, seq);
CREATE INDEX IF NOT EXISTS log_key ON memd.log (event_key);

-- Whether the current role is a member of ``team`` (false for a role that does not exist,
-- where pg_has_role would raise and break every read).
CREATE OR REPLACE FUNCTION memd.member_of(team name) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = team AND pg_has_role(current_user, r.oid, 'MEMBER'))
$$;

ALTER TABLE memd.log ENABLE ROW LEVEL SECURITY;
ALTER TABLE memd.log FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS log_read ON memd.log;
CREATE POLICY log_read ON memd.log FOR SELECT USING (
    (scope = 'personal' AND owner = current_user) OR (scope = 'team' AND memd.member_of(team))
);
DROP POLICY IF EXISTS log_write ON memd.log;
CREATE POLICY log_write ON memd.log FOR INSERT WITH CHECK (
    owner = current_user AND (scope = 'personal' OR memd.member_of(team))
);
DROP POLICY IF EXISTS log_erase ON memd.log;
CREATE POLICY log_erase ON memd.log FOR DELETE USING (
    (scope = 'personal' AND owner = current_user) OR (scope = 'team' AND memd.member_of(team))
);
-- A team forget may only name a memory that was shared to that team (a put of its key in the
-- team's rows, or a forget of it already there: a retry); any other is dropped, not stored, so
-- no teammate can make another's machines forget what was never shared with them.  Run with the
-- inserting role's rights: it reads the team's rows as a member.
CREATE OR REPLACE FUNCTION memd.refuse_forged_forget() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.op = 'forget' AND NEW.scope = 'team' AND NOT EXISTS (
        SELECT 1 FROM memd.log l WHERE l.scope = 'team' AND l.team = NEW.team AND l.event_key = NEW.event_key
    ) THEN
        RAISE WARNING 'memd: a team forget of a memory never shared to that team was refused';
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS log_forget_shared ON memd.log;
CREATE TRIGGER log_forget_shared BEFORE INSERT ON memd.log FOR EACH ROW EXECUTE FUNCTION memd.refuse_forged_forget();
GRANT USAGE ON SCHEMA memd TO PUBLIC;
GRANT SELECT, INSERT, DELETE ON memd.log TO PUBLIC;
GRANT EXECUTE ON FUNCTION memd.member_of(name) TO PUBLIC;
GRANT EXECUTE ON FUNCTION memd.refuse_forged_forget() TO PUBLIC;
"""
"""The server's schema, idempotent: ``memctl sync setup`` runs it (as a role that may create
a schema in the database; each user then needs only CONNECT, which PostgreSQL grants by default)."""


class Cursor(NamedTuple):
    """Where a machine is in the log: the last (txid, seq) it applied."""

    txid: int
    seq: int


class Outgoing(NamedTuple):
    scope: str
    team: str
    op: str
    event_key: str
    project_key: str
    body: bytes | None
    """The event as ``ExportedEvent`` JSON (``put``); None for a ``forget``."""


class Incoming(NamedTuple):
    txid: int
    seq: int
    owner: str
    scope: str
    team: str
    op: str
    event_key: str
    project_key: str
    machine: str
    body: bytes | None
    pushed_at: float


class Setup(NamedTuple):
    """What ``install`` did and found, for ``memctl sync setup`` to say."""

    ran_schema: bool
    """This role created memd's schema or brought it up to date (it owns it, or there was none)."""
    may_read: bool
    may_write: bool
    not_member_of: list[str]
    """The teams asked about that this role is not a member of (the admin grants them)."""


def install(url: str, teams: Sequence[str] = ()) -> Setup:
    """Set up memd on the server at ``url`` for this role (``memctl sync setup``): create or
    update the schema when there is none or this role owns it; otherwise join the one an admin
    made (a teammate needs only CONNECT: the schema grants the rest to PUBLIC).  Then check
    what the role may do, and which of ``teams`` it is a member of."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        found = conn.execute(
            "SELECT c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
            " FROM pg_class c WHERE c.oid = to_regclass('memd.log')"
        ).fetchone()
        ran = found is None or bool(found[0])
        if ran:
            conn.execute(SCHEMA)
        row = conn.execute(
            "SELECT has_table_privilege('memd.log', 'SELECT'), has_table_privilege('memd.log', 'INSERT')"
        ).fetchone()
        missing = [team for team in teams if not conn.execute("SELECT memd.member_of(%s)", (team,)).fetchone()[0]]  # type: ignore[index]
    return Setup(ran, bool(row and row[0]), bool(row and row[1]), missing)


async def role(conn: AsyncConnection) -> str:
    """The role this connection is: a pulled row's ``owner`` is compared with it."""
    cur = await conn.execute("SELECT current_user::text")
    row = await cur.fetchone()
    return str(row[0]) if row else ""


async def present(conn: AsyncConnection) -> bool:
    """Whether the server has memd's table (``memctl sync setup`` has run)."""
    cur = await conn.execute("SELECT to_regclass('memd.log') IS NOT NULL")
    row = await cur.fetchone()
    return bool(row and row[0])


async def push(conn: AsyncConnection, rows: Sequence[Outgoing], machine: str) -> None:
    """Append ``rows`` in one transaction; rows already there (a retried push) are skipped.
    A ``forget`` also deletes the ``put`` rows of its key that this role may delete: the
    memory leaves the server, not only the machines."""
    async with conn.transaction(), conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO memd.log (scope, team, op, event_key, project_key, machine, body)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            [(r.scope, r.team, r.op, r.event_key, r.project_key, machine, r.body) for r in rows],
        )
        forgotten = [r.event_key for r in rows if r.op == "forget"]
        if forgotten:
            await cur.execute("DELETE FROM memd.log WHERE op = 'put' AND event_key = ANY(%s)", (forgotten,))
        await cur.execute("NOTIFY memd_log")  # at commit: the other machines pull now (no content)


async def listen(conn: AsyncConnection) -> None:
    """Be told when another machine pushed (``wait``)."""
    await conn.execute("LISTEN memd_log")


async def wait(conn: AsyncConnection, seconds: float) -> bool:
    """Whether a push was announced within ``seconds``."""
    async for _ in conn.notifies(timeout=seconds, stop_after=1):
        return True
    return False


async def pull(conn: AsyncConnection, after: Cursor, limit: int) -> list[Incoming]:
    """The rows after ``after`` this role may read, in log order, of transactions that can no
    longer change (module doc); at most ``limit``.  This machine's own rows come whole too:
    applying one this store has is a no-op, and one it lacks (a copied data dir pushed it under
    the same id) is applied, so the cursor never passes a row that was not applied."""
    cur = await conn.execute(
        "SELECT txid::text::bigint, seq, owner, scope, team, op, event_key, project_key, machine,"
        " body, extract(epoch FROM pushed_at)::float8"
        " FROM memd.log WHERE (txid, seq) > (%s::text::xid8, %s) AND txid < pg_snapshot_xmin(pg_current_snapshot())"
        " ORDER BY txid, seq LIMIT %s",
        (str(after.txid), after.seq, limit),
    )
    return [
        Incoming(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], None if r[9] is None else bytes(r[9]), r[10])
        for r in await cur.fetchall()
    ]
