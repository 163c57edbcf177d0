"""The PostgreSQL test server (tests/pg.py) does what the sync's tests will lean on: roles log in
over TCP with their passwords, a kill is a crash that keeps what was committed and loses what
was not, and row-level security keeps one role's rows from another."""

from __future__ import annotations

import psycopg
import pytest
from pg import PgDatabase


def test_roles_log_in_over_tcp_with_their_passwords(pg: PgDatabase) -> None:
    pg.create_role("alice", "alice's secret")
    pg.create_role("bob", "b@b:/?#%")  # a URL's own characters, quoted by dsn()
    for user, password in (("alice", "alice's secret"), ("bob", "b@b:/?#%")):
        with psycopg.connect(pg.dsn(user, password)) as conn:
            row = conn.execute("SELECT current_user, current_database(), host(inet_server_addr())").fetchone()
        assert row == (user, pg.name, "127.0.0.1")  # TCP: a socket connection has no server address
    stored = pg.sql("SELECT rolname, left(rolpassword, 14) FROM pg_authid WHERE rolname IN ('alice', 'bob')")
    assert sorted(stored) == [("alice", "SCRAM-SHA-256$"), ("bob", "SCRAM-SHA-256$")]


def test_a_wrong_password_is_refused(pg: PgDatabase) -> None:
    pg.create_role("alice", "right")
    with pytest.raises(psycopg.OperationalError, match='password authentication failed for user "alice"'):
        psycopg.connect(pg.dsn("alice", "wrong"))
    # The superuser has no password: over TCP it cannot log in at all.
    with pytest.raises(psycopg.OperationalError, match='password authentication failed for user "postgres"'):
        psycopg.connect(pg.dsn("postgres", "anything"))


def test_rows_committed_before_a_kill_are_there_after_the_restart(pg: PgDatabase) -> None:
    """Many commits, the last one just before the kill: with ``synchronous_commit = off`` the
    newest of them would still be in the server's memory, and lost."""
    pg.create_role("alice", "pw")
    pg.sql("CREATE TABLE notes (n int PRIMARY KEY); GRANT INSERT, SELECT ON notes TO alice")
    with psycopg.connect(pg.dsn("alice", "pw"), autocommit=True) as conn:
        for n in range(300):
            conn.execute("INSERT INTO notes VALUES (%s)", (n,))
        pg.server.kill()
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")  # the server is gone, and the client sees it
    pg.server.start()
    assert "automatic recovery in progress" in pg.server.log()  # a crash, not a shutdown
    assert pg.sql("SELECT count(*), max(n) FROM notes") == [(300, 299)]


def test_a_transaction_open_at_a_kill_is_gone_after_the_restart(pg: PgDatabase) -> None:
    pg.create_role("alice", "pw")
    pg.sql("CREATE TABLE notes (body text); GRANT INSERT, SELECT ON notes TO alice")
    with psycopg.connect(pg.dsn("alice", "pw")) as conn:
        conn.execute("INSERT INTO notes VALUES ('committed')")
        conn.commit()
        conn.execute("INSERT INTO notes VALUES ('open')")
        pg.server.kill()
        with pytest.raises(psycopg.OperationalError):
            conn.commit()
    pg.server.start()
    assert pg.sql("SELECT body FROM notes") == [("committed",)]


def test_stop_and_start_keep_the_data_and_the_port(pg: PgDatabase) -> None:
    pg.create_role("alice", "pw")
    dsn = pg.dsn("alice", "pw")
    pg.sql("CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept'); GRANT SELECT ON notes TO alice")
    pg.server.stop()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=2)
    pg.server.start()
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT body FROM notes").fetchall() == [("kept",)]


RLS = """
CREATE TABLE memories (
    id bigserial PRIMARY KEY,
    owner text NOT NULL DEFAULT current_user,
    body text NOT NULL
);
ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
CREATE POLICY own ON memories USING (owner = current_user) WITH CHECK (owner = current_user);
GRANT SELECT, INSERT, UPDATE, DELETE ON memories TO alice, bob;
GRANT USAGE ON SEQUENCE memories_id_seq TO alice, bob;
"""


def test_row_level_security_keeps_each_role_to_its_own_rows(pg: PgDatabase) -> None:
    """The sync's shape: the superuser makes the table; each role's rows are stamped with its
    name by default, and a policy lets it see, change and write only those."""
    for role in ("alice", "bob"):
        pg.create_role(role, f"{role}-pw")
    pg.sql(RLS)
    alice = psycopg.connect(pg.dsn("alice", "alice-pw"), autocommit=True)
    bob = psycopg.connect(pg.dsn("bob", "bob-pw"), autocommit=True)
    with alice, bob:
        alice.execute("INSERT INTO memories (body) VALUES ('alice 1')")
        bob.execute("INSERT INTO memories (body) VALUES ('bob 1'), ('bob 2')")

        assert alice.execute("SELECT owner, body FROM memories").fetchall() == [("alice", "alice 1")]
        assert alice.execute("UPDATE memories SET body = 'mine now' WHERE owner = 'bob'").rowcount == 0
        assert alice.execute("DELETE FROM memories WHERE owner = 'bob'").rowcount == 0
        assert alice.execute("UPDATE memories SET body = 'alice 1, edited'").rowcount == 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            alice.execute("INSERT INTO memories (owner, body) VALUES ('bob', 'forged')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            alice.execute("UPDATE memories SET owner = 'bob'")  # giving her row away is writing his

        assert sorted(bob.execute("SELECT body FROM memories").fetchall()) == [("bob 1",), ("bob 2",)]
    everything = pg.sql("SELECT owner, body FROM memories ORDER BY id")
    assert everything == [("alice", "alice 1, edited"), ("bob", "bob 1"), ("bob", "bob 2")]
