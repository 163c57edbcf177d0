"""The daemon on its socket: bad peers, permissions, one instance, clean shutdown."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
from conftest import Instance, hook_fixtures, stored_fixtures

from memd.protocol import (
    Error,
    Events,
    History,
    Ingest,
    Ingested,
    Ping,
    Pong,
    Search,
    SearchResults,
    decode_reply,
    encode_frame,
)
from memd_client.rpc import Client, DaemonError
from memd_wire.frame import MAX_FRAME, PROTOCOL_VERSION
from memd_wire.paths import resolve


def raw_exchange(inst: Instance, data: bytes, close_write: bool = True) -> bytes:
    """Send raw bytes, return everything the daemon answers before closing."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(inst.paths.socket)
        sock.sendall(data)
        if close_write:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def replies(data: bytes) -> list[object]:
    out = []
    while data:
        n = int.from_bytes(data[:4], "big")
        out.append(decode_reply(data[4 : 4 + n]))
        data = data[4 + n :]
    return out


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def assert_serving(inst: Instance) -> None:
    assert inst.call(Ping(), Pong).pid == inst.process.pid  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (frame(b"\xc1\xc1\xc1"), "bad_request"),
        (frame(msgspec.msgpack.encode({"op": "ingest", "v": PROTOCOL_VERSION, "event": 5})), "bad_request"),
        (frame(msgspec.msgpack.encode(["ping"])), "bad_request"),
        (frame(msgspec.msgpack.encode({"op": "ping", "v": 99})), "version_mismatch"),
        ((MAX_FRAME + 1).to_bytes(4, "big") + b"x" * 100, "frame_too_large"),
    ],
)
def test_bad_frames_get_typed_errors_and_the_daemon_keeps_serving(daemon: Instance, data: bytes, code: str) -> None:
    (reply,) = replies(raw_exchange(daemon, data))
    assert isinstance(reply, Error) and reply.code == code
    assert_serving(daemon)


def test_a_connection_survives_a_bad_request(daemon: Instance) -> None:
    data = frame(msgspec.msgpack.encode({"op": "nope", "v": PROTOCOL_VERSION})) + encode_frame(Ping())
    first, second = replies(raw_exchange(daemon, data))
    assert isinstance(first, Error) and isinstance(second, Pong)


@pytest.mark.parametrize("data", [b"", b"\x00\x00", frame(b"")[:2], encode_frame(Ping())[:-1], os.urandom(3)])
def test_truncated_streams_are_closed_quietly(daemon: Instance, data: bytes) -> None:
    assert raw_exchange(daemon, data) == b""
    assert_serving(daemon)


def test_random_garbage_never_hurts(daemon: Instance) -> None:
    import random

    rng = random.Random(1234)
    for _ in range(50):
        raw_exchange(daemon, bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))))
    assert_serving(daemon)
    assert daemon.status().events == 0


def test_many_requests_on_one_connection(daemon: Instance) -> None:
    with Client(daemon.paths.socket) as client:
        for n in range(50):
            body = json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": f"p {n}"}).encode()
            assert client.call(Ingest(event="UserPromptSubmit", sent_at_ns=1, payload=body), Ingested).event_id == n + 1
        assert len(client.call(History(limit=100), Events).events) == 50
        with pytest.raises(DaemonError) as info:
            client.call(Ingest(event="Stop", sent_at_ns=1, payload=b"nope"), Ingested)
        assert info.value.code == "invalid_payload"
        assert client.call(Ping(), Pong)


def test_search_ranks_the_best_match_first(daemon: Instance) -> None:
    docs = ["the build failed with a segfault in usearch import order", "segfault"]
    docs += [f"unrelated note number {n} about the weather" for n in range(10)]
    with Client(daemon.paths.socket) as client:
        for n, text in enumerate(docs):
            body = json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": text, "n": n})
            client.call(Ingest(event="UserPromptSubmit", sent_at_ns=1, payload=body.encode()), Ingested)
        results = client.call(Search(query="segfault"), SearchResults).results
        assert {r.snippet for r in results[:2]} == {"[segfault]", results[0].snippet, results[1].snippet}
        assert all("[segfault]" in r.snippet for r in results[:2]) and results[0].score > results[1].score
        # what follows holds none of the word: found through its neighbour, and far less sure
        assert all("segfault" not in r.snippet and r.confidence < results[1].confidence for r in results[2:])
        assert client.call(Search(query='usearch "order*'), SearchResults).results[0].snippet.count("[") == 2
        near = client.call(Search(query="segfault NEAR("), SearchResults).results  # operators are plain words
        assert "[segfault]" in {r.snippet for r in near[:2]}
        relaxed = client.call(Search(query="segfault zeppelin"), SearchResults).results  # no event has both
        assert {r.snippet for r in relaxed[:2]} == {r.snippet for r in results[:2]}
        assert client.call(Search(query="-- * ()"), SearchResults).results == []


def test_socket_and_directories_are_private(daemon: Instance) -> None:
    sock = os.stat(daemon.paths.socket)
    assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) == 0o600
    for path in (daemon.paths.runtime_dir, daemon.paths.data_dir, daemon.paths.state_dir):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700, path
    assert stat.S_IMODE(os.stat(daemon.paths.database).st_mode) == 0o600


def test_a_second_daemon_refuses_to_start(daemon: Instance) -> None:
    result = subprocess.run([sys.executable, "-m", "memd"], env=daemon.env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "already running" in result.stderr and str(daemon.process.pid) in result.stderr  # type: ignore[union-attr]
    assert_serving(daemon)


def test_a_killed_daemon_leaves_nothing_that_blocks_a_restart(instance: Instance) -> None:
    instance.start()
    instance.kill()
    assert os.path.exists(instance.paths.socket)  # stale socket and lock file left behind
    instance.start()
    assert_serving(instance)
    assert instance.stop() == 0
    assert not os.path.exists(instance.paths.socket)


def test_sigterm_finishes_in_flight_requests_and_exits_zero(daemon: Instance) -> None:
    fixtures = hook_fixtures()
    for path in fixtures:
        assert daemon.hook("X", path.read_bytes()).returncode == 0
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(daemon.paths.socket)  # an idle client must not hold up shutdown
    started = time.monotonic()
    assert daemon.stop() == 0
    assert time.monotonic() - started < 10
    idle.close()
    stored = daemon.query("SELECT id FROM events WHERE kind NOT IN ('session_summary', 'snapshot')")
    assert len(stored) == len(stored_fixtures())
    log = [json.loads(line) for line in Path(daemon.paths.log_file).read_text().splitlines()]
    assert [e["event"] for e in log if e["event"] in ("serving", "shutting_down", "stopped")] == [
        "serving",
        "shutting_down",
        "stopped",
    ]


def test_logs_carry_no_event_content(daemon: Instance) -> None:
    secret = "hunter2-very-secret-prompt"
    body = json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": secret})
    daemon.hook("UserPromptSubmit", body.encode())
    daemon.hook("PostToolUse", f'{{"prompt": "{secret}"'.encode())  # invalid: refused and logged
    daemon.stop()
    log = Path(daemon.paths.log_file).read_text()
    assert "payload_refused" in log
    assert secret not in log and secret not in daemon.stderr()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_peers_of_another_uid_are_refused(instance: Instance) -> None:
    shared = f"{instance.root}/shared"
    os.chmod(instance.root, 0o711)  # mkdtemp made it 0700; nobody must reach shared/
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    sock_path = f"{shared}/memd.sock"
    instance.env["MEMD_SOCKET"] = sock_path
    instance.paths = resolve(env=instance.env)
    instance.start()
    os.chmod(sock_path, 0o666)  # let the filesystem through so the peer check is what refuses
    pid = os.fork()
    if pid == 0:  # the child becomes `nobody` and tries to talk to the daemon
        code = 2
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(10)
                sock.connect(sock_path)
                try:
                    sock.sendall(encode_frame(Ping()))
                    code = 0 if sock.recv(100) == b"" else 1  # closed without an answer
                except (BrokenPipeError, ConnectionResetError):
                    code = 0  # closed before the request was even read
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with Client(sock_path) as client:
        assert client.call(Ping(), Pong)
    assert "peer_refused" in Path(instance.paths.log_file).read_text()
    assert instance.stop() == 0


def test_bad_config_is_a_clear_error(instance: Instance) -> None:
    instance.configure("[store]\nbatch_maxx = 3\n")
    result = subprocess.run([sys.executable, "-m", "memd"], env=instance.env, capture_output=True, text=True)
    assert result.returncode == 2
    assert "batch_maxx" in result.stderr and instance.paths.config_file in result.stderr
