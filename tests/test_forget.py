"""Forgetting (``memctl forget``, MCP ``mem_forget``) by id, session, date or words: the
memory leaves every store and the files, what repeats it is recomputed, spooled frames
that would bring it back go too, and only an audit row without content remains."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from conftest import Instance

from memd.protocol import (
    Details,
    DetailsResult,
    Forget,
    Forgotten,
    Ingest,
    Ingested,
    Remember,
    Remembered,
    SessionList,
    Sessions,
    encode_frame,
)
from memd_client.rpc import DaemonError
from memd_wire.spool import spool

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


def _ingest(event: str, session: str, cwd: str, age_days: float = 0.0, **fields: object) -> Ingest:
    payload = {"session_id": session, "cwd": cwd, "hook_event_name": event, "transcript_path": "/dev/null", **fields}
    sent = time.time_ns() - int(age_days * 86400e9)
    return Ingest(event=event, sent_at_ns=sent, payload=json.dumps(payload).encode())


def _event(instance: Instance, event: str, session: str, cwd: str, age_days: float = 0.0, **fields: object) -> int:
    return instance.call(_ingest(event, session, cwd, age_days, **fields), Ingested).event_id


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
    stored = "SELECT vector FROM vectors WHERE event_id = ?"
    secret_vectors = [row[0] for row in embedded.query(stored, secret)]
    kept_vectors = [row[0] for row in embedded.query(stored, kept)]
    digests = "SELECT v.vector FROM vectors v JOIN events e ON e.id = v.event_id WHERE e.session_id = 's1'" \
        " AND e.kind IN ('session_summary', 'snapshot')"  # fmt: skip
    digest_vectors = [row[0] for row in embedded.query(digests)]  # they quote the secret too
    assert secret_vectors and kept_vectors and digest_vectors

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
    # usearch keeps a removed vector in its slot; memd overwrites the slot before saving.
    (index_file,) = Path(embedded.paths.data_dir, "vectors").glob("vectors-*.usearch")
    saved = index_file.read_bytes()
    assert all(vector in saved for vector in kept_vectors)
    assert not any(vector in saved for vector in secret_vectors)
    assert not any(vector in saved for vector in digest_vectors)  # the recomputed summary's old vectors went too
    embedded.wait_embedded()  # the new summary and snapshot: then memory and SQLite hold the same vectors
    live = embedded.status().embedding
    assert live is not None and live.index_vectors == live.stored_vectors
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
    assert listed.returncode == 0 and "would forget 1 memory" in listed.stdout and "Forget me soon" in listed.stdout
    refused = daemon.memctl("forget", str(event_id))  # no terminal, no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert daemon.query("SELECT count(*) FROM events WHERE id = ?", event_id) == [(1,)]
    done = daemon.memctl("forget", str(event_id), "--yes")
    assert done.returncode == 0 and done.stdout.startswith("forgot 1 memory ")
    assert daemon.query("SELECT count(*) FROM events WHERE id = ?", event_id) == [(0,)]
    nothing = daemon.memctl("forget", "mem:nope00", "--yes")
    assert nothing.returncode == 1 and "no memory 'mem:nope00'" in nothing.stderr
    sessions = daemon.memctl("sessions", "--all-projects")
    assert sessions.returncode == 0 and "latest sessions of all projects" in sessions.stdout


# --- selectors ------------------------------------------------------------------------------

SECRET = "qzxvault4417"
"""A word no other text has: its bytes are looked for in the files."""
HANGUL = "흙뿅꿺"
"""A Korean word no other text has, for the trigram index."""


def _files(instance: Instance) -> bytes:
    """The database file and its WAL, as bytes."""
    data = b""
    for suffix in ("", "-wal"):
        if os.path.exists(instance.paths.database + suffix):
            with open(instance.paths.database + suffix, "rb") as f:
                data += f.read()
    return data


def _old_session(instance: Instance, cwd: str) -> dict[str, int]:
    """A session of 30 days ago that was told a secret: in a prompt (with Korean), a task, a reply."""
    todos = {"todos": [{"content": f"Rotate the {SECRET} key", "status": "pending", "activeForm": "Rotating"}]}
    prompt = f"The vault codename is {SECRET}, {HANGUL}를 잊지 마"
    ids = {
        "prompt": _event(instance, "UserPromptSubmit", "s-old", cwd, 30, prompt=prompt),
        "task": _event(instance, "PostToolUse", "s-old", cwd, 30, tool_name="TodoWrite", tool_input=todos,
                       tool_response={}, tool_use_id="t-old"),
        "reply": _event(instance, "Stop", "s-old", cwd, 30, last_assistant_message=f"Noted: {SECRET}."),
    }  # fmt: skip
    _event(instance, "SessionEnd", "s-old", cwd, 30, reason="exit")
    return ids


SELECTORS = {
    "session": lambda cwd: Forget(session="s-old"),
    "before": lambda cwd: Forget(before=time.time() - 10 * 86400, cwd=cwd),
    "query": lambda cwd: Forget(query=SECRET, cwd=cwd),
}


@pytest.mark.parametrize("selector", sorted(SELECTORS))
def test_each_selector_forgets_from_every_store_and_the_files(embedded: Instance, selector: str) -> None:
    cwd = f"{embedded.root}/proj"
    os.makedirs(cwd)
    kept = _event(embedded, "UserPromptSubmit", "s-new", cwd, prompt="Refactor the payment module into services")
    _event(embedded, "SessionEnd", "s-new", cwd, reason="exit")
    old = _old_session(embedded, cwd)
    embedded.wait_embedded()
    said = f"The vault codename is {SECRET}"
    assert old["prompt"] in [hit.id for hit in embedded.search(said, all_projects=True, lanes=["vector"]).results]
    (cite,) = embedded.query("SELECT cite FROM citations WHERE event_id = ?", old["prompt"])[0]
    assert SECRET.encode() in _files(embedded) and HANGUL.encode() in _files(embedded)
    indexed = embedded.status().embedding.index_vectors  # type: ignore[union-attr]

    request = SELECTORS[selector](cwd)
    preview = embedded.call(msgspec.structs.replace(request, dry_run=True), Forgotten)
    listed = [e.id for e in preview.events]
    assert set(old.values()) <= set(listed) and kept not in listed and preview.total == len(listed)
    assert preview.selector == selector
    reply = embedded.call(request, Forgotten)
    assert [e.id for e in reply.events] == listed  # exactly what the dry run listed

    # Gone from the log and every table that repeats it: summaries, snapshots, tasks, sessions.
    like = f"%{SECRET}%"
    assert embedded.query("SELECT count(*) FROM events WHERE text LIKE ? OR title LIKE ? OR meta LIKE ?"
                          " OR payload LIKE ?", *[like] * 4) == [(0,)]  # fmt: skip
    assert embedded.query("SELECT count(*) FROM tasks WHERE content LIKE ?", like) == [(0,)]
    assert embedded.query("SELECT count(*) FROM sessions WHERE summary LIKE ?", like) == [(0,)]
    # From keyword, trigram and vector search, and from citation resolution.
    assert embedded.search(SECRET, all_projects=True).results == []
    assert embedded.search(HANGUL, all_projects=True).results == []
    found = embedded.search(said, all_projects=True, lanes=["vector"]).results
    assert not {hit.id for hit in found} & set(old.values())
    assert embedded.status().embedding.index_vectors == indexed - reply.vectors  # type: ignore[union-attr]
    assert embedded.call(Details(ids=[f"mem:{cite}"]), DetailsResult).missing == [f"mem:{cite}"]
    assert embedded.query("SELECT count(*) FROM events WHERE id = ?", kept) == [(1,)]

    # From the files: no byte of it in the database or its WAL, nor in the index segments.
    files = _files(embedded)
    assert SECRET.encode() not in files and HANGUL.encode() not in files
    suffix = SECRET[3:].encode()  # FTS5 stores a term after the prefix it shares with the one before
    assert embedded.query("SELECT count(*) FROM events_fts_data WHERE instr(block, ?)", suffix) == [(0,)]
    assert embedded.query("SELECT count(*) FROM events_cjk_data WHERE instr(block, ?)", HANGUL[-1].encode()) == [(0,)]
    with open(embedded.paths.log_file, "rb") as log:
        assert SECRET.encode() not in log.read()
    assert embedded.query("SELECT selector, events FROM forget_log") == [(selector, reply.total)]


def test_forget_by_query_needs_every_word_and_looks_in_one_project(daemon: Instance) -> None:
    cwd, elsewhere = f"{daemon.root}/proj", f"{daemon.root}/other"
    both = _event(daemon, "UserPromptSubmit", "s1", cwd, prompt="Deploy the billing service to staging")
    stemmed = _event(daemon, "UserPromptSubmit", "s1", cwd, prompt="billing deploys are staged on Fridays")
    _event(daemon, "UserPromptSubmit", "s1", cwd, prompt="Deploy the frontend")  # one word only
    other = _event(daemon, "UserPromptSubmit", "s2", elsewhere, prompt="deploy billing from the other repo")
    # Read keeps a file's first 20 lines as searchable text; the stored record keeps more.
    content = "\n".join([f"line {n}" for n in range(50)] + [f"the build tag is {SECRET}-live"])
    deep = _event(daemon, "PostToolUse", "s1", cwd, tool_name="Read", tool_input={"file_path": f"{cwd}/cfg.py"},
                  tool_response={"file": {"content": content}}, tool_use_id="r1")  # fmt: skip

    here = daemon.call(Forget(query="deploy billing", cwd=cwd, dry_run=True), Forgotten)
    assert [e.id for e in here.events] == [both, stemmed] and here.scope == cwd and here.kinds == {"prompt": 2}
    everywhere = daemon.call(Forget(query="deploy billing", all_projects=True, dry_run=True), Forgotten)
    assert [e.id for e in everywhere.events] == [both, stemmed, other] and everywhere.scope is None
    assert daemon.search(f"{SECRET}-live", all_projects=True).results == []  # not in the index...
    verbatim = daemon.call(Forget(query=f"{SECRET}-live", cwd=cwd, dry_run=True), Forgotten)
    assert [e.id for e in verbatim.events] == [deep]  # ...but in the record, and it goes
    part = daemon.call(Forget(query=SECRET[:-2], cwd=cwd, dry_run=True), Forgotten)
    assert part.events == []  # a whole word, not a piece of one


def test_one_selector_at_a_time(daemon: Instance) -> None:
    for request, says in (
        (Forget(), "say what to forget"),
        (Forget(ids=["1"], query="x"), "not ids and query"),
        (Forget(session="s", before=1.0), "not session and before"),
        (Forget(query=" ,; "), "no words"),
    ):
        with pytest.raises(DaemonError, match=says):
            daemon.call(request, Forgotten)
    assert daemon.memctl("forget", "--dry-run").returncode == 2
    assert daemon.memctl("forget", "1", "--query", "x").returncode == 2


def test_spooled_frames_of_the_selection_go_too(instance: Instance) -> None:
    instance.configure("[daemon]\nspool_drain_interval = 3600.0\n")  # the frames wait for the next start
    instance.start()
    instance.wait_for(lambda: bool(instance.logged("spool_checked_at_start")))  # past the drain at start
    cwd = f"{instance.root}/proj"
    os.makedirs(cwd)
    for frame in (
        _ingest("UserPromptSubmit", "s-gone", cwd, prompt="a prompt of a session to forget"),
        _ingest("UserPromptSubmit", "s-kept", cwd, prompt=f"the codename is {SECRET} today"),
        _ingest("UserPromptSubmit", "s-kept", cwd, 30, prompt="an old prompt"),
        _ingest("UserPromptSubmit", "s-kept", cwd, prompt="nothing to hide"),
    ):
        spool(instance.paths.spool_dir, encode_frame(frame))
    assert len(instance.spooled()) == 4
    selectors = (Forget(session="s-gone"), Forget(query=SECRET, cwd=cwd), Forget(before=time.time() - 86400, cwd=cwd))
    for done, request in enumerate(selectors):
        assert instance.call(msgspec.structs.replace(request, dry_run=True), Forgotten).spooled == 1
        assert len(instance.spooled()) == 4 - done  # a dry run deletes nothing
        reply = instance.call(request, Forgotten)
        assert reply.spooled == 1 and reply.total == 0
    assert len(instance.spooled()) == 1
    assert instance.stop() == 0
    instance.start()  # drains the spool
    instance.wait_for(lambda: not instance.spooled())
    assert instance.query("SELECT text FROM events WHERE kind = 'prompt'") == [("nothing to hide",)]


def test_a_forgotten_task_leaves_the_other_sessions_snapshots(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    todos = {"todos": [{"content": f"Ship the {SECRET} feature", "status": "pending", "activeForm": "Shipping"}]}
    task = _event(daemon, "PostToolUse", "s1", cwd, tool_name="TodoWrite", tool_input=todos, tool_response={},
                  tool_use_id="t1")  # fmt: skip
    _event(daemon, "UserPromptSubmit", "s2", cwd, prompt="Carry on with the release")
    _event(daemon, "SessionEnd", "s2", cwd, reason="exit")
    snapshot = "SELECT text FROM events WHERE kind = 'snapshot' AND session_id = 's2'"
    assert SECRET in daemon.query(snapshot)[0][0]  # a snapshot lists the project's open tasks
    reply = daemon.call(Forget(ids=[str(task)]), Forgotten)
    assert reply.refreshed == 2  # s1 (gone: nothing left) and s2 (recomputed)
    assert daemon.query(snapshot) and SECRET not in daemon.query(snapshot)[0][0]


def test_memctl_forget_by_query(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    ids = [_event(daemon, "UserPromptSubmit", "s1", cwd, prompt=f"note {n}: the {SECRET} rotation") for n in range(45)]
    listed = subprocess.run([*daemon.memctl_argv(), "forget", "--query", SECRET, "--dry-run"], cwd=cwd,
                            capture_output=True, text=True, env=daemon.env, timeout=60)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith(f"would forget 45 memories (45 prompt):\nin {cwd}\n")
    assert "… and 5 more (--json lists the first 45)" in listed.stdout
    elsewhere = daemon.memctl("forget", "--query", SECRET, "--project", "no-such-project", "--yes")
    assert elsewhere.returncode == 1 and "nothing to forget: no memory matches in no-such-project" in elsewhere.stderr
    done = daemon.memctl("forget", "--query", SECRET, "--all-projects", "--yes", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["total"] == 45
    assert daemon.query("SELECT count(*) FROM events WHERE id IN (?, ?)", ids[0], ids[-1]) == [(0,)]


def test_mem_forget_takes_the_selectors() -> None:
    from memd_client.mcp.arguments import ForgetArgs
    from memd_client.mcp.tools import Context, tools

    sent: list[Forget] = []

    def call(request: Forget, expect: type) -> Forgotten:
        sent.append(request)
        return Forgotten(events=[], dry_run=request.dry_run)

    forget = next(t for t in tools(Context(call, "/work/proj", "s1")) if t.name == "mem_forget")
    assert forget.run(ForgetArgs(query="vault key", dry_run=True)) == "Nothing to delete."
    assert forget.run(ForgetArgs(before="90d")) == "Nothing was deleted."
    assert sent[0].query == "vault key" and sent[0].cwd == "/work/proj" and not sent[0].all_projects
    assert sent[1].before is not None and abs(sent[1].before - (time.time() - 90 * 86400)) < 60


def test_a_forgotten_citation_id_never_names_another_memory(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    last = _event(daemon, "UserPromptSubmit", "s1", cwd, prompt="The newest event, forgotten next")
    (cite,) = daemon.query("SELECT cite FROM citations WHERE event_id = ?", last)[0]
    daemon.call(Forget(ids=[str(last)]), Forgotten)
    again = _event(daemon, "UserPromptSubmit", "s1", cwd, prompt="A new event in its place")
    assert again == last  # SQLite hands the highest rowid out again...
    (new_cite,) = daemon.query("SELECT cite FROM citations WHERE event_id = ?", again)[0]
    assert new_cite != cite  # ...but not its citation id
    assert daemon.memctl("show", f"mem:{cite}").returncode == 1
