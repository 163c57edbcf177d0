"""Continuity's pure core and its tables: extraction, the score, tasks, snapshots."""

from __future__ import annotations

import sqlite3

import pytest

from memd.capture.extract import aspects, decisions, entities, files, is_substantive, topics
from memd.capture.snapshot import Row, take
from memd.capture.task_rules import canonical, change_of
from memd.cite import LENGTH, key_citation
from memd.continuity.score import continuity, overlap
from memd.store.citations import assign as assign_citation
from memd.store.schema import migrate
from memd.store.tasks import apply, open_tasks

# --- extraction -------------------------------------------------------------------------------


def test_topics_meet_across_languages() -> None:
    english = set(topics("Fix the flaky login test"))
    korean = set(topics("로그인 테스트 고쳐줘"))
    assert {"login", "test", "fix"} <= english
    assert {"login", "test", "fix"} <= korean
    assert "the" not in english and "py" not in topics("edit auth.py")


def test_files_entities_and_decisions() -> None:
    assert files("edit memd/server.py and tests/test_login.py, v1.2 and e.g. this") == ["server.py", "test_login.py"]
    assert entities("call parseConfig on event_id with --all-projects and `Writer`") == [
        "parseConfig",
        "event_id",
        "--all-projects",
        "Writer",
    ]
    text = "We looked at it. Let's use argon2 instead of bcrypt. Tests pass.\n앞으로는 ruff만 쓰자"
    assert decisions(text) == ["Let's use argon2 instead of bcrypt.", "앞으로는 ruff만 쓰자"]
    assert decisions("Tests pass. The build is green.") == []


def test_substantive_prompts() -> None:
    assert not is_substantive("/compact") and not is_substantive("fix it") and not is_substantive("<command-name>")
    assert is_substantive("fix the login bug") and is_substantive("로그인 버그 고쳐줘")


def test_aspects_rank_by_mentions() -> None:
    found = aspects(["login test fails", "login cookie", "login again"], paths=["/p/src/auth.py"], k=2)
    assert found.topics[0] == "login" and len(found.topics) == 2
    assert found.files == ("auth.py",)


# --- the score ----------------------------------------------------------------------------------


def test_overlap() -> None:
    assert overlap(["a", "b"], ["a", "b", "c", "d", "e"]) == 1.0  # all the prompt names is the session's
    assert overlap(["a", "x"], ["a", "b", "c"]) == 0.5
    assert overlap([], ["a"]) == 0.0


def test_score_modes_and_decay() -> None:
    old = {"topics": ["login", "test", "cooki"], "files": ["auth.py"], "entities": ["parse_cookie"]}
    same = {"topics": ["login", "test"], "files": ["auth.py"], "entities": []}
    now = continuity(same, old, hours=1)
    assert now.mode == "seamless" and now.score >= 0.7
    assert now.parts["entities"] == 0.0  # reported, but the prompt named none: no weight
    later = continuity(same, old, hours=24 * 14)
    assert later.score < now.score - 0.25  # two weeks of decay: only a perfect match stays at the line
    partly = {"topics": ["login", "deploy"], "files": [], "entities": []}
    assert continuity(partly, old, hours=1).mode == "topic_shift"
    assert continuity(partly, old, hours=24 * 14).mode == "break"
    other = continuity({"topics": ["deploy", "kubernet"]}, old, hours=1)
    assert other.mode == "break"
    short = continuity({"topics": ["login"]}, old, hours=24 * 300)  # "login?" months later: weak evidence
    assert short.mode == "break" and short.parts["topics"] == pytest.approx(1 / 3)
    empty = continuity({}, old, hours=0)  # at SessionStart nothing is known yet: time alone, at most 0.3
    assert empty.score == pytest.approx(0.3) and empty.mode == "break"


# --- tasks ----------------------------------------------------------------------------------------


@pytest.fixture
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    return conn


def write(conn: sqlite3.Connection, event_id: int, session: str, *todos: tuple[str, str], at: float = 0.0) -> list:
    assign_citation(conn, event_id, f"k{event_id}", new=True)  # what the writer does for every event
    meta = {"op": "write", "tasks": [{"content": c, "status": s} for c, s in todos]}
    return apply(conn, event_id, 1, session, meta, at or float(event_id))


def cite(key: str) -> str:
    return key_citation(key)[:LENGTH]


def history(conn: sqlite3.Connection) -> list[tuple[str, str | None, str, str]]:
    return conn.execute(
        "SELECT t.content, h.previous, h.status, h.change FROM task_history h JOIN tasks t ON t.id = h.task_id"
        " ORDER BY h.id"
    ).fetchall()


def test_transitions() -> None:
    assert change_of(None, "pending") == "created"
    assert change_of("pending", "in_progress") == "started"
    assert change_of("in_progress", "completed") == "completed"
    assert change_of("pending", "completed") == "completed"
    assert change_of("completed", "in_progress") == "reopened"
    assert change_of("in_progress", "pending") == "paused"
    assert change_of("pending", "pending") is None
    assert canonical("Fix  the LOGIN test!") == "fix the login test"


def test_todo_lists_become_tasks_with_history(db: sqlite3.Connection) -> None:
    write(db, 1, "s1", ("Reproduce the bug", "in_progress"), ("Fix the login test", "pending"))
    write(db, 2, "s1", ("Reproduce the bug", "completed"), ("Fix the login test", "in_progress"))
    write(db, 3, "s1", ("Reproduce the bug", "completed"), ("Fix the login test", "completed"))
    write(db, 4, "s1", ("Reproduce the bug", "completed"), ("Fix the login test", "in_progress"))  # reopened
    assert history(db) == [
        ("Reproduce the bug", None, "in_progress", "created"),
        ("Fix the login test", None, "pending", "created"),
        ("Reproduce the bug", "in_progress", "completed", "completed"),
        ("Fix the login test", "pending", "in_progress", "started"),
        ("Fix the login test", "in_progress", "completed", "completed"),
        ("Fix the login test", "completed", "in_progress", "reopened"),
    ]
    (task,) = open_tasks(db, 1, now=4.0)
    assert open_tasks(db, 1, now=4.0 + 15 * 86400) == []  # untouched for two weeks: stale, not carried
    assert (task.content, task.status, task.cite, task.event_id) == ("Fix the login test", "in_progress", cite("k4"), 4)


def test_open_tasks_carry_over_and_reworded_ones_are_recognized(db: sqlite3.Connection) -> None:
    write(db, 1, "s1", ("Add tests for the parser", "pending"), ("Fix the login test", "in_progress"))
    # A new session writes its own list: the old open tasks are not dropped by it.
    write(db, 2, "s2", ("Add unit tests for the parser", "in_progress"), ("Fix the logout test", "pending"))
    rows = db.execute("SELECT content, status FROM tasks ORDER BY id").fetchall()
    assert rows == [
        ("Add unit tests for the parser", "in_progress"),  # the same task, reworded (ratio 90 >= 88)
        ("Fix the login test", "in_progress"),  # carried over from s1
        ("Fix the logout test", "pending"),  # a different task (ratio 84 < 88)
    ]
    # The same session leaving a task out of its list drops it.
    write(db, 3, "s2", ("Add unit tests for the parser", "completed"))
    assert dict(db.execute("SELECT content, status FROM tasks")) == {
        "Add unit tests for the parser": "completed",
        "Fix the login test": "in_progress",
        "Fix the logout test": "dropped",
    }


def test_one_list_matches_each_open_task_once(db: sqlite3.Connection) -> None:
    """Two rewordings of one open task in one list: the first takes it, the second is a new
    task; and a task this list created is not matched by a later item of the same list."""
    write(db, 1, "s1", ("Add tests for the parser", "pending"))
    write(db, 2, "s2", ("Add unit tests for the parser", "in_progress"), ("Add more tests for the parser", "pending"),
          ("Add more tests for the parsers", "pending"))  # fmt: skip
    assert db.execute("SELECT content, status FROM tasks ORDER BY id").fetchall() == [
        ("Add unit tests for the parser", "in_progress"),
        ("Add more tests for the parser", "pending"),
        ("Add more tests for the parsers", "pending"),
    ]


def test_a_stale_task_listed_again_is_a_new_one(db: sqlite3.Connection) -> None:
    day = 86400.0
    write(db, 1, "s1", ("Add tests for the parser", "pending"), at=1 * day)
    write(db, 2, "s2", ("Add unit tests for the parser", "in_progress"), at=10 * day)  # reworded, 9 days on
    write(db, 3, "s3", ("Add tests for the parser", "pending"), at=30 * day)  # reworded, 20 days untouched
    assert db.execute("SELECT content, status, updated_at FROM tasks ORDER BY id").fetchall() == [
        ("Add unit tests for the parser", "in_progress", 10 * day),
        ("Add tests for the parser", "pending", 30 * day),
    ]
    write(db, 4, "s4", ("Add unit tests for the parser", "completed"), at=31 * day)  # the same words: the same task
    assert db.execute("SELECT status FROM tasks ORDER BY id").fetchall() == [("completed",), ("pending",)]


def test_task_tools_update_by_their_own_id(db: sqlite3.Connection) -> None:
    apply(db, 1, 1, "s1", {"op": "create", "tasks": [{"id": "1", "content": "Ship it", "status": "pending"}]}, 1.0)
    apply(db, 2, 1, "s1", {"op": "update", "tasks": [{"id": "1", "status": "completed"}]}, 2.0)
    assert db.execute("SELECT content, status FROM tasks").fetchall() == [("Ship it", "completed")]
    assert apply(db, 3, 1, "s1", {"op": "list", "tasks": [{"id": "1", "status": "pending"}]}, 3.0) == []


# --- snapshots ------------------------------------------------------------------------------------


def row(n: int, kind: str, title: str, text: str = "", tool: str | None = None, **meta: object) -> Row:
    return Row(n, f"C{n:05d}", kind, tool, title, text, dict(meta), float(n))


def test_snapshot_of_a_session() -> None:
    rows = [
        row(1, "prompt", "Prompt: fix", "Fix the flaky login test in tests/test_login.py"),
        row(2, "tool", "Read auth.py", tool="Read", files=["/p/src/auth.py"]),
        row(3, "tool_error", "Bash failed: pytest -x", tool="Bash", command="pytest -x tests/test_login.py"),
        row(4, "tool", "Edited auth.py", tool="Edit", files=["/p/src/auth.py"]),
        row(5, "tool", "Ran pytest", tool="Bash", command="pytest -x tests/test_login.py"),  # the fix
        row(6, "tool_error", "Bash failed: npm run build", tool="Bash", command="npm run build"),
        row(7, "prompt", "Prompt: ok", "ok"),  # not substantive
        row(8, "assistant", "Assistant: done", "Fixed. From now on we use argon2 for hashing."),
    ]
    snapshot = take(rows, [], "s1", now=100.0)
    assert [i.text for i in snapshot.goal] == ["Fix the flaky login test in tests/test_login.py"]
    assert [(f.path, f.edits, f.reads, f.cite) for f in snapshot.files] == [("/p/src/auth.py", 1, 1, "C00004")]
    assert [(i.text, i.cite) for i in snapshot.errors] == [("Bash failed: npm run build", "C00006")]
    assert [i.text for i in snapshot.decisions] == ["From now on we use argon2 for hashing."]
    assert snapshot.last_reply is not None and snapshot.last_reply.cite == "C00008"
    assert (snapshot.last_event_id, snapshot.last_ts) == (8, 8.0)
    assert "login" in snapshot.topics and "auth.py" in snapshot.file_names


# --- the working set and consolidation ----------------------------------------------------------


def test_the_working_set_keeps_the_salient_recent_events(db: sqlite3.Connection) -> None:
    from memd.store import working_set

    now = 1_000_000.0
    assert not working_set.admit(db, 1, 1, "s", "tool", 1, now, now, 24)  # a read: not salient
    assert not working_set.admit(db, 2, 1, "s", "session_start", 2, now, now, 24)  # bookkeeping
    assert not working_set.admit(db, 3, 1, "s", "prompt", 2, now - 25 * 3600, now, 24)  # too old
    for n in range(10, 20):
        assert working_set.admit(db, n, 1, "s", "prompt", 2 + (n == 12), now - (20 - n) * 600, now, 24)
    working_set.trim(db, 1, now, 24, size=5)
    kept = [m.event_id for m in working_set.members(db, 1, now)]
    # importance 3 at 80 min old scores 3/(1 + 80/720) = 2.7, over the newest (2/(1 + 10/720) = 1.97)
    assert kept == [12, 19, 18, 17, 16]
    working_set.trim(db, 1, now + 30 * 3600, 24, size=5)
    assert working_set.members(db, 1, now) == []


def test_groups_merge_and_consolidation_confidence() -> None:
    from memd.continuity.consolidation import consolidate, groups, set_key
    from memd.store.consolidation import Source

    def source(n: int, text: str, files: tuple[str, ...] = ()) -> Source:
        return Source(n, f"C{n:05d}", "prompt", f"Prompt: {text[:20]}", text, files, n * 600.0)

    sources = [
        source(1, "login test fails on cookie expiry", ("/p/auth.py",)),
        source(2, "cookie expiry in auth.py breaks login", ("/p/auth.py",)),
        source(3, "login cookie TTL raised", ("/p/auth.py",)),
        source(4, "deploy the staging cluster"),
        source(5, "write release notes"),
    ]
    found = groups(sources)
    assert [sorted(ids) for ids, _ in found] == [[1, 2, 3]]  # login, cooki, expiry, file:auth.py merged
    memory = consolidate([s for s in sources if s.id in found[0][0]], found[0][1])
    assert memory.sources == (1, 2, 3) and memory.text.count("[mem:C0000") == 3 and memory.files == ("auth.py",)
    gap_hours = 600 / 3600
    expected = 0.4 * 0.3 + 0.4 * (1 - gap_hours / 24) + 0.2 * min(3 / len(found[0][1]), 1)
    assert memory.confidence == pytest.approx(expected, abs=1e-4)
    assert set_key([3, 1, 2]) == set_key([1, 2, 3]) != set_key([1, 2])


def test_a_consolidation_is_titled_by_what_its_events_are_about_not_where() -> None:
    """Edits of files under /tmp/bar shared the path's segments and the tool's name: the group
    was titled "Consolidated: edit, tmp, bar"."""
    from memd.continuity.consolidation import consolidate, groups
    from memd.store.consolidation import Source

    def edit(n: int, name: str, said: str) -> Source:
        path = f"/tmp/bar/{name}"
        return Source(n, f"E{n:05d}", "tool", f"Edit {path}", f"{path}\n{said}", (path,), n * 60.0, "Edit")

    sources = [
        edit(1, "upload.py", "retry the upload when the token expires"),
        edit(2, "client.py", "the upload client refreshes an expired token"),
        edit(3, "auth.py", "token expiry raises before the upload starts"),
    ]
    (ids, shared), *_ = groups(sources)
    title = consolidate([s for s in sources if s.id in ids], shared).title
    assert ids == {1, 2, 3} and "upload" in title and "token" in title
    assert not {"edit", "tmp", "bar"} & set(title.removeprefix("Consolidated: ").split(" (")[0].split(", ")), title


def test_graduation_levels() -> None:
    from memd.capture.graduation import level

    assert level(0, None, 0, 0) == 0
    assert level(1, 0.6, 1, 1) == 1
    assert level(3, 0.75, 2, 10) == 2
    assert level(3, 0.75, 1, 10) == 1  # L2 needs another session
    assert level(10, 1.0, 4, 100) == 0  # every level needs its window, L1 30 days: stale metrics earn none
    assert level(10, 1.0, 4, 1) == 4
    assert level(10, None, 4, 1) == 0  # never found by a search nor asked for by id
