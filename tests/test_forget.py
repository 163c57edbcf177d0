"""Forgetting by id (``memctl forget``, MCP ``mem_forget``): the memory leaves every store,
what repeats it is recomputed, and only an audit row without content remains."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator

import pytest
from conftest import Instance

from memd.protocol import Forget, Forgotten, Ingest, Ingested, Remember, Remembered, SessionList, Sessions

MARKER = "zebracorn-7781"


@pytest.fixture
def embedded() -> Iterator[Instance]:
    """A daemon with the embedding model: vectors and the usearch index are stores too."""
    inst = Instance(tempfile.mkdtemp(prefix="memd-f-", dir="/tmp"), embedding=True)
    inst.start()
    try:
        yield inst
    finally:
        if inst.process is not None:
            assert inst.stop() == 0


def _event(instance: Instance, event: str, session: str, cwd: str, **fields: object) -> int:
    payload = {"session_id": session, "cwd": cwd, "hook_event_name": event, "transcript_path": "/dev/null", **fields}
    request = Ingest(event=event, sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())
    return instance.call(request, Ingested).event_id


def test_forget_reaches_every_store(embedded: Instance, tmp_path: object) -> None:
    cwd = f"{embedded.root}/proj"
    os.makedirs(cwd)
    kept = _event(embedded, "UserPromptSubmit", "s1", cwd, prompt="Refactor the payment module into services")
    secret = _event(embedded, "UserPromptSubmit", "s1", cwd, prompt=f"The vault passphrase hint is {MARKER} 검색어")
    _event(embedded, "Stop", "s1", cwd, last_assistant_message=f"Noted the hint {MARKER}.")
    _event(embedded, "SessionEnd", "s1", cwd, reason="exit")
    embedded.wait_embedded()
    assert embedded.query("SELECT count(*) FROM events WHERE text LIKE ?", f"%{MARKER}%")[0][0] >= 2
    (cite,) = embedded.query("SELECT cite FROM citations WHERE event_id = ?", secret)[0]
    vectors_before = embedded.status().embedding.index_vectors  # type: ignore[union-attr]

    preview = embedded.call(Forget(ids=[f"mem:{cite}"], dry_run=True), Forgotten)
    assert [e.id for e in preview.events] == [secret] and preview.dry_run
    assert embedded.query("SELECT count(*) FROM events WHERE id = ?", secret) == [(1,)]

    stop = embedded.query("SELECT id FROM events WHERE kind = 'assistant' AND session_id = 's1'")[0][0]
    reply = embedded.call(Forget(ids=[f"mem:{cite}", str(stop)]), Forgotten)
    assert sorted(e.id for e in reply.events) == sorted([secret, stop])
    assert reply.vectors >= 2 and reply.refreshed == 1

    # Gone from the log, both keyword indexes, vectors, citations, and every derived text.
    assert embedded.query("SELECT count(*) FROM events WHERE text LIKE ? OR title LIKE ? OR meta LIKE ?",
                          *[f"%{MARKER}%"] * 3) == [(0,)]  # fmt: skip
    assert embedded.query("SELECT count(*) FROM events_fts WHERE events_fts MATCH ?", f'"{MARKER}"') == [(0,)]
    assert embedded.query("SELECT count(*) FROM events_cjk WHERE events_cjk MATCH ?", '"검색어"') == [(0,)]
    assert embedded.query("SELECT count(*) FROM vectors WHERE event_id IN (?, ?)", secret, stop) == [(0,)]
    assert embedded.query("SELECT count(*) FROM citations WHERE cite = ?", cite) == [(0,)]
    assert embedded.status().embedding.index_vectors == vectors_before - reply.vectors  # type: ignore[union-attr]
    assert embedded.search(MARKER, all_projects=True).results == []
    assert embedded.search("vault passphrase hint", all_projects=True).results == []
    assert embedded.memctl("show", f"mem:{cite}").returncode == 1

    # What is left of the session is still there, its summary recomputed from it.
    assert embedded.query("SELECT count(*) FROM events WHERE id = ?", kept) == [(1,)]
    summary = embedded.query("SELECT text FROM events WHERE kind = 'session_summary' AND session_id = 's1'")
    assert summary and MARKER not in summary[0][0]
    assert embedded.query("SELECT events FROM sessions WHERE id = 's1'")[0][0] >= 2

    # The audit row says how many, never what.
    log = embedded.query("SELECT selector, events, derived FROM forget_log")
    assert log == [("ids", 2, 0)]


def test_forgetting_a_whole_session_removes_it(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    only = _event(daemon, "UserPromptSubmit", "s-only", cwd, prompt="A lonely prompt about kites")
    daemon.call(Forget(ids=[str(only)]), Forgotten)
    assert daemon.query("SELECT count(*) FROM events WHERE session_id = 's-only'") == [(0,)]
    assert daemon.query("SELECT count(*) FROM sessions WHERE id = 's-only'") == [(0,)]


def test_a_consolidation_goes_with_its_source(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    ids = [
        _event(daemon, "UserPromptSubmit", f"s{i}", cwd, prompt=f"Tune the flaky websocket reconnect backoff, try {i}")
        for i in range(4)
    ]
    assert daemon.memctl("endless", "consolidate").returncode == 0
    made = daemon.query("SELECT consolidation_id, source_id FROM consolidation_sources")
    assert made, "the fixture should consolidate"
    consolidated = made[0][0]
    reply = daemon.call(Forget(ids=[str(ids[0])]), Forgotten)
    assert reply.derived == 1
    assert daemon.query("SELECT count(*) FROM events WHERE id = ?", consolidated) == [(0,)]
    assert daemon.query("SELECT count(*) FROM consolidations WHERE event_id = ?", consolidated) == [(0,)]
    assert daemon.query("SELECT count(*) FROM consolidation_sources WHERE consolidation_id = ?", consolidated) == [(0,)]


def test_forgetting_a_task_rebuilds_the_tasks(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    todos = {"todos": [{"content": "Ship the secret feature", "status": "pending", "activeForm": "Shipping"}]}
    task_event = _event(
        daemon, "PostToolUse", "s1", cwd, tool_name="TodoWrite", tool_input=todos, tool_response={}, tool_use_id="t1"
    )
    assert daemon.query("SELECT count(*) FROM tasks") == [(1,)]
    daemon.call(Forget(ids=[str(task_event)]), Forgotten)
    assert daemon.query("SELECT count(*) FROM tasks") == [(0,)]
    assert daemon.query("SELECT count(*) FROM task_history") == [(0,)]


def test_remember_and_sessions(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    kept = daemon.call(Remember(text="Deploys go through the blue/green script", cwd=cwd, session="s9"), Remembered)
    assert kept.cite and not kept.duplicate
    listed = daemon.call(Sessions(cwd=cwd), SessionList)
    assert [s.id for s in listed.sessions] == ["s9"] and listed.scope == cwd
    assert daemon.call(Sessions(), SessionList).scope is None
    assert daemon.call(Sessions(project="no-such-project"), SessionList).sessions == []


def test_memctl_forget_asks_first(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    event_id = _event(daemon, "UserPromptSubmit", "s1", cwd, prompt="Forget me soon")
    listed = daemon.memctl("forget", str(event_id), "--dry-run")
    assert listed.returncode == 0 and "would forget 1 memories" in listed.stdout and "Forget me soon" in listed.stdout
    refused = daemon.memctl("forget", str(event_id))  # no terminal, no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert daemon.query("SELECT count(*) FROM events WHERE id = ?", event_id) == [(1,)]
    done = daemon.memctl("forget", str(event_id), "--yes")
    assert done.returncode == 0 and done.stdout.startswith("forgot 1 memories")
    assert daemon.query("SELECT count(*) FROM events WHERE id = ?", event_id) == [(0,)]
    nothing = daemon.memctl("forget", "mem:nope00", "--yes")
    assert nothing.returncode == 1 and "no memory 'mem:nope00'" in nothing.stderr
    sessions = daemon.memctl("sessions", "--all-projects")
    assert sessions.returncode == 0 and "latest sessions of all projects" in sessions.stdout
