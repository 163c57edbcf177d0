"""Projects in the store: migration 11, lookups through the paths then the key, links and merges."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from memd.capture.prepare import NewEvent
from memd.cite import legacy_citation_id
from memd.store import projects
from memd.store.batch import write_batch
from memd.store.schema import APPEND_ONLY, MIGRATIONS, migrate

REMOTE = '[remote "origin"]\n\turl = git@github.com:Acme/API.git\n'


def checkout(path: Path, config: str = REMOTE) -> str:
    """A repository at ``path`` with ``config`` as its git config; its root."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(config)
    return str(path)


def event(n: int, root: str, kind: str = "prompt", meta: object = None, session: str = "s") -> NewEvent:
    return NewEvent(
        idem_key=f"k{n}", event="UserPromptSubmit", kind=kind, session_id=session, cwd=root, tool=None,
        title=f"t{n}", text=f"text {n}", meta=json.dumps(meta or {}), payload="{}", importance=2,
        client_ts=time.time(), received_at=time.time(), size=2, truncated=False,
    )  # fmt: skip


def database(tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    migrate(conn)
    return conn


def store(conn: sqlite3.Connection, *events: tuple[NewEvent, str]) -> list[int | None]:
    """The project of each event stored."""
    results = write_batch(conn, list(events), [])
    return [
        conn.execute("SELECT project_id FROM events WHERE id = ?", (r.event_id,)).fetchone()[0]  # type: ignore[union-attr]
        for r in results
    ]


def in_one_transaction(conn: sqlite3.Connection, fn, *args):  # type: ignore[no-untyped-def]
    conn.execute("BEGIN IMMEDIATE")
    result = fn(conn, *args)
    conn.execute("COMMIT")
    return result


def test_migration_11_gives_every_project_its_key_and_path(tmp_path: Path) -> None:
    first = checkout(tmp_path / "api")
    second = checkout(tmp_path / "api-copy")  # the same repository, seen before keys existed
    local = checkout(tmp_path / "notes", "[core]\n\tbare = false\n")
    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    conn.create_function("memd_citation_id", 2, legacy_citation_id, deterministic=True)
    for migration in MIGRATIONS[:10]:  # a database as the previous release left it
        conn.executescript(f"BEGIN;\n{migration.sql}\nCOMMIT;")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at REAL)")
    conn.executemany("INSERT INTO schema_migrations VALUES (?, ?, 0)", [(m.version, m.name) for m in MIGRATIONS[:10]])
    roots = [first, second, local, "/gone/since"]
    conn.executemany(
        "INSERT INTO projects (id, root, name, first_seen, last_seen) VALUES (?, ?, 'n', 1, 2)",
        list(enumerate(roots, start=1)),
    )
    conn.execute("INSERT INTO sessions (id, project_id, first_seen, last_seen) VALUES ('s', 2, 0, 0)")
    assert [m.version for m in migrate(conn)] == [m.version for m in MIGRATIONS[10:]]  # 11 and any later
    assert conn.execute("SELECT id, root, key FROM projects ORDER BY id").fetchall() == [
        (1, first, "github.com/Acme/API"),
        (2, second, None),  # the older keeps the key; `memctl project link` merges them
        (3, local, f"path:{local}"),
        (4, "/gone/since", "path:/gone/since"),
    ]
    assert conn.execute("SELECT path, project_id FROM project_paths ORDER BY project_id").fetchall() == [
        (root, n) for n, root in enumerate(roots, start=1)
    ]
    assert projects.local_project(conn, second) == 2  # each still finds its own memories
    assert conn.execute("SELECT p.root FROM sessions s JOIN projects p ON p.id = s.project_id").fetchone() == (second,)
    conn.execute("INSERT INTO projects (root, name, first_seen, last_seen) VALUES (?, 'n', 0, 0)", (first,))
    with pytest.raises(sqlite3.IntegrityError):  # a root may repeat (another machine's); a key may not
        conn.execute("UPDATE projects SET key = 'github.com/Acme/API' WHERE id = 3")


def test_a_second_checkout_of_a_repository_is_the_same_project(tmp_path: Path) -> None:
    conn = database(tmp_path)
    first, second = checkout(tmp_path / "a" / "api"), checkout(tmp_path / "b" / "api-2")
    third = checkout(tmp_path / "c" / "api-3")
    other = checkout(tmp_path / "tool", '[remote "origin"]\n\turl = https://github.com/Acme/Tool\n')
    assert projects.local_project(conn, first) is None
    [a] = store(conn, (event(1, first), first))
    assert projects.local_project(conn, third) == a  # a checkout with nothing stored yet finds it by its key
    assert store(conn, (event(2, second), second), (event(3, other), other))[0] == a
    assert store(conn, (event(4, other), other))[0] != a
    assert conn.execute("SELECT path FROM project_paths WHERE project_id = ? ORDER BY path", (a,)).fetchall() == [
        (first,), (second,)
    ]  # fmt: skip
    assert projects.find_project(conn, "github.com/Acme/API") == (first, a)
    assert projects.find_project(conn, "api-2") == (first, a)  # by a part of any of its paths
    assert projects.find_project(conn, "nowhere") is None


def test_a_project_known_from_another_machine(tmp_path: Path) -> None:
    conn = database(tmp_path)
    made = in_one_transaction(conn, projects.remote_project, "github.com/Acme/API", "/home/other/api", 5.0)
    assert projects.project_by_key(conn, "github.com/Acme/API") == made
    assert in_one_transaction(conn, projects.remote_project, "github.com/Acme/API", "/elsewhere", 6.0) == made
    assert conn.execute("SELECT root, name FROM projects").fetchall() == [("/home/other/api", "api")]
    assert conn.execute("SELECT count(*) FROM project_paths").fetchone() == (0,)  # not a path of this machine
    here = checkout(tmp_path / "api")
    assert store(conn, (event(1, here), here)) == [made]  # a checkout here joins it by its key
    with pytest.raises(ValueError):
        projects.remote_project(conn, "", "/x", 0.0)


def test_linking_merges_every_row_of_a_project_into_the_older(tmp_path: Path) -> None:
    conn = database(tmp_path)
    older = checkout(tmp_path / "api")
    newer = checkout(tmp_path / "fork", '[remote "origin"]\n\turl = https://github.com/me/api-fork.git\n')
    todo = {"op": "write", "tasks": [{"content": "ship the parser", "status": "pending"}]}
    [kept] = store(conn, (event(1, older, "task_state", todo, session="s1"), older))
    [gone] = store(
        conn,
        (event(2, newer, session="s2"), newer),
        (event(3, newer, "task_state", todo, session="s2"), newer),
    )[:1]
    assert kept < gone
    linked = in_one_transaction(conn, projects.link_path, older, newer, time.time())  # either way round
    assert linked == projects.Linked(kept, gone, 2)
    tables = [
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if "project_id" in {c[1] for c in conn.execute(f'PRAGMA table_info("{name}")')}
    ]
    assert {"events", "sessions", "tasks", "working_set", "project_paths"} <= set(tables)
    for table in tables:
        assert conn.execute(f'SELECT count(*) FROM "{table}" WHERE project_id = ?', (gone,)).fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM events WHERE project_id = ?", (kept,)).fetchone() == (3,)
    assert conn.execute("SELECT content FROM tasks").fetchall() == [("ship the parser",)]  # one project's list
    assert conn.execute("SELECT id, key FROM projects").fetchall() == [(kept, "github.com/Acme/API")]
    assert projects.local_project(conn, newer) == kept
    (guard,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_append_only'").fetchone()
    assert " ".join(guard.split()) == " ".join(APPEND_ONLY.split())  # back, as its one source says
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET project_id = ?", (gone,))
    assert conn.execute("SELECT count(*) FROM events_fts WHERE events_fts MATCH 'text'").fetchone() == (3,)


def test_linking_to_a_key(tmp_path: Path) -> None:
    conn = database(tmp_path)
    notes = checkout(tmp_path / "notes", "[core]\n\tbare = false\n")
    [project] = store(conn, (event(1, notes), notes))
    renamed = in_one_transaction(conn, projects.link_key, notes, "github.com/me/notes", 1.0)
    assert renamed == projects.Linked(project)  # no project had that key: this one takes it
    assert projects.project_by_key(conn, "github.com/me/notes") == project
    fresh = str(tmp_path / "not-yet-seen")
    assert in_one_transaction(conn, projects.link_key, fresh, "github.com/me/notes", 2.0) == projects.Linked(project)
    elsewhere = str(tmp_path / "scratch")
    made = in_one_transaction(conn, projects.link_key, elsewhere, "path:/home/me/scratch", 3.0)
    assert made.project_id != project and projects.path_project(conn, elsewhere) == made.project_id
    assert [p.paths for p in projects.project_list(conn)] == [sorted([fresh, notes]), [elsewhere]]  # latest seen first
