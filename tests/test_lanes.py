"""The SQL lanes on a real database, at sizes where their bounds matter."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memd.query import compile_query
from memd.store import lanes
from memd.store.lanes import Filters
from memd.store.schema import migrate


def database(tmp_path: Path, rows: list[tuple[int, str]]) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "memd.sqlite3", isolation_level=None)
    migrate(conn)
    conn.executemany("INSERT INTO projects (id, root, name, first_seen, last_seen) VALUES (?, ?, ?, 0, 0)",
                     [(1, "/a", "a"), (2, "/b", "b")])  # fmt: skip
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO events (idem_key, project_id, kind, title, text, payload, importance, client_ts, received_at,"
        " size) VALUES (?, ?, 'prompt', ?, ?, '{}', 2, 0, 0, 1)",
        [(str(n), project, text, text) for n, (project, text) in enumerate(rows)],
    )
    conn.execute("COMMIT")
    return conn


def test_a_quiet_project_is_found_under_a_busy_ones_common_word(tmp_path: Path) -> None:
    rows = [(1, "retry the flaky upload test"), *[(2, f"retry loop {n}") for n in range(lanes.RANK_CAP + 500)]]
    conn = database(tmp_path, rows)
    found = lanes.keyword(conn, compile_query("retry"), Filters(project_id=1), 10)
    assert found == [1]
    everywhere = lanes.keyword(conn, compile_query("retry"), Filters(), 10)
    assert len(everywhere) == 10 and 1 not in everywhere  # ranked among the newest matches only


def test_and_first_then_or(tmp_path: Path) -> None:
    conn = database(tmp_path, [(1, "parser cache"), (1, "parser only"), (1, "cache only"), (1, "neither")])
    assert lanes.keyword(conn, compile_query("parser cache"), Filters(), 10)[0] == 1
    assert set(lanes.keyword(conn, compile_query("parser cache"), Filters(), 10)) == {1, 2, 3}
    assert lanes.keyword(conn, compile_query("parser cache"), Filters(), 1) == [1]


def test_rare_words_lead_and_unfinished_words_are_prefixes(tmp_path: Path) -> None:
    rows = [(1, "retry the flaky upload test"), *[(2, f"retry loop {n}") for n in range(lanes.RANK_CAP + 500)]]
    conn = database(tmp_path, rows)
    assert lanes.keyword(conn, compile_query("retry flaky"), Filters(), 10)[0] == 1
    assert lanes.keyword(conn, compile_query("flak"), Filters(), 10) == [1]  # still being typed
    assert lanes.keyword(conn, compile_query("upload zebra"), Filters(), 10) == [1]  # OR of the rare words
