"""``memctl stats``: what the store holds (kinds, projects, levels, sizes, backlog, redactions),
hook latencies measured by the daemon, and how memories are used; exact counts on a small instance."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import msgspec
import pytest
from conftest import Instance

from memd.metrics import OTHER_HOOK, hook_key
from memd.protocol import (
    HOOK_EVENTS,
    Details,
    DetailsResult,
    Ingest,
    Ingested,
    Stats,
    StatsReport,
    decode_reply,
)
from memd.store import queries
from memd.store.schema import migrate
from memd_client.rpc import DaemonError

GITHUB_TOKEN = "ghp_" + "Ab3xY9" * 6
HAS_DBSTAT = "ENABLE_DBSTAT_VTAB" in {row[0] for row in sqlite3.connect(":memory:").execute("PRAGMA compile_options")}


def _tool_call(session: str, cwd: str, tool_use_id: str) -> Ingest:
    payload = {
        "session_id": session,
        "cwd": cwd,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": tool_use_id,
        "tool_input": {"command": "pytest -x tests/test_login.py"},
        "tool_response": {"stdout": "1 passed", "stderr": "", "interrupted": False},
        "transcript_path": "/dev/null",
    }
    return Ingest(event="PostToolUse", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())


def _fill(instance: Instance) -> tuple[str, str, int]:
    """Three prompts (one with a secret, one Korean) and a command in project A, one prompt in
    project B; a payload that is not JSON under an unknown hook name.  (A, B, a prompt's id.)"""
    a, b = f"{instance.root}/projects/alpha", f"{instance.root}/projects/beta"
    first = instance.remember("fix the flaky login test", a)
    instance.remember(f"use the token {GITHUB_TOKEN} for the deploy", a)
    instance.remember("로그인 테스트를 고쳐줘", a)
    assert instance.call(_tool_call("s-test", a, "toolu_1"), Ingested).event_id
    instance.remember("draw the billing chart", b, session="s-other")
    with pytest.raises(DaemonError, match="not stored"):
        instance.call(Ingest(event="NotAHook", sent_at_ns=time.time_ns(), payload=b"{not json"), Ingested)
    return a, b, first


def test_stats_counts_sizes_backlog_and_hook_latency(daemon: Instance) -> None:
    a, _b, first = _fill(daemon)
    cite = daemon.query("SELECT cite FROM citations WHERE event_id = ?", first)[0][0]
    daemon.call(Details(ids=[f"mem:{cite}"]), DetailsResult)  # one use: resolved

    report = daemon.call(Stats(limit=1), StatsReport)
    status = daemon.status()

    assert report.kinds == {"prompt": 4, "tool": 1}
    assert [(p.root, p.events) for p in report.projects] == [(a, 4)]  # limit 1: the biggest
    assert report.project_count == 2
    assert report.levels == {"L0": 4, "L1": 1, "L2": 0, "L3": 0, "L4": 0}  # one use by id: L1
    assert report.usage == {"injected": 0, "resolved": 1, "expanded": 0}
    assert [(c.id, c.resolved) for c in report.most_cited] == [(first, 1)]

    assert report.redactions == status.redactions
    assert report.redactions["secrets"] == report.redactions["secret:github-token"] == 1  # by kind too

    sizes = report.sizes
    assert sizes is not None
    assert sizes.database == os.path.getsize(daemon.paths.database)
    assert sizes.wal == os.path.getsize(daemon.paths.database + "-wal")
    assert sizes.vector_index == 0  # no model, no index file
    assert sizes.measured == ("dbstat" if HAS_DBSTAT else "estimate")
    if HAS_DBSTAT:
        for table, size in (("events_fts", sizes.keyword_index), ("events_cjk", sizes.trigram_index)):
            names = [n for (n,) in daemon.query(f"SELECT name FROM sqlite_master WHERE name GLOB '{table}_*'")]
            marks = ",".join("?" * len(names))
            pages = daemon.query(f"SELECT sum(pgsize) FROM dbstat WHERE aggregate = 1 AND name IN ({marks})", *names)
            assert size == pages[0][0] > 0  # the Korean prompt is in the trigram index

    embedding = report.embedding
    assert embedding is not None
    assert (embedding.state, embedding.stored_vectors, embedding.index_vectors) == ("disabled", 0, 0)
    assert (embedding.backlog, embedding.unembedded, embedding.failed) == (5, 5, 0)  # waiting for a model

    hooks = {hook: latency.count for hook, latency in report.hook_latency_ms.items()}
    assert hooks == {"UserPromptSubmit": 4, "PostToolUse": 1, OTHER_HOOK: 1}
    assert sum(hooks.values()) == status.latency_ms["ingest"].count
    for latency in report.hook_latency_ms.values():
        assert 0 < latency.p50 <= latency.p95 <= latency.p99


def test_memctl_stats_prints_it_for_people_and_as_json(daemon: Instance) -> None:
    a, b, _first = _fill(daemon)
    result = daemon.memctl("stats", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {
        "most_cited",
        "usage",
        "levels",
        "kinds",
        "agents",
        "projects",
        "project_count",
        "sizes",
        "embedding",
        "redactions",
        "hook_latency_ms",
        "per_day",
        "usage_per_day",
        "claude_memory",
    }
    assert data["per_day"] == data["usage_per_day"] == []  # the viewer's charts ask for days; memctl does not
    assert data["agents"] == {"claude-code": sum(data["kinds"].values())}  # every hook here was Claude Code's
    assert data["projects"] == [{"root": a, "events": 4}, {"root": b, "events": 1}]
    assert set(data["sizes"]) == {
        "database", "wal", "keyword_index", "trigram_index", "context_index", "vector_index", "measured"
    }  # fmt: skip
    assert set(data["hook_latency_ms"]["PostToolUse"]) == {"count", "p50", "p95", "p99"}
    assert data["embedding"]["backlog"] == 5

    human = daemon.memctl("stats").stdout
    assert "events: 5 in 2 projects; by kind: prompt 4, tool 1" in human
    assert f"       4  {a}" in human
    assert "graduation levels: L0 5, L1 0" in human
    assert f"({data['sizes']['measured']}); vector index file 0 B" in human
    assert "outbox backlog 5 (5 without any vector yet" in human
    assert "privacy filter removed: " in human and "1 secrets" in human and "(1 github-token)" in human
    assert "  PostToolUse        p50 " in human and "(n=1)" in human


def test_an_old_reply_without_the_new_fields_still_decodes() -> None:
    """Fields added to StatsReport have defaults: a reply from an older daemon decodes."""
    old = msgspec.msgpack.encode({"op": "statsreport", "most_cited": [], "usage": {"injected": 1}})
    report = decode_reply(old)
    assert isinstance(report, StatsReport)
    assert (report.kinds, report.projects, report.sizes, report.hook_latency_ms) == ({}, [], None, {})


def test_hook_latency_keys_are_bounded() -> None:
    assert [hook_key(event) for event in HOOK_EVENTS] == list(HOOK_EVENTS)
    assert hook_key("X" * 10_000) == hook_key("sessionstart") == OTHER_HOOK


def _database(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn)
    for n, (kind, project, text) in enumerate(
        [
            ("prompt", 1, "fix the login test"),
            ("prompt", 1, "검색 기능을 고쳐줘"),
            ("tool", 2, "pytest -x"),
            ("tool", None, "ls"),
            ("tool", 1, "git status"),
        ]
    ):
        conn.execute(
            "INSERT INTO events (idem_key, session_id, project_id, kind, title, text, payload, importance,"
            " client_ts, received_at, size, cjk) VALUES (?, 's', ?, ?, ?, ?, '{}', 2, 0, 0, 10, ?)",
            (f"k{n}", project, kind, text, text, int(not text.isascii())),
        )
    conn.executemany(
        "INSERT INTO projects (id, root, name, first_seen, last_seen) VALUES (?, ?, ?, 0, 0)",
        [(1, "/src/one", "one"), (2, "/src/two", "two")],
    )
    return conn


def test_inventory_queries(tmp_path: os.PathLike[str]) -> None:
    conn = _database(os.path.join(tmp_path, "memd.sqlite3"))
    assert queries.kinds(conn) == {"tool": 3, "prompt": 2}
    projects, total = queries.top_projects(conn, 10)
    assert [(p.root, p.events) for p in projects] == [("/src/one", 3), ("/src/two", 1), (None, 1)]
    assert total == 2
    assert queries.top_projects(conn, 1)[0] == projects[:1]


@pytest.mark.skipif(not HAS_DBSTAT, reason="this SQLite has no dbstat table")
def test_the_estimate_without_dbstat_is_the_index_blocks(tmp_path: os.PathLike[str]) -> None:
    conn = _database(os.path.join(tmp_path, "memd.sqlite3"))
    for table in ("events_fts", "events_cjk"):
        pages = queries.index_bytes(conn, table)
        (blocks,) = conn.execute(f"SELECT sum(length(block)) FROM {table}_data").fetchone()
        assert queries.index_bytes(conn, table, dbstat=False) == blocks
        assert 0 < blocks < pages  # the blocks are in the pages, with the rest of the index


def test_uses_per_day_count_what_reached_someone_and_a_listing_is_none(daemon: Instance) -> None:
    project = f"{daemon.root}/uses"
    first = daemon.remember("the lark queue drains at midnight", project, session="s-uses")
    second = daemon.remember("the lark queue keeps 3 retries", project, session="s-uses")
    daemon.call(Details(ids=[str(first)]), DetailsResult)  # a person reads one: a use
    listed = daemon.call(Details(ids=[str(first), str(second)], counted=False), DetailsResult)  # a listing: none
    assert len(listed.details) == 2
    report = daemon.call(Stats(days=30), StatsReport)
    today = time.strftime("%Y-%m-%d")
    assert [(d.day, d.resolved) for d in report.usage_per_day if d.resolved] == [(today, 1)]
    assert report.usage["resolved"] == 1
    assert daemon.call(Stats(), StatsReport).usage_per_day == []  # only asked for with days
