"""A hook that finds no daemon spools its event and starts one: detached, one per burst,
never with MEMD_AUTOSTART=0, never a hung hook; and the rules behind it, one by one."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import HOOK_FILE, PYTHON, Instance

from memd.instance import holder
from memd.protocol import Ping, Pong
from memd_client.rpc import DaemonUnavailable
from memd_wire import autostart, frame
from memd_wire.paths import Paths, resolve

DEADLINE = 10.0  # generous wall bound for one hook process on a loaded 2-core CI machine
BOOT_DEADLINE = 60.0  # a daemon's start, with the suite's other daemons competing for the CPU
BURST = 8

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds daemons through /proc")


def payload(n: int) -> bytes:
    body = {
        "session_id": "sess-autostart",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp/project-autostart",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"echo {n}"},
        "tool_response": {"stdout": str(n), "stderr": "", "interrupted": False},
        "tool_use_id": f"toolu_autostart_{n:03d}",
    }
    return json.dumps(body).encode() + b"\n"


def stored_keys(inst: Instance) -> list[str]:
    try:
        return sorted(row[0] for row in inst.query("SELECT idem_key FROM events WHERE kind = 'tool'"))
    except Exception:  # no database yet: the daemon is still creating it
        return []


def expected_keys(numbers: range) -> list[str]:
    return sorted(f"PostToolUse:tool:toolu_autostart_{n:03d}" for n in numbers)


def daemon_pids(inst: Instance) -> set[int]:
    """Live ``python -m memd`` processes of this test's instance, whoever their parent.

    A daemon started by a hook is nobody's child here (the hook exits, init adopts it), so
    it is found by its command line and its environment; a zombie has no command line."""
    marker = f"XDG_STATE_HOME={inst.env['XDG_STATE_HOME']}".encode()
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"\0-m\0memd\0" not in f.read():
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    pids.add(int(entry))
        except OSError:  # gone meanwhile
            continue
    return pids


def answering(inst: Instance) -> bool:
    try:
        inst.call(Ping(), Pong)
        return True
    except DaemonUnavailable:
        return False


@pytest.fixture
def autostarting(instance: Instance) -> Iterator[Instance]:
    """An instance whose hooks may start its daemon; every daemon they started is stopped after."""
    instance.env["MEMD_AUTOSTART"] = "1"  # whatever the suite's default
    yield instance
    instance.memctl("daemon", "stop")  # graceful, for the one that answers
    deadline = time.monotonic() + 30
    while pids := daemon_pids(instance):  # any other: still booting, or failing to
        assert time.monotonic() < deadline, f"daemons left running: {pids}"
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        time.sleep(0.1)


# --- the hook client, for real ---------------------------------------------------------


@needs_proc
def test_a_hook_finding_no_daemon_spools_its_event_and_starts_one(autostarting: Instance) -> None:
    inst = autostarting
    started = time.monotonic()
    # capture_output: run() returns only once every holder of the hook's stdout and stderr
    # has closed them, so a daemon that kept them would hold this (and Claude Code) up.
    result = inst.hook("PostToolUse", payload(1), timeout=DEADLINE)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert time.monotonic() - started < DEADLINE

    inst.wait_for(lambda: answering(inst), timeout=BOOT_DEADLINE)
    inst.wait_for(lambda: stored_keys(inst) == expected_keys(range(1, 2)), timeout=BOOT_DEADLINE)
    inst.wait_for(lambda: inst.spooled() == [], timeout=BOOT_DEADLINE)  # deleted just after its commit

    def drained() -> bool:  # logged once the whole drain is done, after the file's deletion
        with open(inst.paths.log_file) as f:
            return any(json.loads(line)["event"] == "spool_drained" for line in f)

    inst.wait_for(drained, timeout=BOOT_DEADLINE)  # it came through the spool

    (pid,) = daemon_pids(inst)
    assert holder(inst.paths.lock_file)["pid"] == pid
    assert os.getsid(pid) == pid  # its own session: no signal for Claude Code's process group reaches it
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    assert {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1)} == {"/dev/null"}
    stamp = os.path.join(inst.paths.state_dir, autostart.STAMP_FILE)
    assert oct(os.stat(stamp).st_mode & 0o777) == "0o600"

    assert inst.hook("PostToolUse", payload(2)).returncode == 0  # up now: handed over, nothing spooled
    assert stored_keys(inst) == expected_keys(range(1, 3)) and inst.spooled() == []
    assert daemon_pids(inst) == {pid}


@needs_proc
def test_a_burst_of_hooks_starts_exactly_one_daemon(autostarting: Instance) -> None:
    inst = autostarting
    seen: set[int] = set()
    looks = [0]  # the watcher's passes so far
    done = threading.Event()

    def watch() -> None:  # a daemon that lost the instance lock lives a second at least: seen
        while not done.is_set():
            seen.update(daemon_pids(inst))
            looks[0] += 1
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(BURST) as pool:
            results = list(pool.map(lambda n: inst.hook("PostToolUse", payload(n), timeout=DEADLINE), range(BURST)))
        assert [r.returncode for r in results] == [0] * BURST
        inst.wait_for(lambda: answering(inst), timeout=BOOT_DEADLINE)
        inst.wait_for(lambda: stored_keys(inst) == expected_keys(range(BURST)), timeout=BOOT_DEADLINE)
        # Every hook has returned, and a hook starts its daemon before it returns: two passes of
        # the watcher from now see any daemon a hook started, a second one included.
        after = looks[0]
        inst.wait_for(lambda: looks[0] >= after + 2)
    finally:
        done.set()
        watcher.join()
    assert seen == {holder(inst.paths.lock_file)["pid"]}
    with open(os.path.join(inst.paths.state_dir, autostart.ERRORS_FILE)) as f:
        assert "already running" not in f.read()


@needs_proc
def test_memd_autostart_0_leaves_the_daemon_down(instance: Instance) -> None:
    result = instance.hook("PostToolUse", payload(1), env={"MEMD_AUTOSTART": "0"})
    assert (result.returncode, result.stderr) == (0, b"")
    assert len(instance.spooled()) == 1
    # Popen returns once the daemon's exec has succeeded: had one been launched, it would be here.
    assert daemon_pids(instance) == set()
    assert not os.path.exists(os.path.join(instance.paths.state_dir, autostart.STAMP_FILE))
    assert not answering(instance)


@needs_proc
def test_a_socket_no_daemon_can_bind_still_exits_zero_at_once(autostarting: Instance) -> None:
    inst = autostarting
    nowhere = "/proc/memd-nowhere/memd.sock"  # not even root can make a directory in /proc
    started = time.monotonic()
    result = subprocess.run(
        [PYTHON, "-I", "-S", HOOK_FILE, "PostToolUse", "--socket", nowhere],
        input=payload(1),
        capture_output=True,
        env=inst.env,
        timeout=DEADLINE,
    )
    assert (result.returncode, result.stdout) == (0, b"")
    assert time.monotonic() - started < DEADLINE
    assert len(inst.spooled()) == 1  # kept for a daemon that can run
    errors = os.path.join(inst.paths.state_dir, autostart.ERRORS_FILE)

    def failed_and_said_why() -> bool:  # the launched daemon got the same --socket, and could not bind it
        with open(errors) as f:
            return "memd-nowhere" in f.read() and not daemon_pids(inst)

    inst.wait_for(failed_and_said_why, timeout=BOOT_DEADLINE)
    again = subprocess.run(
        [PYTHON, "-I", "-S", HOOK_FILE, "PostToolUse", "--socket", nowhere],
        input=payload(2),
        capture_output=True,
        env=inst.env,
        timeout=DEADLINE,
    )
    assert again.returncode == 0 and daemon_pids(inst) == set()  # within the interval: no second attempt


# --- start_daemon in process, as the MCP server calls it --------------------------------


def zombie_children() -> list[int]:
    zombies = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == os.getpid():
                zombies.append(int(entry))
    return zombies


@pytest.fixture
def where(tmp_path) -> Paths:  # type: ignore[no-untyped-def]
    return resolve(
        socket=str(tmp_path / "memd.sock"),
        env={"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "MEMD_DATA_DIR": str(tmp_path / "d")},
    )


@needs_proc
def test_in_process_it_launches_once_per_interval_and_leaves_no_zombie(where: Paths) -> None:
    env = {"PATH": "/usr/bin:/bin"}
    assert autostart.start_daemon(where, "/bin/true", env)  # a stand-in daemon that exits at once
    assert not autostart.start_daemon(where, "/bin/true", env)  # attempted just now
    deadline = time.monotonic() + DEADLINE
    while zombie_children():  # the caller lives on, as the MCP server does: its child is reaped
        assert time.monotonic() < deadline, "the launched process was never reaped"
        time.sleep(0.02)


def test_no_attempt_while_a_daemon_holds_the_instance_lock(where: Paths) -> None:
    os.makedirs(where.runtime_dir, exist_ok=True)
    fd = os.open(where.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a daemon booting (not yet bound) or shutting down
        assert not autostart.start_daemon(where, "/bin/false", {})
        with open(os.path.join(where.state_dir, autostart.STAMP_FILE)) as f:
            assert f.read() == ""  # no attempt recorded: the next client may try as soon as it is gone
    finally:
        os.close(fd)


def test_turned_off_or_no_interpreter_means_no_attempt(where: Paths) -> None:
    assert not autostart.start_daemon(where, "/bin/false", {"MEMD_AUTOSTART": "0"})
    assert not autostart.start_daemon(where, "", {})
    assert not os.path.exists(where.state_dir)


@pytest.mark.parametrize("unit", [0, 1])
def test_a_service_manager_starts_memd_not_a_hook(where: Paths, tmp_path: Path, unit: int) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    path = autostart.service_files(env)[unit]  # memd.socket (systemd) or the launchd plist
    os.makedirs(os.path.dirname(path))
    open(path, "w").close()
    assert not autostart.start_daemon(where, "/bin/true", env)
    os.unlink(path)
    assert autostart.start_daemon(where, "/bin/true", env)


# --- the rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "on"),
    [(None, True), ("1", True), ("yes", True), ("", True), ("0", False), (" Off ", False), ("false", False)],
)
def test_memd_autostart_values(value: str | None, on: bool) -> None:
    assert autostart.enabled({} if value is None else {"MEMD_AUTOSTART": value}) is on


def test_launch_is_due_after_the_interval_or_when_the_clock_went_back() -> None:
    interval = autostart.LAUNCH_INTERVAL
    assert autostart.launch_due(None, 1000.0)
    assert not autostart.launch_due(1000.0, 1000.0)
    assert not autostart.launch_due(1000.0, 1000.0 + interval - 0.1)
    assert autostart.launch_due(1000.0, 1000.0 + interval)
    assert autostart.launch_due(1000.0 + 3600, 1000.0)  # the clock was set back an hour


def test_a_garbled_stamp_means_no_known_attempt() -> None:
    assert autostart.parse_stamp(b"1795312178.25\n") == 1795312178.25
    assert autostart.parse_stamp(b"") is None
    assert autostart.parse_stamp(b"\x00garbage") is None


def test_the_daemon_gets_the_socket_it_was_not_left_to_find_alone() -> None:
    env = {"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1"}
    default = resolve(env=env)
    assert autostart.daemon_argv("/v/bin/python", default) == [
        "/v/bin/python", "-E", "-P", "-m", "memd", "--no-stderr-log", "--data-dir", "/home/u/.local/share/memd",
    ]  # fmt: skip
    flagged = resolve(socket="/tmp/x/memd.sock", env=env)
    assert autostart.daemon_argv("/v/bin/python", flagged)[-2:] == ["--socket", "/tmp/x/memd.sock"]
    relative = resolve(env={**env, "MEMD_SOCKET": "rel.sock", "MEMD_DATA_DIR": "rel-data"})
    argv = autostart.daemon_argv("/v/bin/python", relative)
    assert argv[argv.index("--socket") + 1] == os.path.abspath("rel.sock")  # absolute: the daemon runs from /
    assert argv[argv.index("--data-dir") + 1] == os.path.abspath("rel-data")


# --- what counts as "no daemon" --------------------------------------------------------


def test_no_socket_file_or_a_dead_one_is_not_listening(tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = str(tmp_path / "missing.sock")
    with pytest.raises(frame.NotListening):
        frame.send(missing, b"frame", 1.0)
    stale = str(tmp_path / "stale.sock")
    left = socket.socket(socket.AF_UNIX)
    left.bind(stale)  # a socket file nobody listens on: what a killed daemon leaves
    try:
        with pytest.raises(frame.NotListening):
            frame.send(stale, b"frame", 1.0)
    finally:
        left.close()


def test_a_live_but_silent_daemon_is_not_down(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "slow.sock")
    slow = socket.socket(socket.AF_UNIX)
    slow.bind(path)
    slow.listen()  # accepts into its backlog, never answers
    try:
        assert frame.send(path, b"\x00\x00\x00\x01\xc0", 0.2) is None  # a timeout: spool, start nothing
    finally:
        slow.close()


def test_memctl_daemon_restart_replaces_a_running_daemon_and_starts_a_stopped_one(instance: Instance) -> None:
    """What the README and ``memctl sync setup`` tell a user to run after changing config.toml."""
    try:
        first = json.loads(instance.memctl("--json", "daemon", "start").stdout)
        again = instance.memctl("--json", "daemon", "restart")
        assert again.returncode == 0, again.stderr
        restarted = json.loads(again.stdout)
        assert restarted["restarted"] is True and restarted["pid"] != first["pid"]
        assert instance.call(Ping(), Pong).pid == restarted["pid"]
        assert instance.memctl("daemon", "stop").returncode == 0 and not answering(instance)
        cold = instance.memctl("daemon", "restart")
        assert cold.returncode == 0 and cold.stdout.startswith("memd started (pid "), cold.stdout
        assert answering(instance)
    finally:
        instance.memctl("daemon", "stop")
