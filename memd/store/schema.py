"""The SQL schema, as an ordered list of migrations: the one place it is defined.

Each migration runs in one transaction together with its row in
``schema_migrations``, so a database is always at a version it records.  Never edit
a released migration: append a new one.

``events`` is the log of truth and is append-only (a trigger refuses updates).
Everything else about an event is derived from it by triggers in the same
transaction: the keyword index ``events_fts``, the trigram index ``events_cjk``, and
the ``vector_outbox`` row that gets the event its vectors.  ``memctl rebuild``
recreates the derived tables from the log.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Final, NamedTuple

from ..capture.project import project_key
from ..cite import legacy_citation_id
from .citations import assign_all as assign_all_citations
from .tasks import rebuild as rebuild_tasks_table

__all__ = [
    "APPEND_ONLY",
    "CJK_GLOB",
    "MIGRATIONS",
    "Migration",
    "applied",
    "context_row",
    "migrate",
    "pending",
    "rebuild_keyword_indexes",
]

TOKENIZER: Final = "porter unicode61 remove_diacritics 2"
"""The keyword index's tokenizer: English stems over Unicode words."""
CJK_GLOB: Final = "*[ㄱ-ㆎ가-힣ぁ-ヿ一-鿿]*"
"""GLOB pattern of text with Hangul (jamo, syllables), kana or CJK ideographs, for rows
stored before the ``cjk`` column; ``memd.query.has_cjk`` decides for new ones."""


APPEND_ONLY: Final = """
CREATE TRIGGER events_append_only BEFORE UPDATE ON events
WHEN old.kind NOT IN ('session_summary', 'snapshot')
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END"""
"""The guard every migration since 5 leaves in place (a test holds it equal to what they
create): only derived events are replaced in place.  Two writes drop it inside their own
transaction and put it back before committing: migration 9's rekeying and a scan's
redaction of secrets stored before today's rules (``memd.store.redact``)."""


_LEGACY_ATTEMPTS: Final = 10
"""Salts tried for an event's legacy citation id (schema 4 to 14) before giving up."""


def _backfill_citations() -> str:
    """SQL giving every stored event its legacy citation id (migration 4): one round per
    salt, each round taking the events a collision left without one."""
    rounds = [
        "INSERT INTO citations (cite, event_id)"
        f" SELECT memd_citation_id(id, {salt}), id FROM events"
        " WHERE NOT EXISTS (SELECT 1 FROM citations c WHERE c.event_id = events.id)"
        " ORDER BY id ON CONFLICT DO NOTHING;"
        for salt in range(_LEGACY_ATTEMPTS)
    ]
    return "\n".join(rounds)


def _backfill_project_keys(conn: sqlite3.Connection) -> None:
    """Every project's key, from its root as this machine has it now (a root gone since gets
    ``path:<root>``).  Two projects of one repository (two checkouts seen before keys
    existed): the older keeps the key and the other has none, a project of its own until
    ``memctl project link`` merges them."""
    for project_id, root in conn.execute("SELECT id, root FROM projects ORDER BY id").fetchall():
        conn.execute("UPDATE OR IGNORE projects SET key = ? WHERE id = ?", (project_key(root), project_id))


_OWN = (
    "CASE WHEN e.text = '' OR e.kind IN ('tool', 'tool_use', 'task_state') THEN e.title ELSE substr(e.text, 1, 600) END"
)


def context_row(link: str) -> str:
    """SQL for the ``events_ctx`` row (rowid, own, around) of the ``event_links`` row ``link``:
    the first 600 characters of the event and of each neighbour (a neighbour's gist is in its
    opening; a long one would drown the event); of a tool call, its title (``Bash: pytest -x``:
    its output is in the keyword index already, and the prompt that led to it is its
    context).  The index keeps no copy of these texts
    (``content=''``), so removing a row means giving them again exactly: the triggers do it
    *before* an event or a link changes, while the texts it was made of are still there."""
    return (
        f"{link}.event_id, (SELECT {_OWN} FROM events e WHERE e.id = {link}.event_id),"
        f" coalesce((SELECT {_OWN} FROM events e WHERE e.id = {link}.before_id), '') || char(10) ||"
        f" coalesce((SELECT {_OWN} FROM events e WHERE e.id = {link}.after_id), '')"
    )


class Migration(NamedTuple):
    version: int
    name: str
    sql: str
    then: Callable[[sqlite3.Connection], object] | None = None
    """Python run after ``sql`` in the same transaction: derived data only code can compute."""


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
    Migration(
        3,
        "retrieval: stemmed keyword index, trigram index of CJK rows, vector outbox and stored vectors",
        f"""
        -- English stemming (porter over unicode61): 'tests' finds 'testing', 'injected' finds 'inject'.
        DROP TRIGGER events_fts_insert;
        DROP TRIGGER events_fts_delete;
        DROP TRIGGER events_fts_update;
        DROP TABLE events_fts;
        CREATE VIRTUAL TABLE events_fts USING fts5(
            title, text, content='events', content_rowid='id', tokenize='{TOKENIZER}'
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
        CREATE TRIGGER events_fts_update AFTER UPDATE ON events
        BEGIN
            INSERT INTO events_fts(events_fts, rowid, title, text)
            VALUES ('delete', old.id, old.title, old.text);
            INSERT INTO events_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
        END;
        INSERT INTO events_fts(events_fts) VALUES ('rebuild');
        -- Document frequencies, for weighting query terms and capping common ones.
        CREATE VIRTUAL TABLE events_fts_terms USING fts5vocab(events_fts, 'row');

        -- Trigrams find substrings: Korean words carry particles ('검색을') that a word index
        -- never splits off.  Trigrams cost ~4x the word index, so only rows with CJK text get
        -- them: `cjk`, set by the writer (memd.query.has_cjk; a GLOB per insert cost
        -- ~0.2 ms on 4 KB).  Here it is set once for the rows already stored.
        ALTER TABLE events ADD COLUMN cjk INTEGER NOT NULL DEFAULT 0;
        DROP TRIGGER events_append_only;
        UPDATE events SET cjk = 1 WHERE title || ' ' || text GLOB '{CJK_GLOB}';
        CREATE TRIGGER events_append_only BEFORE UPDATE ON events WHEN old.kind != 'session_summary'
        BEGIN
            SELECT RAISE(ABORT, 'events are append-only');
        END;
        CREATE VIRTUAL TABLE events_cjk USING fts5(title, text, tokenize='trigram');
        CREATE TRIGGER events_cjk_insert AFTER INSERT ON events WHEN new.cjk
        BEGIN
            INSERT INTO events_cjk(rowid, title, text) VALUES (new.id, new.title, new.text);
        END;
        CREATE TRIGGER events_cjk_delete AFTER DELETE ON events
        BEGIN
            DELETE FROM events_cjk WHERE rowid = old.id;
        END;
        CREATE TRIGGER events_cjk_update AFTER UPDATE OF title, text ON events
        BEGIN
            DELETE FROM events_cjk WHERE rowid = old.id;
            INSERT INTO events_cjk(rowid, title, text) SELECT new.id, new.title, new.text WHERE new.cjk;
        END;
        INSERT INTO events_cjk(rowid, title, text) SELECT id, title, text FROM events WHERE cjk;

        -- Events waiting for their vectors, enqueued in the transaction that stores the event.
        -- Stage 0 is the event's head vector, stage 1 the windows of a longer text.
        CREATE TABLE vector_outbox (
            event_id    INTEGER PRIMARY KEY,
            state       TEXT NOT NULL DEFAULT 'pending'
                        CHECK (state IN ('pending', 'processing', 'done', 'failed')),
            stage       INTEGER NOT NULL DEFAULT 0,
            attempts    INTEGER NOT NULL DEFAULT 0,
            due_at      REAL NOT NULL DEFAULT 0,
            claimed_at  REAL,
            enqueued_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0),
            error       TEXT
        );
        CREATE INDEX vector_outbox_by_state ON vector_outbox(state, stage, event_id);
        CREATE TRIGGER events_outbox_insert AFTER INSERT ON events
        BEGIN
            INSERT INTO vector_outbox(event_id) VALUES (new.id);
        END;
        CREATE TRIGGER events_outbox_update AFTER UPDATE OF title, text ON events
        BEGIN
            INSERT INTO vector_outbox(event_id) VALUES (new.id)
            ON CONFLICT(event_id) DO UPDATE SET state = 'pending', stage = 0, attempts = 0, due_at = 0,
                claimed_at = NULL, enqueued_at = excluded.enqueued_at, error = NULL;
        END;
        INSERT INTO vector_outbox(event_id) SELECT id FROM events;

        -- Vectors (float16, unit length), one per window of an event's text; `id` is the key
        -- in the usearch index, which is rebuilt from here without re-embedding.  AUTOINCREMENT:
        -- a key is never reused, so "same count, same highest key" proves the index current.
        CREATE TABLE vectors (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            event_id    INTEGER NOT NULL,
            chunk       INTEGER NOT NULL,
            vector      BLOB NOT NULL,
            UNIQUE (event_id, chunk)
        );
        CREATE TRIGGER events_vectors_delete AFTER DELETE ON events
        BEGIN
            DELETE FROM vector_outbox WHERE event_id = old.id;
            DELETE FROM vectors WHERE event_id = old.id;
        END;
        -- What the stored vectors are: a different model or dimension re-embeds everything.
        CREATE TABLE embedding_version (
            id          INTEGER PRIMARY KEY CHECK (id = 1),
            version     TEXT NOT NULL
        );
        """,
    ),
    Migration(
        4,
        "citations: a short stable id per event, and a log of every use of one",
        f"""
        -- `mem:` + cite resolves to its event in one B-tree probe.  Derived from the event id
        -- (memd.cite.citation_id), assigned by the writer in the transaction that stores the
        -- event, and stored: never recomputed by scanning, the same after restarts and rebuilds.
        CREATE TABLE citations (
            cite        TEXT PRIMARY KEY,
            event_id    INTEGER NOT NULL UNIQUE
        ) WITHOUT ROWID;
        {_backfill_citations()}

        -- Every time a memory reached an agent or a user: injected into a context, resolved
        -- (its details read, a quote verified) or expanded (a timeline around it).
        CREATE TABLE citation_usage (
            id          INTEGER PRIMARY KEY,
            event_id    INTEGER NOT NULL,
            session_id  TEXT,
            used_at     REAL NOT NULL,
            how         TEXT NOT NULL CHECK (how IN ('injected', 'resolved', 'expanded'))
        );
        CREATE INDEX citation_usage_by_event ON citation_usage(event_id, session_id);
        CREATE INDEX citation_usage_by_session ON citation_usage(session_id, how, event_id);
        -- What a session starts with: a project's latest summaries, errors, prompts.
        CREATE INDEX events_by_project_kind ON events(project_id, kind, id);
        CREATE TRIGGER events_citations_delete AFTER DELETE ON events
        BEGIN
            DELETE FROM citations WHERE event_id = old.id;
            DELETE FROM citation_usage WHERE event_id = old.id;
        END;
        """,
    ),
    Migration(
        5,
        "continuity: tasks, snapshots, working set, consolidations, graduation levels, settings",
        """
        -- A snapshot is derived, like a session summary: one per session, replaced in place.
        DROP TRIGGER events_append_only;
        CREATE TRIGGER events_append_only BEFORE UPDATE ON events
        WHEN old.kind NOT IN ('session_summary', 'snapshot')
        BEGIN
            SELECT RAISE(ABORT, 'events are append-only');
        END;

        -- Derived from the task-state events (memd.store.tasks), in the transaction
        -- that stores each one; `rebuild` replays them.
        CREATE TABLE tasks (
            id          INTEGER PRIMARY KEY,
            project_id  INTEGER,
            key         TEXT NOT NULL,
            content     TEXT NOT NULL,
            active_form TEXT NOT NULL DEFAULT '',
            status      TEXT NOT NULL,
            session_id  TEXT,
            external_id TEXT,
            created_at  REAL NOT NULL,
            updated_at  REAL NOT NULL,
            event_id    INTEGER NOT NULL
        );
        CREATE INDEX tasks_by_project ON tasks(project_id, status, updated_at);
        CREATE INDEX tasks_by_key ON tasks(project_id, key);
        CREATE INDEX tasks_by_session ON tasks(session_id, external_id);
        CREATE TABLE task_history (
            id          INTEGER PRIMARY KEY,
            task_id     INTEGER NOT NULL,
            event_id    INTEGER NOT NULL,
            session_id  TEXT,
            at          REAL NOT NULL,
            previous    TEXT,
            status      TEXT NOT NULL,
            change      TEXT NOT NULL
        );
        CREATE INDEX task_history_by_task ON task_history(task_id, id);

        -- Settings changed at run time (memctl endless on|off), as opposed to config.toml.
        CREATE TABLE settings (
            key         TEXT PRIMARY KEY,
            value       TEXT NOT NULL
        );

        -- Graduation (memd.capture.graduation): how a memory has been used, and the level
        -- that earns it; kept up to date as uses are logged.
        ALTER TABLE citation_usage ADD COLUMN confidence REAL;
        CREATE TABLE memory_levels (
            event_id        INTEGER PRIMARY KEY,
            level           INTEGER NOT NULL,
            accesses        INTEGER NOT NULL,
            best_confidence REAL,
            sessions        INTEGER NOT NULL,
            last_access     REAL NOT NULL
        );
        CREATE INDEX memory_levels_by_level ON memory_levels(level);

        -- The working set: each project's salient recent events, kept on ingest
        -- (memd.store.working_set); consolidation reads it.
        CREATE TABLE working_set (
            event_id    INTEGER PRIMARY KEY,
            project_id  INTEGER,
            session_id  TEXT,
            base        REAL NOT NULL,
            at          REAL NOT NULL
        );
        CREATE INDEX working_set_by_project ON working_set(project_id, at);

        -- Consolidated memories (events of kind 'consolidated') and the events each sums up.
        CREATE TABLE consolidations (
            event_id    INTEGER PRIMARY KEY,
            set_key     TEXT NOT NULL UNIQUE,
            confidence  REAL NOT NULL,
            created_at  REAL NOT NULL
        );
        CREATE TABLE consolidation_sources (
            source_id        INTEGER NOT NULL,
            consolidation_id INTEGER NOT NULL,
            PRIMARY KEY (source_id, consolidation_id)
        ) WITHOUT ROWID;

        CREATE TRIGGER events_continuity_delete AFTER DELETE ON events
        BEGIN
            DELETE FROM memory_levels WHERE event_id = old.id;
            DELETE FROM working_set WHERE event_id = old.id;
            DELETE FROM consolidation_sources WHERE source_id = old.id;
        END;
        """,
        then=rebuild_tasks_table,
    ),
    Migration(
        6,
        "forget: consolidations go with their event, and an audit log of what was forgotten",
        """
        CREATE TRIGGER events_consolidation_delete AFTER DELETE ON events WHEN old.kind = 'consolidated'
        BEGIN
            DELETE FROM consolidations WHERE event_id = old.id;
            DELETE FROM consolidation_sources WHERE consolidation_id = old.id;
        END;
        -- When, by which selector and how many: never what (memd.store.forget).
        CREATE TABLE forget_log (
            id          INTEGER PRIMARY KEY,
            at          REAL NOT NULL,
            selector    TEXT NOT NULL,
            events      INTEGER NOT NULL,
            derived     INTEGER NOT NULL
        );
        """,
    ),
    Migration(
        7,
        "a forgotten memory's citation id is never given to another",
        """
        -- Event ids can come back after a forget (SQLite reuses the highest rowid), and with
        -- them the citation id they hash to: so a citation id outlives its event here, and a
        -- new event whose first choice is retired takes the next salt (memd.cite).  A
        -- `mem:Ab3xY9Kq` quoted in an old conversation never names something else.
        CREATE TABLE retired_citations (
            cite        TEXT PRIMARY KEY
        ) WITHOUT ROWID;
        CREATE TRIGGER citations_not_retired BEFORE INSERT ON citations
        WHEN EXISTS (SELECT 1 FROM retired_citations WHERE cite = new.cite)
        BEGIN
            SELECT RAISE(IGNORE);
        END;
        DROP TRIGGER events_citations_delete;
        CREATE TRIGGER events_citations_delete AFTER DELETE ON events
        BEGIN
            INSERT OR IGNORE INTO retired_citations (cite) SELECT cite FROM citations WHERE event_id = old.id;
            DELETE FROM citations WHERE event_id = old.id;
            DELETE FROM citation_usage WHERE event_id = old.id;
        END;
        """,
    ),
    Migration(
        8,
        "quarantine: events the writer could not store whole, and why",
        """
        -- An event whose storing or deriving raised is rolled back alone (memd.store.writer);
        -- this row says so: when, which hook event, session and idempotency key, how big, what
        -- failed and why (the exception type and where it was raised), never the event's content.
        -- stage: 'derive' (the event stored without its own derived data: tasks, working set),
        -- 'summary' or 'snapshot' (the session's, after this event), 'store' (not even the event
        -- itself could be stored: event_id is NULL, its hook client spooled it).
        CREATE TABLE quarantine (
            id          INTEGER PRIMARY KEY,
            at          REAL NOT NULL,
            event       TEXT NOT NULL,
            session_id  TEXT,
            idem_key    TEXT NOT NULL,
            size        INTEGER NOT NULL,
            event_id    INTEGER,
            stage       TEXT NOT NULL CHECK (stage IN ('store', 'derive', 'summary', 'snapshot')),
            error       TEXT NOT NULL,
            reason      TEXT NOT NULL
        );
        CREATE INDEX quarantine_by_event ON quarantine(event_id) WHERE event_id IS NOT NULL;
        CREATE TRIGGER events_quarantine_delete AFTER DELETE ON events
        BEGIN
            DELETE FROM quarantine WHERE event_id = old.id;
        END;
        """,
    ),
    Migration(
        9,
        "idempotency keys by Claude Code's own ids: tool calls without the session, prompts and Stops by prompt_id",
        """
        -- memd.capture.prepare.idempotency_key: the same key live, from the spool, from an import
        -- and from a fork's copy of its parent's records.  Rewritten where the stored payload
        -- holds the id; a row whose new key is taken already (a duplicate) keeps its old one.
        -- The log stays append-only for everything else: only this migration rewrites keys.
        DROP TRIGGER events_append_only;
        UPDATE OR IGNORE events
        SET idem_key = event || ':tool:' || substr(idem_key, instr(idem_key, ':tool:') + 6)
        WHERE event IN ('PreToolUse', 'PostToolUse', 'PostToolUseFailure') AND instr(idem_key, ':tool:') > 0;
        UPDATE OR IGNORE events
        SET idem_key = event || ':' || coalesce(session_id, '') || ':prompt:' || json_extract(payload, '$.prompt_id')
        WHERE (event = 'UserPromptSubmit'
                OR (event = 'Stop' AND coalesce(json_extract(payload, '$.stop_hook_active'), 0) != 1))
            AND json_type(payload, '$.prompt_id') = 'text' AND json_extract(payload, '$.prompt_id') != '';
        CREATE TRIGGER events_append_only BEFORE UPDATE ON events
        WHEN old.kind NOT IN ('session_summary', 'snapshot')
        BEGIN
            SELECT RAISE(ABORT, 'events are append-only');
        END;
        """,
    ),
    Migration(
        10,
        "the latest snapshot of a project without a sort",
        """
        -- memd.store.state.latest, at every first prompt and session start: without it, every
        -- snapshot of the project was read and sorted (0.65 ms for 257 of them; ~2 ms at 100k
        -- events under load).  Partial: snapshots are ~1.5% of the log.
        CREATE INDEX events_snapshots ON events(project_id, client_ts) WHERE kind = 'snapshot';
        """,
    ),
    Migration(
        11,
        "one project across checkouts and machines: a key per project, the paths it is checked out at",
        """
        -- memd.capture.project: a project is one repository wherever it is checked out.  `key`
        -- says which (its normalized remote, else path:<root>); `project_paths` where it is
        -- on this machine (memd.store.projects looks a root up there, then by key).  `root`
        -- stays what people read: the first path seen, or another machine's for a project
        -- known only from there, so it is no longer unique.  SQLite drops no constraint: the
        -- table is copied without it (ids kept; nothing enforces the references to it).
        CREATE TABLE projects_keyed (
            id          INTEGER PRIMARY KEY,
            root        TEXT NOT NULL,
            name        TEXT NOT NULL,
            first_seen  REAL NOT NULL,
            last_seen   REAL NOT NULL,
            key         TEXT
        );
        INSERT INTO projects_keyed (id, root, name, first_seen, last_seen)
        SELECT id, root, name, first_seen, last_seen FROM projects;
        DROP TABLE projects;
        ALTER TABLE projects_keyed RENAME TO projects;
        CREATE UNIQUE INDEX projects_by_key ON projects(key);  -- NULLs are distinct: unique when set
        CREATE TABLE project_paths (
            path        TEXT PRIMARY KEY,
            project_id  INTEGER NOT NULL REFERENCES projects(id)
        );
        CREATE INDEX project_paths_by_project ON project_paths(project_id);
        INSERT INTO project_paths (path, project_id) SELECT root, id FROM projects;
        """,
        then=_backfill_project_keys,
    ),
    Migration(
        12,
        "sync: this machine's place in the shared log, what it pulled, what it forgot",
        """
        -- memd.store.sync.  One server at a time: another server starts over.
        CREATE TABLE sync_state (
            id            INTEGER PRIMARY KEY CHECK (id = 1),
            server        TEXT NOT NULL,     -- role, host, port and database: never a password
            pulled_txid   INTEGER NOT NULL DEFAULT 0,
            pulled_seq    INTEGER NOT NULL DEFAULT 0,
            last_push     REAL,
            last_pull     REAL,
            last_error    TEXT,              -- what went wrong, never content
            last_error_at REAL
        );
        -- Events captured here and not pushed yet, queued in the transaction that stores them
        -- (once sync was set up; derived kinds stay local).  A cursor on ids would miss an id
        -- SQLite reuses after the newest events were forgotten.
        CREATE TABLE sync_outbox (event_id INTEGER PRIMARY KEY);
        CREATE TRIGGER events_sync_outbox AFTER INSERT ON events
        WHEN new.kind NOT IN ('session_summary', 'snapshot', 'consolidated') AND EXISTS (SELECT 1 FROM sync_state)
        BEGIN
            INSERT OR IGNORE INTO sync_outbox (event_id) VALUES (new.id);
        END;
        -- Events pulled from other machines: never pushed back.
        CREATE TABLE sync_remote (
            event_id INTEGER PRIMARY KEY,
            machine  TEXT NOT NULL,
            team     TEXT NOT NULL DEFAULT ''   -- the team it came through ('' = personal)
        );
        -- Memories promoted to a team by hand (memctl share), pushed to it once.
        CREATE TABLE sync_shares (
            event_id INTEGER NOT NULL,
            team     TEXT NOT NULL,
            pushed   INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (event_id, team)
        );
        CREATE TRIGGER events_sync_delete AFTER DELETE ON events
        BEGIN
            DELETE FROM sync_outbox WHERE event_id = old.id;
            DELETE FROM sync_remote WHERE event_id = old.id;
            DELETE FROM sync_shares WHERE event_id = old.id;
        END;
        -- Forgotten here, to be forgotten everywhere: idempotency keys only, no content.
        -- With the memory's project key and the teams it was shared with by hand: a team's
        -- machines must forget it too.
        CREATE TABLE sync_tombstones (
            event_key    TEXT PRIMARY KEY,
            forgotten_at REAL NOT NULL,
            project_key  TEXT NOT NULL DEFAULT '',
            teams        TEXT NOT NULL DEFAULT '[]'  -- JSON array of team roles
        );
        """,
    ),
    Migration(
        13,
        "Claude Code's own memory: its files mirrored, what leaving them out saved",
        """
        -- memd.store.claude_memory.  One row per memory file memd mirrors as a claude-memory
        -- event: the file as it was read (mtime, size, digest), and its event.  A forgotten
        -- event leaves its row with no event: that version of the file stays forgotten.
        CREATE TABLE claude_memory_files (
            path       TEXT PRIMARY KEY,
            folder     TEXT NOT NULL,
            mtime_ns   INTEGER NOT NULL,
            size       INTEGER NOT NULL,
            digest     TEXT NOT NULL,
            event_id   INTEGER
        );
        CREATE INDEX claude_memory_files_by_folder ON claude_memory_files(folder);
        CREATE INDEX claude_memory_files_by_event ON claude_memory_files(event_id);
        CREATE TRIGGER events_claude_memory_delete AFTER DELETE ON events
        WHEN old.kind = 'claude-memory'
        BEGIN
            UPDATE claude_memory_files SET event_id = NULL WHERE event_id = old.id;
        END;
        -- Context memd left out because Claude Code had put the same in already: counts only.
        CREATE TABLE claude_memory_savings (
            at          REAL NOT NULL,
            session_id  TEXT,
            hook        TEXT NOT NULL,     -- SessionStart | UserPromptSubmit
            lines       INTEGER NOT NULL,
            tokens      INTEGER NOT NULL
        );
        """,
    ),
    Migration(
        14,
        "retrieval: each event read with its neighbours; the entities events name",
        f"""
        -- memd.store.neighbours.  What surrounds an event in its session: for a turn (a prompt
        -- or a reply) the turn before and the turn after, for what a turn set off (a tool call,
        -- its error, a task) the prompt that led to it.  event_links is the truth; events_ctx,
        -- the keyword index of an event's own words (own) with its neighbours' (around), follows
        -- it by trigger, so a neighbour forgotten or redacted leaves no word behind.  It stores
        -- no text (content=''): a row is removed by giving its texts again, before they change.
        CREATE TABLE event_links (
            event_id  INTEGER PRIMARY KEY,
            before_id INTEGER,
            after_id  INTEGER
        );
        CREATE INDEX event_links_by_before ON event_links(before_id) WHERE before_id IS NOT NULL;
        CREATE INDEX event_links_by_after ON event_links(after_id) WHERE after_id IS NOT NULL;
        CREATE INDEX events_turns ON events(session_id, id) WHERE kind IN ('prompt', 'assistant');
        CREATE VIRTUAL TABLE events_ctx USING fts5(own, around, content='', tokenize='{TOKENIZER}');
        CREATE TRIGGER event_links_insert AFTER INSERT ON event_links
        BEGIN
            INSERT INTO events_ctx(rowid, own, around) VALUES ({context_row("new")});
        END;
        CREATE TRIGGER event_links_unindex BEFORE UPDATE ON event_links
        BEGIN
            INSERT INTO events_ctx(events_ctx, rowid, own, around) VALUES ('delete', {context_row("old")});
        END;
        CREATE TRIGGER event_links_update AFTER UPDATE ON event_links
        BEGIN
            INSERT INTO events_ctx(rowid, own, around) VALUES ({context_row("new")});
        END;
        CREATE TRIGGER event_links_delete BEFORE DELETE ON event_links
        BEGIN
            INSERT INTO events_ctx(events_ctx, rowid, own, around) VALUES ('delete', {context_row("old")});
        END;
        CREATE TRIGGER events_links_delete BEFORE DELETE ON events
        BEGIN
            DELETE FROM event_links WHERE event_id = old.id;
            UPDATE event_links SET before_id = NULL WHERE before_id = old.id;
            UPDATE event_links SET after_id = NULL WHERE after_id = old.id;
        END;
        CREATE TRIGGER events_links_unindex BEFORE UPDATE OF title, text ON events
        BEGIN
            INSERT INTO events_ctx(events_ctx, rowid, own, around)
            SELECT 'delete', {context_row("l")} FROM event_links l
            WHERE l.event_id = old.id OR l.before_id = old.id OR l.after_id = old.id;
        END;
        CREATE TRIGGER events_links_text AFTER UPDATE OF title, text ON events
        BEGIN
            INSERT INTO events_ctx(rowid, own, around)
            SELECT {context_row("l")} FROM event_links l
            WHERE l.event_id = new.id OR l.before_id = new.id OR l.after_id = new.id;
        END;

        -- memd.store.entities (memd.capture.entities finds them).  An entity lives while an
        -- event mentions it: forgetting its last event forgets it, its aliases and its edges.
        CREATE TABLE entities (
            id    INTEGER PRIMARY KEY,
            kind  TEXT NOT NULL,
            name  TEXT NOT NULL,
            UNIQUE (kind, name)
        );
        CREATE TABLE entity_aliases (
            alias     TEXT NOT NULL,
            entity_id INTEGER NOT NULL,
            PRIMARY KEY (alias, entity_id)
        ) WITHOUT ROWID;
        CREATE INDEX entity_aliases_by_entity ON entity_aliases(entity_id);
        CREATE TABLE mentions (
            event_id  INTEGER NOT NULL,
            entity_id INTEGER NOT NULL,
            role      TEXT NOT NULL,      -- speaker | author | mention
            PRIMARY KEY (event_id, entity_id)
        ) WITHOUT ROWID;
        CREATE INDEX mentions_by_entity ON mentions(entity_id, event_id);
        -- Two entities seen together, with the event that says so: named in one event
        -- ('with'), a test and the file it tests ('tests'), an error and an edit made after it
        -- in its session ('fix').
        CREATE TABLE entity_edges (
            a        INTEGER NOT NULL,
            b        INTEGER NOT NULL,
            kind     TEXT NOT NULL,
            event_id INTEGER NOT NULL,
            PRIMARY KEY (a, b, kind, event_id)
        ) WITHOUT ROWID;
        CREATE INDEX entity_edges_by_b ON entity_edges(b);
        CREATE INDEX entity_edges_by_event ON entity_edges(event_id);
        CREATE TRIGGER events_entities_delete AFTER DELETE ON events
        BEGIN
            DELETE FROM mentions WHERE event_id = old.id;
            DELETE FROM entity_edges WHERE event_id = old.id;
        END;
        CREATE TRIGGER mentions_delete AFTER DELETE ON mentions
        WHEN NOT EXISTS (SELECT 1 FROM mentions WHERE entity_id = old.entity_id)
        BEGIN
            DELETE FROM entity_edges WHERE a = old.entity_id OR b = old.entity_id;
            DELETE FROM entity_aliases WHERE entity_id = old.entity_id;
            DELETE FROM entities WHERE id = old.entity_id;
        END;

        -- The events stored before this migration get their links and entities in the
        -- background, a batch at a time (memd.store.backfill): the first id still to do and
        -- the last.  A large store must not keep the daemon from serving while it upgrades.
        INSERT INTO settings (key, value)
        SELECT 'backfill_schema_14', min(id) || ' ' || max(id) FROM events HAVING count(*) > 0;
        """,
    ),
    Migration(
        15,
        "citation ids from idempotency keys: one id for a memory on every machine",
        """
        -- memd.store.citations.  The ids made from row numbers stay, as aliases: a `mem:` id
        -- quoted before this release still opens its memory here.
        CREATE TABLE citation_aliases (
            cite        TEXT PRIMARY KEY,
            event_id    INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX citation_aliases_by_event ON citation_aliases(event_id);
        INSERT INTO citation_aliases (cite, event_id) SELECT cite, event_id FROM citations;
        DROP TABLE citations;
        -- full_cite: the key's twelve characters (memd.cite.key_citation); cite, the shortest
        -- beginning of it (eight or more) no other event's begins with.
        CREATE TABLE citations (
            cite        TEXT PRIMARY KEY,
            event_id    INTEGER NOT NULL UNIQUE,
            full_cite   TEXT NOT NULL UNIQUE
        ) WITHOUT ROWID;
        CREATE TRIGGER citations_not_retired BEFORE INSERT ON citations
        WHEN EXISTS (SELECT 1 FROM retired_citations WHERE cite = new.cite)
        BEGIN
            SELECT RAISE(IGNORE);
        END;
        DROP TRIGGER events_citations_delete;
        CREATE TRIGGER events_citations_delete AFTER DELETE ON events
        BEGIN
            INSERT OR IGNORE INTO retired_citations (cite)
            SELECT cite FROM citations WHERE event_id = old.id
            UNION ALL SELECT cite FROM citation_aliases WHERE event_id = old.id;
            DELETE FROM citations WHERE event_id = old.id;
            DELETE FROM citation_aliases WHERE event_id = old.id;
            DELETE FROM citation_usage WHERE event_id = old.id;
        END;
        """,
        then=assign_all_citations,
    ),
    Migration(
        16,
        "the agent of each event: Claude Code, Codex CLI or Gemini CLI",
        """
        -- memd.capture.agents names them.  Every event stored before came from Claude Code's
        -- hooks or transcripts.  A column with a constant default: no row is rewritten.
        ALTER TABLE events ADD COLUMN agent TEXT NOT NULL DEFAULT 'claude-code';
        CREATE INDEX events_by_agent ON events(agent);
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
    conn.create_function("memd_citation_id", 2, legacy_citation_id, deterministic=True)
    todo = pending(conn)
    for migration in todo:
        try:
            conn.executescript(f"BEGIN IMMEDIATE;\n{migration.sql}")  # the transaction stays open
            if migration.then is not None:
                migration.then(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time()),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise
    return todo


def rebuild_keyword_indexes(conn: sqlite3.Connection) -> int:
    """Recreate the keyword indexes from the event log and its links (one transaction); return
    the rows indexed."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT INTO events_fts(events_fts) VALUES ('rebuild')")
        conn.execute("DELETE FROM events_cjk")
        conn.execute("INSERT INTO events_cjk(rowid, title, text) SELECT id, title, text FROM events WHERE cjk")
        conn.execute("INSERT INTO events_ctx(events_ctx) VALUES ('delete-all')")
        conn.execute(f"INSERT INTO events_ctx(rowid, own, around) SELECT {context_row('l')} FROM event_links l")
        rows = int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return rows
