"""The store on real SQLite: migrations, group commit, dedup, and a full disk."""

from __future__ import annotations

import sqlite3
import time

import anyio
import pytest

from memd.capture.prepare import NewEvent
from memd.store import StoreError, Writer, open_store
from memd.store.schema import APPEND_ONLY, MIGRATIONS, migrate, pending

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite is asyncio-only


def event(n: int, key: str | None = None, text: str = "x") -> NewEvent:
    return NewEvent(
        idem_key=key or f"k{n}", event="PostToolUse", kind="tool", session_id="s", cwd="/p", tool="Bash",
        title=f"t{n}", text=text, meta="{}", payload="{}", importance=2, client_ts=time.time(),
        received_at=time.time(), size=2, truncated=False,
    )  # fmt: skip


async def test_concurrent_submits_share_transactions_and_dedupe(tmp_path) -> None:  # type: ignore[no-untyped-def]
    async with open_store(str(tmp_path / "db.sqlite3")) as store, anyio.create_task_group() as tg:
        tg.start_soon(store.writer.run)
        results = {}

        async def submit(n: int, key: str) -> None:
            results[n] = await store.writer.submit(event(n, key), "/p")

        async with anyio.create_task_group() as clients:
            for n in range(200):
                clients.start_soon(submit, n, f"k{n % 150}")  # 50 repeats of earlier keys
        store.writer.close()
    ids = {r.event_id for r in results.values()}
    assert len(ids) == 150
    assert sum(r.duplicate for r in results.values()) == 50
    conn = sqlite3.connect(tmp_path / "db.sqlite3")
    assert conn.execute("SELECT count(*), count(DISTINCT idem_key) FROM events").fetchone() == (150, 150)
    assert conn.execute("SELECT events FROM sessions").fetchone() == (150,)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET title = 'changed'")


async def test_migrations_are_recorded_and_idempotent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "db.sqlite3")
    for _ in range(2):
        async with open_store(path):
            pass
    conn = sqlite3.connect(path)
    assert pending(conn) == []
    assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == [m.version for m in MIGRATIONS]
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_a_full_disk_fails_the_batch_and_the_writer_keeps_going(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "db.sqlite3")
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    migrate(conn)
    writer = Writer(conn)
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        await writer.submit(event(0), "/p")
        # SQLite's page cap produces the real SQLITE_FULL error of a full disk.
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreError, match="full"):
            await writer.submit(event(1, text="z" * 200_000), "/p")
        conn.execute("PRAGMA max_page_count = 1000000")
        assert (await writer.submit(event(2), "/p")).duplicate is False
        writer.close()
    writer.release()
    assert [r[0] for r in conn.execute("SELECT idem_key FROM events ORDER BY id")] == ["k0", "k2"]
    conn.close()


def test_stored_events_get_key_made_citation_ids_and_keep_their_old_ones(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Migration 4 gave each stored event an id from its row number; migration 15 gives it
    the id every machine gives it, from its key, and the old one stays an alias."""
    from memd.cite import LENGTH, key_citation, legacy_citation_id
    from memd.store.batch import write_batch
    from memd.store.citations import event_of

    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    conn.create_function("memd_citation_id", 2, legacy_citation_id, deterministic=True)
    for migration in MIGRATIONS[:3]:  # a database as the previous release left it
        conn.executescript(f"BEGIN;\n{migration.sql}\nCOMMIT;")
    conn.executemany(
        "INSERT INTO events (idem_key, kind, title, text, payload, importance, client_ts, received_at, size)"
        " VALUES (?, 'tool', 't', 'x', '{}', 2, 0, 0, 1)",
        [(f"k{n}",) for n in range(50)],
    )
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at REAL)")
    conn.executemany("INSERT INTO schema_migrations VALUES (?, ?, 0)", [(m.version, m.name) for m in MIGRATIONS[:3]])
    assert [m.version for m in migrate(conn)] == [m.version for m in MIGRATIONS[3:]]
    assert dict(conn.execute("SELECT event_id, cite FROM citation_aliases")) == {
        n: legacy_citation_id(n) for n in range(1, 51)
    }
    assert dict(conn.execute("SELECT event_id, cite FROM citations")) == {
        n: key_citation(f"k{n - 1}")[:LENGTH] for n in range(1, 51)
    }
    assert all(event_of(conn, legacy_citation_id(n)) == n == event_of(conn, key_citation(f"k{n - 1}")) for n in (1, 50))
    write_batch(conn, [(event(51, "k-new"), "/p")], [])
    (cite,) = conn.execute("SELECT cite FROM citations WHERE event_id = 51").fetchone()
    assert cite == key_citation("k-new")[:LENGTH]


def test_ids_that_begin_alike_are_told_apart_and_a_forgotten_one_is_never_reused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two keys whose ids share eight characters (1 in 2·10^14 a pair, so made here by hand):
    the later takes nine, each resolves by its own id and by any longer beginning of its
    twelve characters (the id another machine may show), and a forgotten id names nothing."""
    from memd.cite import LENGTH, key_citation
    from memd.store.batch import write_batch
    from memd.store.citations import event_of

    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    migrate(conn)
    full = key_citation("k-two")
    other = full[:LENGTH] + ("y" if full[LENGTH] == "z" else "z") + full[LENGTH + 1 :]
    write_batch(conn, [(event(1, "k-one"), "/p")], [])
    conn.execute("UPDATE citations SET cite = ?, full_cite = ? WHERE event_id = 1", (other[:LENGTH], other))
    write_batch(conn, [(event(2, "k-two"), "/p")], [])
    assert conn.execute("SELECT cite FROM citations WHERE event_id = 2").fetchone() == (full[: LENGTH + 1],)
    assert [event_of(conn, full[:n]) for n in range(LENGTH, 13)] == [1, 2, 2, 2, 2]  # here, 8 is event 1's
    assert event_of(conn, other[: LENGTH + 1]) == 1 and event_of(conn, full[:7]) is None

    conn.execute("DELETE FROM events WHERE id = 2")  # forgotten: its id, and its twelve, name nothing
    assert [event_of(conn, full[:n]) for n in range(LENGTH, 13)] == [1, None, None, None, None]
    write_batch(conn, [(event(3, "k-two"), "/p")], [])  # the same key again: a new memory, a new id
    (again, cite) = conn.execute(
        "SELECT e.id, c.cite FROM events e JOIN citations c ON c.event_id = e.id WHERE idem_key = 'k-two'"
    ).fetchone()
    assert cite == full[: LENGTH + 2] and event_of(conn, cite) == again and event_of(conn, full[: LENGTH + 1]) is None


def test_the_migration_gives_the_ids_one_insert_at_a_time_would(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``assign_all`` (migration 15, in memory) and ``assign`` (each insert, in SQL) follow one
    rule.  Real collisions cannot be made, so ids are made to begin alike here: every key's
    twelve characters start with the same seven, and many share eight or nine."""
    import hashlib

    from memd.store import citations

    def crowded(key: str) -> str:
        digest = hashlib.sha256(key.encode()).hexdigest()
        return "AAAAAAA" + "ab"[int(digest[0], 16) % 2] + "xy"[int(digest[1], 16) % 2] + digest[2:5]

    monkeypatch.setattr(citations, "key_citation", crowded)
    keys = [f"k{n}" for n in range(40)]
    one_by_one = sqlite3.connect(tmp_path / "one.sqlite3", isolation_level=None)
    migrate(one_by_one)
    for n, key in enumerate(keys, 1):
        one_by_one.execute(
            "INSERT INTO events (id, idem_key, event, kind, title, text, payload, importance, client_ts, received_at,"
            " size) VALUES (?, ?, 'PostToolUse', 'tool', 't', 'x', '{}', 2, 0, 0, 1)", (n, key),
        )  # fmt: skip
        citations.assign(one_by_one, n, key, new=True)
    at_once = sqlite3.connect(tmp_path / "once.sqlite3", isolation_level=None)
    migrate(at_once)
    at_once.executemany(
        "INSERT INTO events (id, idem_key, event, kind, title, text, payload, importance, client_ts, received_at, size)"
        " VALUES (?, ?, 'PostToolUse', 'tool', 't', 'x', '{}', 2, 0, 0, 1)", list(enumerate(keys, 1)),
    )  # fmt: skip
    assert citations.assign_all(at_once) == 40
    expected = one_by_one.execute("SELECT event_id, cite FROM citations ORDER BY event_id").fetchall()
    assert at_once.execute("SELECT event_id, cite FROM citations ORDER BY event_id").fetchall() == expected
    assert {len(cite) for _, cite in expected} >= {8, 9, 10}  # the crowding did make longer ids


def test_a_legacy_id_resolves_as_an_alias_until_its_event_is_forgotten(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memd.store.batch import write_batch
    from memd.store.citations import event_of, keep_alias

    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    migrate(conn)
    write_batch(conn, [(event(1, "k-one"), "/p"), (event(2, "k-two"), "/p")], [])
    assert keep_alias(conn, 1, "Ab3xY9") and event_of(conn, "Ab3xY9") == 1  # an export's id from before
    assert not keep_alias(conn, 2, "Ab3xY9")  # another event's already
    conn.execute("DELETE FROM events WHERE id = 1")
    assert event_of(conn, "Ab3xY9") is None and not keep_alias(conn, 2, "Ab3xY9")  # retired with its event


def test_the_append_only_guard_is_the_one_the_migrations_leave(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``APPEND_ONLY`` (what a scan's redaction puts back) is the trigger the migrations create,
    and it refuses to rewrite a logged event."""
    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    migrate(conn)
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_append_only'").fetchone()
    assert " ".join(sql.split()) == " ".join(APPEND_ONLY.split())
    conn.execute(
        "INSERT INTO events (idem_key, event, kind, title, text, payload, importance, client_ts, received_at, size)"
        " VALUES ('k', 'UserPromptSubmit', 'prompt', 't', 'x', '{}', 2, 0, 0, 1)"
    )
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET text = 'y'")


def test_migration_9_keys_tool_calls_prompts_and_stops_by_claude_codes_ids(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from memd.cite import legacy_citation_id

    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    conn.create_function("memd_citation_id", 2, legacy_citation_id, deterministic=True)
    for migration in MIGRATIONS[:8]:  # a database as the previous release left it
        conn.executescript(f"BEGIN;\n{migration.sql}\nCOMMIT;")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at REAL)")
    conn.executemany("INSERT INTO schema_migrations VALUES (?, ?, 0)", [(m.version, m.name) for m in MIGRATIONS[:8]])
    rows = [
        ("PostToolUse:s1:tool:toolu_1", "PostToolUse", "s1", {"tool_use_id": "toolu_1"}),
        ("PostToolUse:s2:tool:toolu_1", "PostToolUse", "s2", {"tool_use_id": "toolu_1"}),  # a fork's copy: kept
        ("UserPromptSubmit:s1:ab12", "UserPromptSubmit", "s1", {"prompt_id": "p1", "prompt": "go"}),
        ("Stop:s1:cd34", "Stop", "s1", {"prompt_id": "p1", "stop_hook_active": False}),
        ("Stop:s1:ef56", "Stop", "s1", {"prompt_id": "p1", "stop_hook_active": True}),  # the turn's second
        ("UserPromptSubmit:s1:0a0b", "UserPromptSubmit", "s1", {"prompt": "older Claude Code"}),
    ]
    conn.executemany(
        "INSERT INTO events (idem_key, event, session_id, kind, title, text, payload, importance, client_ts,"
        " received_at, size) VALUES (?, ?, ?, 'tool', 't', 'x', ?, 2, 0, 0, 1)",
        [(key, name, session, json.dumps(payload)) for key, name, session, payload in rows],
    )
    assert [m.version for m in migrate(conn)] == [m.version for m in MIGRATIONS[8:]]
    assert [r[0] for r in conn.execute("SELECT idem_key FROM events ORDER BY id")] == [
        "PostToolUse:tool:toolu_1",
        "PostToolUse:s2:tool:toolu_1",
        "UserPromptSubmit:s1:prompt:p1",
        "Stop:s1:prompt:p1",
        "Stop:s1:ef56",
        "UserPromptSubmit:s1:0a0b",
    ]


def _connect(tmp_path) -> sqlite3.Connection:  # type: ignore[no-untyped-def]
    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None, check_same_thread=False)
    migrate(conn)
    return conn


def _quarantine(conn: sqlite3.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT event, session_id, idem_key, size, event_id, stage, error, reason FROM quarantine ORDER BY id"
    ).fetchall()


def test_an_event_whose_derivation_raises_is_stored_without_it_and_its_batch_commits(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memd.store.batch import write_batch
    from memd.store.events import Committed

    conn = _connect(tmp_path)
    good = NewEvent(**{**_fields(event(0, "k-todo")), "kind": "task_state", "meta": _todo("write the tests")})
    # A task-state event whose meta the task tracker cannot read: tasks.apply raises TypeError.
    bad = NewEvent(**{**_fields(event(1, "k-bad")), "kind": "task_state", "meta": '{"op": "write", "tasks": 5}'})
    results = write_batch(conn, [(good, "/p"), (bad, "/p"), (event(2), "/p")], [])
    assert all(isinstance(r, Committed) and not r.duplicate for r in results)
    stored = dict(conn.execute("SELECT idem_key, id FROM events"))
    assert stored.keys() == {"k-todo", "k-bad", "k2"}
    assert [r.event_id for r in results] == [stored["k-todo"], stored["k-bad"], stored["k2"]]  # type: ignore[union-attr]
    # The bad event is stored raw: citable, in its session, but without tasks or working-set membership.
    assert conn.execute("SELECT count(*) FROM citations WHERE event_id = ?", (stored["k-bad"],)).fetchone() == (1,)
    assert conn.execute("SELECT events FROM sessions WHERE id = 's'").fetchone() == (3,)
    assert [r[0] for r in conn.execute("SELECT event_id FROM tasks")] == [stored["k-todo"]]
    assert {r[0] for r in conn.execute("SELECT event_id FROM working_set")} == {stored["k-todo"], stored["k2"]}
    ((name, session, key, size, event_id, stage, error, reason),) = _quarantine(conn)
    assert (name, session, key, size, event_id, stage, error) == (
        "PostToolUse", "s", "k-bad", 2, stored["k-bad"], "derive", "TypeError",
    )  # fmt: skip
    assert reason.startswith("TypeError in apply (memd/store/tasks.py:")
    # Its row goes with the event (a forget, retention).
    conn.execute("DELETE FROM events WHERE id = ?", (stored["k-bad"],))
    assert _quarantine(conn) == []


def test_a_summary_that_raises_is_rolled_back_alone_and_says_no_content(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import structlog

    from memd.store import batch, events

    def broken(rows: object) -> object:
        raise ValueError("a message quoting the event: secret-words")

    monkeypatch.setattr(events, "summarize", broken)  # a summarizer bug on some session's data
    conn = _connect(tmp_path)
    stop = NewEvent(**{**_fields(event(1, "k-stop")), "event": "Stop", "kind": "assistant"})
    with structlog.testing.capture_logs() as logs:
        results = batch.write_batch(conn, [(event(0), "/p"), (stop, "/p")], [], frozenset({"s"}))
    assert [r.duplicate for r in results if isinstance(r, events.Committed)] == [False, False]
    assert {r[0] for r in conn.execute("SELECT idem_key FROM events")} >= {"k0", "k-stop"}
    assert conn.execute("SELECT count(*) FROM events WHERE kind = 'session_summary'").fetchone() == (0,)
    ((name, _, key, _, event_id, stage, error, reason),) = _quarantine(conn)
    assert (name, key, event_id, stage, error) == ("Stop", "k-stop", results[1].event_id, "summary", "ValueError")  # type: ignore[union-attr]
    assert reason.startswith("ValueError in refresh_summary (memd/store/events.py:")
    assert "secret" not in repr(_quarantine(conn)) and "secret" not in repr(logs)
    assert [entry["event"] for entry in logs] == ["event_quarantined"]


async def test_an_event_that_cannot_be_stored_at_all_fails_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    conn = _connect(tmp_path)
    # A real SQLite failure on the plain insert of one event (as a constraint the event breaks would give).
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN new.idem_key = 'k-bad'"
        " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    writer = Writer(conn)
    outcomes: dict[str, object] = {}

    async def submit(e: NewEvent) -> None:
        try:
            outcomes[e.idem_key] = await writer.submit(e, "/p")
        except StoreError as exc:
            outcomes[e.idem_key] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        async with anyio.create_task_group() as clients:
            for e in (event(0), event(1, "k-bad"), event(2)):
                clients.start_soon(submit, e)
        writer.close()
    writer.release()
    from memd.store import EventError

    assert isinstance(outcomes["k-bad"], EventError)
    assert str(outcomes["k-bad"]) == "PostToolUse event not stored: IntegrityError: refused by the test"
    assert not isinstance(outcomes["k0"], Exception) and not isinstance(outcomes["k2"], Exception)
    assert [r[0] for r in conn.execute("SELECT idem_key FROM events ORDER BY id")] == ["k0", "k2"]
    assert _quarantine(conn) == [
        ("PostToolUse", "s", "k-bad", 2, None, "store", "IntegrityError", "refused by the test")
    ]


def _fields(e: NewEvent) -> dict[str, object]:
    import msgspec

    return {f.name: getattr(e, f.name) for f in msgspec.structs.fields(e)}


def _todo(content: str) -> str:
    import json

    return json.dumps({"op": "write", "tasks": [{"content": content, "status": "pending"}]})


def test_a_sessions_own_lookups_walk_its_events_not_a_whole_kind(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The prompt path asks of one session (its prompts so far, its last compaction).  With no
    statistics, SQLite preferred the index by kind and walked every prompt of the store: 14 ms
    at 100k events, a third of the prompt hook's time (issue 19)."""
    from memd.store import lanes, state

    conn = _connect(tmp_path)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    state.session_info(conn, "s1")
    lanes.context_start(conn, "s1")
    conn.set_trace_callback(None)
    plans = {
        sql: " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
        for sql in statements
        if "events" in sql
    }
    assert len(plans) == 2
    for sql, plan in plans.items():
        assert "events_by_session" in plan, (sql, plan)


def test_the_latest_snapshot_is_found_without_reading_every_snapshot(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memd.store import state

    conn = _connect(tmp_path)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    state.latest(conn, 1, "s1")
    conn.set_trace_callback(None)
    (sql,) = statements
    plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))  # values inline
    assert "events_snapshots" in plan and "TEMP B-TREE" not in plan, plan
