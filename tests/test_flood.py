"""A flood of connections: the daemon stays up and keeps serving hooks, with the usual soft
limit of 1,024 open files (which it raises to the hard one) and with a limit it cannot raise
that runs out under it (accept() fails with EMFILE)."""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import Instance

from memd.protocol import Ping, Pong


@contextmanager
def silent_connections(instance: Instance, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections to the daemon that never send anything (this process may hold them all)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 512)), hard))
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):  # the backlog is full: it is still on its way
                sock.connect(instance.paths.socket)
            held.append(sock)
        yield held
    finally:
        for sock in held:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def closed_by_daemon(held: list[socket.socket]) -> bool:
    """Whether the daemon has closed any of ``held`` (a read at the end of the stream)."""
    for sock in held:
        try:
            if sock.recv(1, socket.MSG_PEEK) == b"":
                return True
        except OSError:  # nothing to read yet, or never connected (the backlog was full)
            continue
    return False


def serves_a_hook(instance: Instance, cwd: str, n: int) -> bool:
    """A prompt through the real hook client is stored, not spooled."""
    payload = {"session_id": "s-flood", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": f"flood {n}",
               "transcript_path": "/dev/null"}  # fmt: skip
    done = instance.hook("UserPromptSubmit", json.dumps(payload).encode())
    stored = instance.query("SELECT count(*) FROM events WHERE text LIKE ?", f"%flood {n}%") == [(1,)]
    return done.returncode == 0 and stored and not instance.spooled()


def test_two_thousand_idle_connections_under_a_1024_soft_limit(instance: Instance) -> None:
    instance.start(files=(1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    status = instance.status()
    assert status.open_files_limit > 1024, "the soft limit is raised to the hard one"
    assert status.max_connections == 1000
    with silent_connections(instance, 2000) as held:
        instance.wait_for(lambda: closed_by_daemon(held))  # the cap met: the oldest idle ones make room
        assert instance.process is not None and instance.process.poll() is None
        assert instance.call(Ping(), Pong)
        assert serves_a_hook(instance, instance.root, 1)
        assert instance.status().connections <= 1000  # the oldest idle ones made room
    assert instance.process.poll() is None
    assert serves_a_hook(instance, instance.root, 2)


def test_accept_running_out_of_files_is_survived(instance: Instance) -> None:
    """A limit lowered under the daemon (as a container or an admin may): accept() fails
    with EMFILE; the daemon warns once, closes idle connections and goes on serving."""
    instance.start()
    assert instance.process is not None
    resource.prlimit(instance.process.pid, resource.RLIMIT_NOFILE, (200, 200))
    with silent_connections(instance, 600):
        instance.wait_for(lambda: "accept_failed" in Path(instance.paths.log_file).read_text())  # EMFILE met
        assert instance.process.poll() is None, instance.stderr()[-2000:]
        deadline = time.monotonic() + 10
        while not serves_a_hook(instance, instance.root, 3) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert serves_a_hook(instance, instance.root, 4)
    assert instance.process.poll() is None
    log = Path(instance.paths.log_file).read_text()
    assert "accept_failed" in log and "EMFILE" in log
    assert log.count("accept_failed") <= 3, "rate-limited"


def test_a_connection_that_sends_nothing_is_closed(instance: Instance) -> None:
    instance.configure("[daemon]\nsilent_timeout = 0.5\n")
    instance.start()
    with silent_connections(instance, 3) as held:
        for sock in held:  # each read returns when the daemon closes it (0.5 s of silence), or fails
            sock.setblocking(True)
            sock.settimeout(5.0)
            assert sock.recv(1) == b"", "closed by the daemon"
    assert instance.status().connections == 1  # the status request's own
