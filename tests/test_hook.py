"""The real hook client against a real daemon: events stored once, bad input harmless, spool."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import HOOK_FILE, PYTHON, Instance, hook_fixtures, stored_fixtures

import memd_wire
from memd.protocol import Events, History

DEADLINE = 10.0  # generous wall bound for one hook process on a loaded 2-core CI machine


def payload(n: int, session: str = "sess-storm") -> bytes:
    return (
        json.dumps(
            {
                "session_id": session,
                "transcript_path": "/tmp/t.jsonl",
                "cwd": "/tmp/project-storm",
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": f"echo {n}"},
                "tool_response": {"stdout": str(n), "stderr": "", "interrupted": False},
                "tool_use_id": f"toolu_storm_{n:06d}",
            },
            separators=(",", ":"),
        ).encode()
        + b"\n"
    )


def stored_keys(inst: Instance) -> list[str]:
    return [row[0] for row in inst.query("SELECT idem_key FROM events")]


def test_every_fixture_is_stored_once_even_when_replayed(daemon: Instance) -> None:
    files = hook_fixtures()
    outputs: list[list[str]] = [[], []]
    for replay in range(2):
        for path in files:
            data = json.loads(path.read_bytes())
            result = daemon.hook(data["hook_event_name"], path.read_bytes())
            assert result.returncode == 0, result.stderr
            if result.stdout:  # context, for the two events that may have it, and only once
                assert data["hook_event_name"] in ("SessionStart", "UserPromptSubmit"), result.stdout
                output = json.loads(result.stdout)["hookSpecificOutput"]
                assert output["hookEventName"] == data["hook_event_name"]
                assert output["additionalContext"].startswith("<memory-context")
                outputs[replay].append(output["additionalContext"])
    assert outputs[0] and not outputs[1]  # a hook that fires twice gets its context once
    assert daemon.spooled() == []
    rows = daemon.query(
        "SELECT kind, payload FROM events WHERE kind NOT IN ('session_summary', 'snapshot') ORDER BY id"
    )
    kept = stored_fixtures()
    assert len(rows) == len(kept)
    assert sorted(json.loads(p)["hook_event_name"] for _, p in rows) == sorted(
        json.loads(f.read_bytes())["hook_event_name"] for f in kept
    )
    assert daemon.status().events == len(kept)


def test_empty_stdin_exits_at_once_and_stores_nothing(daemon: Instance) -> None:
    started = time.monotonic()
    result = daemon.hook("PostToolUse", b"")
    assert result.returncode == 0 and result.stdout == b""
    assert time.monotonic() - started < DEADLINE
    assert daemon.status().events == 0 and daemon.spooled() == []


def test_stdin_never_closed_is_bounded(daemon: Instance) -> None:
    import subprocess

    from conftest import PYTHON

    r, w = os.pipe()
    try:
        os.write(w, b'{"session_id":"open","hook_event_name":"Stop","cwd":"/tmp"}\n')
        started = time.monotonic()
        result = subprocess.run(
            [PYTHON, "-I", "-S", HOOK_FILE, "Stop"], stdin=r, capture_output=True, env=daemon.env, timeout=30
        )
        elapsed = time.monotonic() - started
    finally:
        os.close(r)
        os.close(w)
    assert result.returncode == 0
    assert elapsed < DEADLINE
    assert daemon.status().events == 1


def test_invalid_json_is_refused_recorded_and_not_spooled(daemon: Instance) -> None:
    result = daemon.hook("PostToolUse", b"{this is not json\n")
    assert result.returncode == 0 and result.stdout == b""
    assert b"not a JSON object" in result.stderr
    status = daemon.status()
    assert (status.events, status.rejected, status.spool_backlog) == (0, 1, 0)
    assert daemon.query("SELECT event, reason LIKE '%JSON%' FROM rejections") == [("PostToolUse", 1)]


def test_twenty_megabyte_payload_is_kept_as_a_truncated_event(daemon: Instance) -> None:
    big = json.loads(payload(1))
    big["tool_response"]["stdout"] = "y" * (20 * 1024 * 1024)
    raw = json.dumps(big, separators=(",", ":")).encode() + b"\n"
    started = time.monotonic()
    result = daemon.hook("PostToolUse", raw)
    assert result.returncode == 0
    assert time.monotonic() - started < DEADLINE
    (row,) = daemon.query("SELECT size, truncated, payload, tool FROM events")
    size, truncated, stored, tool = row
    assert (size, truncated, tool) == (len(raw), 1, "Bash")
    assert json.loads(stored)["tool_use_id"] == "toolu_storm_000001"
    assert daemon.call(History(), Events).events[0].size == len(raw)  # daemon unharmed


def test_concurrent_hook_clients_store_every_event_once(daemon: Instance) -> None:
    clients, per_client = 32, 40  # bench/load.py holds the heavier loads
    total = clients * per_client

    def client(c: int) -> None:
        for i in range(per_client):
            assert daemon.hook("PostToolUse", payload(c * per_client + i)).returncode == 0

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    # Hooks that timed out under load spooled their frame; the daemon drains it.
    daemon.wait_for(lambda: not daemon.spooled(), timeout=60)
    keys = stored_keys(daemon)
    assert len(keys) == len(set(keys)) == total
    assert daemon.query("SELECT events FROM sessions") == [(total,)]


def test_daemon_down_hook_spools_fast_then_start_drains(instance: Instance) -> None:
    started = time.monotonic()
    for n in range(5):
        assert instance.hook("PostToolUse", payload(n)).returncode == 0
    assert time.monotonic() - started < 5 * DEADLINE
    spooled = instance.spooled()
    assert len(spooled) == 5
    spool_dir = instance.paths.spool_dir
    assert stat.S_IMODE(os.stat(spool_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(instance.paths.state_dir).st_mode) == 0o700  # its parent too
    assert {stat.S_IMODE(os.stat(os.path.join(spool_dir, f)).st_mode) for f in spooled} == {0o600}

    instance.start()
    instance.wait_for(lambda: not instance.spooled())
    assert sorted(stored_keys(instance)) == sorted(f"PostToolUse:tool:toolu_storm_{n:06d}" for n in range(5))
    assert instance.stop() == 0


def test_kill_9_in_a_storm_loses_nothing(instance: Instance) -> None:
    instance.start()
    total, killed_at = 600, 200
    sent = 0

    def send(n: int) -> None:
        assert instance.hook("PostToolUse", payload(n)).returncode == 0

    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(send, n) for n in range(killed_at)]
        while sum(f.done() for f in futures) < killed_at // 2:
            time.sleep(0.01)
        instance.kill()  # mid-storm: some in flight, some acknowledged, some not yet sent
        futures += [pool.submit(send, n) for n in range(killed_at, total)]
        for f in futures:
            f.result()
            sent += 1
    assert sent == total
    instance.start()
    instance.wait_for(lambda: not instance.spooled(), timeout=60)
    keys = stored_keys(instance)
    assert len(keys) == len(set(keys)) == total
    assert instance.stop() == 0


def test_corrupt_and_stale_spool_files_do_not_block_the_drain(instance: Instance) -> None:
    assert instance.hook("PostToolUse", payload(1)).returncode == 0
    spool_dir = instance.paths.spool_dir
    with open(os.path.join(spool_dir, "00000000000000000001-1-bad.frame"), "wb") as f:
        f.write(b"\x00\x00\x00\x10garbage")
    stale = os.path.join(spool_dir, ".tmp-abandoned")
    with open(stale, "wb") as f:
        f.write(b"partial")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    instance.start()
    instance.wait_for(lambda: not instance.spooled())
    assert instance.status().events == 1
    assert instance.status().rejected == 1
    assert not os.path.exists(stale)
    # never an event: set aside at once, kept for the user to look at (doctor and memctl spool say so)
    assert os.listdir(os.path.join(spool_dir, "failed")) == ["00000000000000000001-1-bad.frame"]
    assert instance.status().spool_failed == 1
    assert instance.stop() == 0


def test_a_spooled_event_that_keeps_failing_is_set_aside_then_retried(instance: Instance) -> None:
    import sqlite3

    instance.configure("[daemon]\nspool_drain_interval = 0.1\n")
    instance.start()
    assert instance.stop() == 0  # the database exists, migrated
    conn = sqlite3.connect(instance.paths.database)
    conn.execute(  # a real SQLite failure for this one event, as a memd bug would give
        "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN new.session_id = 's-bad'"
        " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    conn.close()
    bad = json.dumps({**json.loads(payload(2)), "session_id": "s-bad"}).encode()
    assert instance.hook("PostToolUse", payload(1)).returncode == 0  # spooled: the daemon is down
    assert instance.hook("PostToolUse", bad).returncode == 0
    aside = os.path.join(instance.paths.spool_dir, "failed")
    instance.start()
    instance.wait_for(lambda: not instance.spooled())
    (name,) = os.listdir(aside)  # after 3 failed replays, counted in its name
    assert name.endswith(".tries3.frame")
    assert instance.status().events == 1 and instance.status().spool_failed == 1
    assert instance.status().quarantined == 3  # each try, with its reason
    assert "spool_file_set_aside" in instance.stderr() and "refused by the test" in instance.stderr()
    listed = json.loads(instance.memctl("spool", "--json").stdout)
    assert listed["pending"] == 0 and listed["failed"] == [name]
    doctor = json.loads(instance.memctl("doctor", "--json").stdout)
    (finding,) = [f for f in doctor["checks"] if f["name"] == "spool" and f["level"] == "warn"]
    assert "1 spooled event was set aside" in finding["message"] and "memctl spool retry" in finding["fix"]
    refused = instance.memctl("spool", "delete")  # not a terminal: refuses without --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr and os.listdir(aside) == [name]

    conn = sqlite3.connect(instance.paths.database)
    conn.execute("DROP TRIGGER refuse")  # the upgrade that fixes the cause
    conn.close()
    assert "put 1 frame back" in instance.memctl("spool", "retry").stdout
    instance.wait_for(lambda: instance.status().events == 2)
    assert os.listdir(aside) == [] and not instance.spooled()
    assert instance.stop() == 0


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_context_events_print_nothing_without_context(daemon: Instance, event: str) -> None:
    name = f"hook_{event}.json"
    (path,) = [p for p in hook_fixtures() if p.name == name]
    result = daemon.hook(event, path.read_bytes())
    assert (result.returncode, result.stdout) == (0, b"")
    assert daemon.status().events == 1


def test_sigterm_in_a_storm_exits_zero_and_loses_nothing(instance: Instance) -> None:
    instance.start()
    total = 300

    def send(n: int) -> None:
        assert instance.hook("PostToolUse", payload(n)).returncode == 0

    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(send, n) for n in range(total)]
        while sum(f.done() for f in futures) < total // 3:
            time.sleep(0.01)
        assert instance.stop() == 0  # graceful: in-flight requests finish, the writer flushes
        for f in futures:
            f.result()
    acknowledged = len(stored_keys(instance))
    assert acknowledged >= total // 3
    assert acknowledged + len(instance.spooled()) >= total  # the rest waits in the spool
    instance.start()
    instance.wait_for(lambda: not instance.spooled(), timeout=60)
    keys = stored_keys(instance)
    assert len(keys) == len(set(keys)) == total
    assert instance.stop() == 0


def test_nowhere_to_spool_still_exits_zero_and_says_why(instance: Instance, tmp_path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    result = instance.hook("PostToolUse", payload(1), env={"XDG_STATE_HOME": str(blocker)})
    assert (result.returncode, result.stdout) == (0, b"")
    assert b"event not handed over or spooled" in result.stderr
    assert b"echo 1" not in result.stderr  # no content in diagnostics


def test_an_unclosed_private_tag_is_redacted_to_the_end_and_the_user_told(daemon: Instance) -> None:
    prompt = "deploy it <private>the vault code is 7781-alpha and the rest of this prompt"
    payload = {"session_id": "s", "cwd": "/tmp/p", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    result = daemon.hook("UserPromptSubmit", json.dumps(payload).encode())
    assert result.returncode == 0
    output = json.loads(result.stdout)
    assert "never closed" in output["systemMessage"] and "hookSpecificOutput" not in output
    ((text,),) = daemon.query("SELECT text FROM events")
    assert text.startswith("deploy it") and "7781" not in text
    again = daemon.hook("UserPromptSubmit", json.dumps(payload).encode())  # a repeated hook: told once
    assert again.stdout == b""


@pytest.mark.parametrize(("event", "nice"), [("PostToolUse", 19), ("PostToolUseFailure", 19), ("UserPromptSubmit", 0)])
def test_the_asynchronous_tool_hooks_yield_the_cpu(instance: Instance, event: str, nice: int) -> None:
    """Claude Code waits for no tool hook of memd's: their client runs at the lowest priority,
    the others at their usual one (the daemon is down here: the event is spooled, not lost)."""
    probe = (
        "import os, sys; sys.path.insert(0, sys.argv[1]); import handoff;"
        "handoff.run(['hook', sys.argv[2]]); print(os.getpriority(os.PRIO_PROCESS, 0))"
    )
    body = json.dumps({"session_id": "s-nice", "hook_event_name": event, "tool_use_id": "t1", "prompt": "x"})
    done = subprocess.run(
        [PYTHON, "-I", "-S", "-c", probe, os.path.dirname(memd_wire.__file__), event],
        input=body.encode(), capture_output=True, env=instance.env, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.decode().split()[-1]) == nice + os.getpriority(os.PRIO_PROCESS, 0)
    assert len(instance.spooled()) == 1
