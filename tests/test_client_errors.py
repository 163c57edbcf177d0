"""The client boundary tells failures by their cause (issue 32): a dead daemon, a daemon of
another protocol version, a reply of the wrong kind and one that cannot be read each get their
own message and advice, in memctl and the MCP server alike.

A daemon of another memd version cannot be made here, so a stand-in answers on the socket
(the only double in these tests): it reads one real request frame and writes back what such
a daemon would.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Instance

from memd.protocol import Error, Pong, encode_frame
from memd_client.rpc import Client, DaemonUnavailable, ProtocolMismatch, UnexpectedReply
from memd_wire.frame import recv_frame


@contextlib.contextmanager
def stand_in(path: str, reply: bytes) -> Iterator[None]:
    """Answer every connection on ``path`` with ``reply`` (a whole frame) after reading a request."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                try:
                    recv_frame(conn)
                    conn.sendall(reply)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown(socket.SHUT_RDWR)  # wakes the accept(): close() alone leaves it blocked
        server.close()
        thread.join(5)
        assert not thread.is_alive()


MISMATCH = encode_frame(Error(code="version_mismatch", message="client speaks protocol 9, this daemon speaks 1"))
WRONG_KIND = encode_frame(Pong(version="0.0.1"))
UNREADABLE = len(b"\x93\x01\x02\x03").to_bytes(4, "big") + b"\x93\x01\x02\x03"


@pytest.fixture
def instance(tmp_path: Path) -> Instance:
    return Instance(str(tmp_path))


@pytest.mark.parametrize(
    ("reply", "error", "said"),
    [
        (MISMATCH, ProtocolMismatch, "speaks another protocol"),
        (WRONG_KIND, UnexpectedReply, "answered a Search with a Pong, not a SearchResults"),
        (UNREADABLE, ProtocolMismatch, "sent a reply this memctl cannot read"),
    ],
    ids=["version", "wrong-kind", "unreadable"],
)
def test_a_daemon_of_another_version_is_told_apart_from_a_dead_one(
    instance: Instance, reply: bytes, error: type[Exception], said: str
) -> None:
    from memd.protocol import Search, SearchResults

    with stand_in(instance.paths.socket, reply):
        with pytest.raises(error, match=said) as caught, Client(instance.paths.socket, timeout=5) as client:
            client.call(Search(query="x"), SearchResults)
        assert caught.value.advice == "restart the daemon so it runs this memd version: memctl daemon restart"  # type: ignore[attr-defined]
        result = instance.memctl("search", "x")
        assert result.returncode == 1 and said in result.stderr and "memctl daemon restart" in result.stderr
        assert "start it with" not in result.stderr, result.stderr  # not the dead daemon's advice


def test_a_dead_daemon_says_start_it(instance: Instance) -> None:
    with pytest.raises(DaemonUnavailable, match="no daemon answers"):
        Client(instance.paths.socket, timeout=5)
    result = instance.memctl("search", "x")
    assert result.returncode == 1 and "no daemon answers" in result.stderr and "memctl daemon start" in result.stderr


def test_the_mcp_server_says_restart_to_a_daemon_of_another_version(instance: Instance) -> None:
    import json

    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "mem_search", "arguments": {"query": "x"}}},
    ]  # fmt: skip
    with stand_in(instance.paths.socket, MISMATCH):
        done = subprocess.run(
            [sys.executable, "-m", "memd_client.mcp"], input="".join(json.dumps(r) + "\n" for r in requests),
            capture_output=True, text=True, env=instance.env, timeout=60,
        )  # fmt: skip
    answer = [json.loads(line) for line in done.stdout.splitlines() if '"id": 2' in line or '"id":2' in line]
    assert answer, done.stdout + done.stderr
    text = json.dumps(answer[0])
    assert "speaks another protocol" in text and "memctl daemon restart" in text, text
    assert os.path.exists(instance.paths.socket)


STAND_IN = """
import fcntl, json, os, socket, sys
lock, path, reply = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
os.makedirs(os.path.dirname(lock), mode=0o700, exist_ok=True)
fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, json.dumps({"pid": os.getpid()}).encode())
os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(8)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    length = int.from_bytes(conn.recv(4), "big")
    while length > 0:
        length -= len(conn.recv(length))
    conn.sendall(reply)
    conn.close()
"""


def test_memctl_daemon_restart_stops_a_daemon_of_another_version(instance: Instance) -> None:
    """It cannot read a Shutdown request: restart stops it by its pid (SIGTERM, on which a
    daemon shuts down cleanly) and starts this version's."""
    from memd.protocol import Ping

    old = subprocess.Popen(
        [sys.executable, "-c", STAND_IN, instance.paths.lock_file, instance.paths.socket, MISMATCH.hex()],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert old.stdout is not None and old.stdout.readline() == "ready\n"
        restarted = instance.memctl("daemon", "restart")
        assert restarted.returncode == 0, restarted.stderr
        assert old.wait(10) == -15  # SIGTERM
        with Client(instance.paths.socket, timeout=10) as client:
            assert client.call(Ping(), Pong).pid != old.pid
    finally:
        old.kill()
        old.wait()
        old.stdout.close()  # type: ignore[union-attr]
        instance.memctl("daemon", "stop")
