"""Retention (``memctl gc``, the janitor): which old, unimportant events go, which never do,
the size cap, and a background pass at most once a day."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest
from conftest import Instance

from memd.protocol import Collected, Details, DetailsResult, Gc, Ingest, Ingested
from memd.services.janitor import INTERVAL, seconds_until_due
from memd.store.retention import LAST_RUN, Candidate, Policy, choose, expired_on_arrival, kept, measure, select

DAY = 86400.0
NOW = 1_800_000_000.0
POLICY = Policy(max_age_days=90, max_importance=1, max_db_bytes=0)


def _candidate(event_id: int, age_days: float, kind: str = "tool", **fields: object) -> Candidate:
    values = {"content": 100, "cited": False, "level": 0, **fields}
    return Candidate(event_id, kind, NOW - age_days * DAY, **values)  # type: ignore[arg-type]


# --- the decision ---------------------------------------------------------------------------


def test_what_is_kept_whatever_its_age() -> None:
    for kind in ("tool_error", "memory", "session_summary", "snapshot", "consolidated"):
        assert kept(_candidate(1, 400, kind))
    assert kept(_candidate(1, 400, cited=True))
    assert kept(_candidate(1, 400, level=2)) and not kept(_candidate(1, 400, level=1))
    assert not kept(_candidate(1, 400, "tool")) and not kept(_candidate(1, 400, "notification"))


def test_what_an_import_leaves_out() -> None:
    """An imported event the next pass would remove is not stored: the same rule as ``choose``."""
    policy, now = Policy(90.0, 1, 0), 1_000 * DAY
    old, young = now - 91 * DAY, now - 89 * DAY
    assert expired_on_arrival(policy, "tool", 1, old, now)
    assert expired_on_arrival(policy, "tool", 0, old, now)
    assert not expired_on_arrival(policy, "tool", 1, young, now)
    assert not expired_on_arrival(policy, "tool", 2, old, now)  # above max_importance
    assert not expired_on_arrival(policy, "tool_error", 1, old, now)  # errors are kept
    assert not expired_on_arrival(policy, "memory", 0, old, now)


def test_old_low_events_go_young_ones_stay() -> None:
    rows = [_candidate(1, 200), _candidate(2, 120, "tool_error"), _candidate(3, 91), _candidate(4, 89)]
    assert choose(rows, POLICY, NOW, used_bytes=10**9, content_total=10**6) == ([1, 3], [])


def test_the_size_cap_takes_the_oldest_low_events_first() -> None:
    rows = [_candidate(n, age, content=1000) for n, age in ((1, 60), (2, 50), (3, 40), (4, 30))]
    rows.insert(1, _candidate(9, 55, content=1000, cited=True))  # kept: the cap skips it
    capped = POLICY._replace(max_db_bytes=100_000)
    # 5 events of 1,000 stored bytes each: each is a fifth of the database.
    assert choose(rows, capped, NOW, used_bytes=200_000, content_total=5_000) == ([], [1, 2, 3])
    assert choose(rows, capped, NOW, used_bytes=150_000, content_total=5_000) == ([], [1, 2])
    assert choose(rows, capped, NOW, used_bytes=120_000, content_total=5_000) == ([], [1])
    assert choose(rows, capped, NOW, used_bytes=100_000, content_total=5_000) == ([], [])
    # Events past the age limit count toward the bytes to free.
    aged = POLICY._replace(max_age_days=45, max_db_bytes=100_000)
    assert choose(rows, aged, NOW, used_bytes=200_000, content_total=5_000) == ([1, 2], [3])


def test_a_pass_is_due_once_a_day() -> None:
    assert seconds_until_due(None, NOW) == 0
    assert seconds_until_due(NOW - INTERVAL - 1, NOW) == 0
    assert seconds_until_due(NOW - 3600, NOW) == INTERVAL - 3600
    assert seconds_until_due(NOW + 10 * INTERVAL, NOW) == INTERVAL  # the clock went back


# --- against a daemon ------------------------------------------------------------------------


def _tool(instance: Instance, cwd: str, age_days: float, tool: str, tool_input: dict, *, failed: bool = False) -> int:
    event = "PostToolUseFailure" if failed else "PostToolUse"
    payload = {
        "session_id": "s-old" if age_days > 50 else "s-new", "cwd": cwd, "hook_event_name": event,
        "transcript_path": "/dev/null", "tool_name": tool, "tool_input": tool_input,
        "tool_use_id": f"{tool}-{age_days}-{json.dumps(tool_input)}",
        **({"error": "Exit code 1"} if failed else {"tool_response": {"stdout": "ok"}}),
    }  # fmt: skip
    sent = time.time_ns() - int(age_days * DAY * 1e9)
    request = Ingest(event=event, sent_at_ns=sent, payload=json.dumps(payload).encode())
    return instance.call(request, Ingested).event_id


@pytest.fixture
def aged(instance: Instance) -> tuple[Instance, dict[str, int]]:
    """Events of 100 days ago of every sort, and young ones; the daily pass off (``memctl gc``
    still runs), so nothing goes before the test asks."""
    instance.configure("[retention]\nenabled = false\n")
    instance.start()
    cwd = f"{instance.root}/proj"
    os.makedirs(cwd)
    ids = {
        "read": _tool(instance, cwd, 100, "Read", {"file_path": f"{cwd}/a.py"}),
        "ls": _tool(instance, cwd, 100, "Bash", {"command": "ls -la"}),
        "error": _tool(instance, cwd, 100, "Bash", {"command": "pytest -x"}, failed=True),
        "cited": _tool(instance, cwd, 100, "Read", {"file_path": f"{cwd}/b.py"}),
        "graduated": _tool(instance, cwd, 100, "Read", {"file_path": f"{cwd}/c.py"}),
        "prompt": instance.remember("Why does the cache miss?", cwd, session="s-old", age_days=100),
        "young": _tool(instance, cwd, 10, "Read", {"file_path": f"{cwd}/d.py"}),
    }
    payload = {"session_id": "s-old", "cwd": cwd, "hook_event_name": "SessionEnd", "reason": "exit"}
    sent = time.time_ns() - int(100 * DAY * 1e9)
    instance.call(Ingest(event="SessionEnd", sent_at_ns=sent, payload=json.dumps(payload).encode()), Ingested)
    assert {kind for (kind,) in instance.query("SELECT kind FROM events WHERE session_id = 's-old'")} >= {
        "session_summary",
        "snapshot",  # importance 1, and 100 days old: kept as derived
    }
    (cite,) = instance.query("SELECT cite FROM citations WHERE event_id = ?", ids["cited"])[0]
    instance.call(Details(ids=[f"mem:{cite}"]), DetailsResult)  # a use by id: cited
    assert instance.stop() == 0
    with sqlite3.connect(instance.paths.database) as conn:  # graduated to L2 (by uses the test need not make)
        conn.execute("INSERT INTO memory_levels VALUES (?, 2, 5, 0.9, 2, ?)", (ids["graduated"], time.time()))
    instance.start()
    return instance, ids


def test_gc_dry_run_lists_exactly_the_old_low_events(aged: tuple[Instance, dict[str, int]]) -> None:
    instance, ids = aged
    preview = instance.call(Gc(dry_run=True), Collected)
    assert [e.id for e in preview.events] == [ids["read"], ids["ls"]]
    assert (preview.total, preview.aged, preview.capped, preview.kinds) == (2, 2, 0, {"tool": 2})
    assert instance.query("SELECT count(*) FROM events WHERE id IN (?, ?)", ids["read"], ids["ls"]) == [(2,)]

    done = instance.call(Gc(), Collected)
    assert [e.id for e in done.events] == [ids["read"], ids["ls"]] and done.refreshed == 1
    left = {row[0] for row in instance.query("SELECT id FROM events")}
    assert not left & {ids["read"], ids["ls"]}
    assert {ids[k] for k in ("error", "cited", "graduated", "prompt", "young")} <= left
    summary = instance.query("SELECT text FROM events WHERE kind = 'session_summary' AND session_id = 's-old'")
    assert summary and "a.py" not in summary[0][0]  # recomputed without the read
    assert instance.query("SELECT selector, events FROM forget_log") == [("retention", 2)]
    assert float(instance.query("SELECT value FROM settings WHERE key = ?", LAST_RUN)[0][0]) > time.time() - 60
    assert done.auto_vacuum == "incremental"  # a small database switched at start

    again = instance.memctl("gc", "--dry-run")
    assert again.returncode == 0 and again.stdout.startswith("would remove 0 events\n")


def test_the_size_cap_removes_the_oldest_low_events_first(aged: tuple[Instance, dict[str, int]]) -> None:
    instance, ids = aged
    assert instance.stop() == 0
    with sqlite3.connect(instance.paths.database) as conn:
        used = measure(conn, instance.paths.database).used_bytes
        young = POLICY._replace(max_age_days=3650)  # nothing is old: only the cap removes
        order = [ids["read"], ids["ls"], ids["young"]]  # the low ones nothing keeps, oldest first
        assert select(conn, young._replace(max_db_bytes=used - 1), time.time(), used) == ([], order[:1])
        assert select(conn, young._replace(max_db_bytes=1), time.time(), used) == ([], order)
        assert select(conn, young._replace(max_db_bytes=used), time.time(), used) == ([], [])
    instance.configure("[retention]\nenabled = false\nmax_age_days = 3650.0\nmax_db_bytes = 1\n")
    instance.start()
    done = instance.call(Gc(), Collected)
    assert (done.total, done.aged, done.capped) == (3, 0, 3)
    left = {row[0] for row in instance.query("SELECT id FROM events")}
    assert not left & set(order) and {ids[k] for k in ("error", "cited", "graduated", "prompt")} <= left


def test_the_daily_pass_runs_at_most_once_a_day(aged: tuple[Instance, dict[str, int]]) -> None:
    instance, ids = aged
    instance.stop()
    instance.configure("[retention]\nenabled = true\n")  # the daily pass on

    def last_run(ago: float | None = None) -> float:
        with sqlite3.connect(instance.paths.database) as conn:
            if ago is not None:
                conn.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (LAST_RUN, repr(time.time() - ago)))
            row = conn.execute("SELECT value FROM settings WHERE key = ?", (LAST_RUN,)).fetchone()
        return float(row[0])

    ran = last_run(ago=3600)  # an hour ago: not due
    instance.start()
    instance.wait_for(lambda: bool(instance.logged("retention_not_due")))  # the janitor looked
    assert instance.query("SELECT count(*) FROM events WHERE id = ?", ids["read"]) == [(1,)]
    assert instance.stop() == 0 and last_run() == ran

    last_run(ago=INTERVAL + 60)  # more than a day ago: due at start
    instance.start()
    # the audit row follows the last deletion's transaction: wait for it, not for the deletion
    instance.wait_for(lambda: instance.query("SELECT selector, events FROM forget_log") == [("retention", 2)])
    assert instance.query("SELECT count(*) FROM events WHERE id = ?", ids["read"]) == [(0,)]
    instance.wait_for(lambda: last_run() > time.time() - 60)
    ran = last_run()
    assert instance.stop() == 0
    instance.start()  # a restart does not run it again
    instance.wait_for(lambda: bool(instance.logged("retention_not_due")))
    assert last_run() == ran and instance.query("SELECT count(*) FROM forget_log") == [(1,)]


def test_memctl_gc_prints_what_it_removed(aged: tuple[Instance, dict[str, int]]) -> None:
    instance, _ids = aged
    preview = instance.memctl("gc", "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.startswith("would remove 2 events (2 tool)\n  2 older than 90 days\ndatabase: ")
    done = instance.memctl("gc", "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["total"] == 2 and data["bytes_after"] > 0 and not data["dry_run"]
