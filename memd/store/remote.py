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

**Searching the team's memory there.**  A team row carries its words (``words``, made by the
server from the title and text pushed beside the body) and, on a server with pgvector, the
vector of its text (``embedding``): ``memd.store.remote_search`` searches them, so a team's
memory larger than anyone keeps on a laptop is searched where it is.

This module and ``remote_search`` are the only ones that speak SQL to the server (memd's
rule: SQL lives in ``memd/store``); ``memd.services.sync`` and ``memd.services.team`` drive
them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, NamedTuple

if TYPE_CHECKING:
    import psycopg
    from psycopg import AsyncConnection

__all__ = [
    "DIM", "SCHEMA", "VECTORS", "WORDS_INDEX", "Cursor", "Incoming", "Outgoing", "Server", "Setup", "install",
    "listen", "pull", "push", "role", "server", "vector_text", "wait",
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
-- The teams are listed once per query (an InitPlan), not asked of each row: a search over a
-- million team rows reads a few thousand of them, each checked against that list.
CREATE POLICY log_read ON memd.log FOR SELECT USING (
    (scope = 'personal' AND owner = current_user)
    OR (scope = 'team' AND team = ANY (ARRAY(
        SELECT r.rolname FROM pg_roles r WHERE pg_has_role(current_user, r.oid, 'MEMBER'))))
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
-- Team search (memd.store.remote_search): a team row's words, title first.
ALTER TABLE memd.log ADD COLUMN IF NOT EXISTS words tsvector;
CREATE INDEX IF NOT EXISTS log_words ON memd.log USING gin (words) WHERE words IS NOT NULL;
"""
"""The server's schema, idempotent: ``memctl sync setup`` runs it (as a role that may create
a schema in the database; each user then needs only CONNECT, which PostgreSQL grants by default)."""

WORDS_INDEX: Final = "ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;"
"""What lets a team search use the words index (a superuser's statement; ``install`` runs it when
it can).  Row-level security lets the planner use an index only for operators marked leakproof
(that reveal nothing of the rows a policy hides, through errors or otherwise); ``@@`` is not
marked so by default, though it raises no error that depends on a row's words.  Without it a
team search reads every team row: fine for thousands, seconds at a million."""

DIM: Final = 384
"""The server's vectors are ``sentence-transformers/all-MiniLM-L6-v2``'s (memd's default model):
a daemon with a model of another size pushes and searches none (vectors of two models are not
comparable; memd's config says which one a machine uses)."""

VECTORS: Final = f"""
CREATE EXTENSION IF NOT EXISTS vector;
ALTER TABLE memd.log ADD COLUMN IF NOT EXISTS embedding vector({DIM});
CREATE INDEX IF NOT EXISTS log_embedding ON memd.log USING hnsw (embedding vector_cosine_ops)
    WHERE embedding IS NOT NULL;
"""
"""Vectors of team rows, where the server has pgvector: run after ``SCHEMA`` when the
extension is there or may be created by this role (a superuser, or after an admin's
``CREATE EXTENSION vector``)."""


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
    words: tuple[str, str] | None = None
    """A team put's (title, text), as filtered in ``body``: the server makes ``words`` of them."""
    vector: str | None = None
    """A team put's unit vector as pgvector's text (``[0.1,…]``), where the server keeps them."""


class Server(NamedTuple):
    """What the server's memd schema has (``memctl sync setup`` brings an older one up to date)."""

    words: bool
    """Team rows' words: team search works."""
    words_indexed: bool
    """``WORDS_INDEX`` was run: searching words reads the rows that match, not every row."""
    vectors: bool
    """pgvector and team rows' vectors: team search is hybrid."""


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
    words: str
    """``indexed`` (``WORDS_INDEX`` is in force), else what a superuser runs for it."""
    vectors: str
    """``ready`` (team search hybrid), else why not: the server has no pgvector, or this role
    may not create the extension."""
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
            "SELECT c.relowner = r.oid OR r.rolsuper FROM pg_class c, pg_roles r"
            " WHERE c.oid = to_regclass('memd.log') AND r.rolname = current_user"
        ).fetchone()
        ran = found is None or bool(found[0])  # no schema yet, or this role owns it (or is a superuser)
        if ran:
            conn.execute(SCHEMA)
        vectors = _vectors(conn, ran)
        words = _words_index(conn)
        row = conn.execute(
            "SELECT has_table_privilege('memd.log', 'SELECT'), has_table_privilege('memd.log', 'INSERT')"
        ).fetchone()
        missing = [team for team in teams if not conn.execute("SELECT memd.member_of(%s)", (team,)).fetchone()[0]]  # type: ignore[index]
    return Setup(ran, words, vectors, bool(row and row[0]), bool(row and row[1]), missing)


def _words_index(conn: psycopg.Connection) -> str:
    """Run ``WORDS_INDEX`` if this role is a superuser: ``indexed`` if it is in force, else what to do."""
    if conn.execute(_SUPERUSER).fetchone() == (True,):
        conn.execute(WORDS_INDEX)
    if conn.execute(_LEAKPROOF).fetchone() == (True,):
        return "indexed"
    return f"a superuser runs `{WORDS_INDEX}` in this database (team search then reads only the rows that match)"


def _vectors(conn: psycopg.Connection, owner: bool) -> str:
    """Add ``VECTORS`` where the server has pgvector and this role owns the schema: ``ready``
    if the table has its vectors now, else what is missing."""
    import psycopg

    if owner and conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
        try:
            with conn.transaction():
                conn.execute(VECTORS)
        except psycopg.errors.InsufficientPrivilege:
            return (
                "pgvector is installed but this role may not create it: a superuser runs"
                " `CREATE EXTENSION vector;` in this database, then `memctl sync setup` again"
            )
    if conn.execute(_HAS_VECTORS).fetchone():
        return "ready"
    if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
        return "the server has no pgvector: team search matches words only"
    if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return (
            "pgvector is installed but not in this database: a superuser runs `CREATE EXTENSION vector;`"
            " in it, then the schema's owner runs `memctl sync setup` again"
        )
    return "the schema's owner runs `memctl sync setup` again to add them"


_COLUMNS: Final = (
    "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('memd.log') AND NOT attisdropped"
    " AND attname IN ('words', 'embedding')"
)
_HAS_VECTORS: Final = _COLUMNS.replace("IN ('words', 'embedding')", "= 'embedding'")
_SUPERUSER: Final = "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
_LEAKPROOF: Final = (
    "SELECT proleakproof FROM pg_proc WHERE oid = 'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure"
)


def vector_text(values: Iterable[float]) -> str:
    """A vector as pgvector reads it from text (``[0.1,-0.2,…]``): no client-side adapter needed."""
    return "[" + ",".join(f"{x:.6g}" for x in values) + "]"


async def role(conn: AsyncConnection) -> str:
    """The role this connection is: a pulled row's ``owner`` is compared with it."""
    cur = await conn.execute("SELECT current_user::text")
    row = await cur.fetchone()
    return str(row[0]) if row else ""


async def server(conn: AsyncConnection) -> Server | None:
    """What the server's memd schema has; None if it has none (``memctl sync setup`` has not run)."""
    cur = await conn.execute("SELECT to_regclass('memd.log') IS NOT NULL")
    row = await cur.fetchone()
    if not (row and row[0]):
        return None
    columns = {name for (name,) in await (await conn.execute(_COLUMNS)).fetchall()}
    leakproof = await (await conn.execute(_LEAKPROOF)).fetchone()
    return Server(
        words="words" in columns, words_indexed=bool(leakproof and leakproof[0]), vectors="embedding" in columns
    )


async def push(conn: AsyncConnection, rows: Sequence[Outgoing], machine: str, server: Server) -> None:
    """Append ``rows`` in one transaction; rows already there (a retried push) are skipped.
    Team puts carry their words and vector where ``server`` keeps them.  A ``forget`` also
    deletes the ``put`` rows of its key that this role may delete: the memory leaves the
    server, not only the machines."""
    columns, values = "", ""
    if server.words:
        columns += ", words"
        values += ", setweight(to_tsvector('english', %s), 'A') || to_tsvector('english', %s)"
    if server.vectors:
        columns += ", embedding"
        values += ", %s::vector"

    def params(r: Outgoing) -> tuple[object, ...]:
        title, text = r.words or (None, None)
        return (
            r.scope, r.team, r.op, r.event_key, r.project_key, machine, r.body,
            *((title, text) if server.words else ()), *((r.vector,) if server.vectors else ()),
        )  # fmt: skip

    async with conn.transaction(), conn.cursor() as cur:
        await cur.executemany(
            f"INSERT INTO memd.log (scope, team, op, event_key, project_key, machine, body{columns})"
            f" VALUES (%s, %s, %s, %s, %s, %s, %s{values}) ON CONFLICT DO NOTHING",
            [params(r) for r in rows],
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


async def pull(conn: AsyncConnection, after: Cursor, limit: int, *, teams: bool = True) -> list[Incoming]:
    """The rows after ``after`` this role may read, in log order, of transactions that can no
    longer change (module doc); at most ``limit``; ``teams`` false: of the team rows, the
    forgets alone (the memories stay on the server, searched there; a forget still reaches one
    pulled before).  This machine's own rows come whole too:
    applying one this store has is a no-op, and one it lacks (a copied data dir pushed it under
    the same id) is applied, so the cursor never passes a row that was not applied."""
    cur = await conn.execute(
        "SELECT txid::text::bigint, seq, owner, scope, team, op, event_key, project_key, machine,"
        " body, extract(epoch FROM pushed_at)::float8"
        " FROM memd.log WHERE (txid, seq) > (%s::text::xid8, %s) AND txid < pg_snapshot_xmin(pg_current_snapshot())"
        " AND (%s OR scope = 'personal' OR op = 'forget') ORDER BY txid, seq LIMIT %s",
        (str(after.txid), after.seq, teams, limit),
    )
    return [
        Incoming(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], None if r[9] is None else bytes(r[9]), r[10])
        for r in await cur.fetchall()
    ]
