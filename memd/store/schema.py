"""The SQL schema, as an ordered list of migrations: the one place it is defined.

Each migration runs in one transaction together with its row in
``schema_migrations``, so a database is always at a version it records.  Never edit
a released migration: append a new one.

``events`` is the log of truth and is append-only (a trigger refuses updates); the
FTS table is derived from it by triggers and can be rebuilt with
``INSERT INTO events_fts(events_fts) VALUES ('rebuild')``.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Final, NamedTuple

__all__ = ["MIGRATIONS", "Migration", "applied", "migrate", "pending"]


class Migration(NamedTuple):
    version: int
    name: str
    sql: str


MIGRATIONS: Final = (
    Migration(
        1,
        "event log, sessions, projects, keyword index",
        """
        CREATE TABLE projects (
            id          INTEGER PRIMARY KEY,
            root        TEXT NOT NULL UNIQUE,
            name        TEXT NOT NULL,
            first_seen  REAL NOT NULL,
            last_seen   REAL NOT NULL
        );
        CREATE TABLE sessions (
            id          TEXT PRIMARY KEY,
            project_id  INTEGER REFERENCES projects(id),
            first_seen  REAL NOT NULL,
            last_seen   REAL NOT NULL,
            events      INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE events (
            id          INTEGER PRIMARY KEY,
            idem_key    TEXT NOT NULL UNIQUE,
            session_id  TEXT,
            project_id  INTEGER REFERENCES projects(id),
            kind        TEXT NOT NULL,
            tool        TEXT,
            title       TEXT NOT NULL,
            text        TEXT NOT NULL,
            payload     TEXT NOT NULL,
            importance  INTEGER NOT NULL,
            client_ts   REAL NOT NULL,
            received_at REAL NOT NULL,
            size        INTEGER NOT NULL,
            truncated   INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX events_by_session ON events(session_id, id);
        CREATE INDEX events_by_project ON events(project_id, id);
        CREATE TRIGGER events_append_only BEFORE UPDATE ON events
        BEGIN
            SELECT RAISE(ABORT, 'events are append-only');
        END;

        CREATE VIRTUAL TABLE events_fts USING fts5(
            title, text, content='events', content_rowid='id',
            tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER events_fts_insert AFTER INSERT ON events
        BEGIN
            INSERT INTO events_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
        END;
        CREATE TRIGGER events_fts_delete AFTER DELETE ON events
        BEGIN
            INSERT INTO events_fts(events_fts, rowid, title, text)
            VALUES ('delete', old.id, old.title, old.text);
        END;

        -- Payloads the daemon could not take: why and how big, never their content.
        CREATE TABLE rejections (
            id          INTEGER PRIMARY KEY,
            received_at REAL NOT NULL,
            event       TEXT NOT NULL,
            size        INTEGER NOT NULL,
            reason      TEXT NOT NULL
        );
        """,
    ),
    Migration(
        2,
        "normalized events: semantic kind, hook event, meta; session identity and summary",
        """
        -- Schema-1 rows stored the hook event name as their kind.
        DROP TRIGGER events_append_only;
        ALTER TABLE events ADD COLUMN event TEXT NOT NULL DEFAULT '';
        ALTER TABLE events ADD COLUMN meta TEXT NOT NULL DEFAULT '{}';
        UPDATE events SET event = kind;
        -- Derived events (the session summary) are replaced in place; the log itself is not.
        CREATE TRIGGER events_append_only BEFORE UPDATE ON events WHEN old.kind != 'session_summary'
        BEGIN
            SELECT RAISE(ABORT, 'events are append-only');
        END;
        CREATE TRIGGER events_fts_update AFTER UPDATE ON events
        BEGIN
            INSERT INTO events_fts(events_fts, rowid, title, text)
            VALUES ('delete', old.id, old.title, old.text);
            INSERT INTO events_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
        END;
        CREATE INDEX events_by_kind ON events(kind, id);

        ALTER TABLE sessions ADD COLUMN cwd TEXT;
        ALTER TABLE sessions ADD COLUMN source TEXT;
        ALTER TABLE sessions ADD COLUMN model TEXT;
        ALTER TABLE sessions ADD COLUMN end_reason TEXT;
        ALTER TABLE sessions ADD COLUMN summary TEXT;

        -- What privacy filtering removed, summed over all events: counts, never content.
        CREATE TABLE redaction_totals (
            name   TEXT PRIMARY KEY,
            total  INTEGER NOT NULL DEFAULT 0
        );
        """,
    ),
)


def applied(conn: sqlite3.Connection) -> set[int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def pending(conn: sqlite3.Connection) -> list[Migration]:
    done = applied(conn)
    return [m for m in MIGRATIONS if m.version not in done]


def migrate(conn: sqlite3.Connection) -> list[Migration]:
    """Apply every pending migration, each atomically; return those applied."""
    todo = pending(conn)
    for migration in todo:
        try:
            conn.executescript(
                f"BEGIN IMMEDIATE;\n{migration.sql}\n"
                "INSERT INTO schema_migrations (version, name, applied_at)"
                f" VALUES ({migration.version}, '{migration.name}', {time.time()});\nCOMMIT;"
            )
        except sqlite3.Error:
            if conn.in_transaction:
                conn.rollback()
            raise
    return todo
