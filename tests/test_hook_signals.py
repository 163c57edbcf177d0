"""The hook client under SIGTERM: whenever it is killed, its event is kept, once.

``claude -p`` SIGTERMs the async hooks still running when it ends; a client killed
before the daemon acknowledged its event must spool it (or what it has read of it) and
exit 0 at once, and one killed after the acknowledgement must not spool a copy.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import signal
import socket
import struct
import subprocess
import termios
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import HOOK_FILE, PYTHON, Instance

import memd_wire
from memd.protocol import Ingest, Ingested, decode_request, encode_frame

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc (Linux)")

PROMPT = "ship the release notes after the changelog is merged"
QUICK = 1.0
"""Seconds a SIGTERMed client may take to spool and exit: well under the 2 s reply deadline
(and the ~1.4 s ``claude -p`` waits after SIGTERM)."""


def prompt(session: str = "s-signal", text: str = PROMPT, event: str = "UserPromptSubmit") -> bytes:
    data = {"session_id": session, "transcript_path": "/dev/null", "cwd": "/tmp/p-signal", "hook_event_name": event}
    data["prompt" if event == "UserPromptSubmit" else "last_assistant_message"] = text
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def spawn(inst: Instance, event: str, env: dict[str, str], argv: list[str] | None = None, **kwargs):  # type: ignore[no-untyped-def]
    """The real hook client, as Claude Code starts it (a context manager: pipes closed, process reaped)."""
    return subprocess.Popen(
        argv or [PYTHON, "-I", "-S", HOOK_FILE, event],
        env={**inst.env, **env},
        stdin=kwargs.pop("stdin", subprocess.PIPE),
        stdout=kwargs.pop("stdout", subprocess.DEVNULL),
        stderr=subprocess.PIPE,
        **kwargs,
    )


def feed(proc: subprocess.Popen[bytes], raw: bytes) -> None:
    proc.stdin.write(raw)  # type: ignore[union-attr]
    proc.stdin.close()  # type: ignore[union-attr]


def terminate(proc: subprocess.Popen[bytes]) -> tuple[int, float]:
    """SIGTERM ``proc``; its exit status and how long it took to exit."""
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    status = proc.wait(timeout=10)
    return status, time.monotonic() - started


def queued(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` belongs to (either end)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def catches(pid: int, signum: int) -> bool:
    """Whether ``pid`` has a handler for ``signum`` in place (SigCgt in /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    except (FileNotFoundError, ProcessLookupError, StopIteration):
        return False
    return bool(mask & (1 << (signum - 1)))


def wait_until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.002)


class MuteServer:
    """A Unix socket that accepts and never answers: a daemon too slow to reply."""

    def __init__(self, inst: Instance) -> None:
        self.path = f"{inst.root}/mute.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.sock.settimeout(10.0)
        self.conns: list[socket.socket] = []

    def take_frame(self) -> tuple[socket.socket, bytes]:
        """The next client's connection and its whole frame (header included): it now waits for the reply."""
        conn, _ = self.sock.accept()
        self.conns.append(conn)
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            chunk = conn.recv(1 << 16)
            assert chunk, "the client closed the connection"
            data += chunk
        return conn, data

    def __enter__(self) -> MuteServer:
        return self

    def __exit__(self, *exc: object) -> None:
        for conn in self.conns:
            conn.close()
        self.sock.close()


def spool_files(inst: Instance) -> tuple[list[bytes], list[str]]:
    """The spooled frames' bytes, and the temp files left behind."""
    try:
        names = sorted(os.listdir(inst.paths.spool_dir))
    except FileNotFoundError:
        return [], []
    frames = []
    for name in names:
        if name.endswith(".frame"):
            with open(os.path.join(inst.paths.spool_dir, name), "rb") as f:
                frames.append(f.read())
    return frames, [n for n in names if n.startswith(".tmp-")]


def spooled_ingest(inst: Instance) -> Ingest:
    """The one spooled request (and no temp file left)."""
    (frame,), temps = spool_files(inst)
    assert temps == []
    request = decode_request(frame[4:])
    assert isinstance(request, Ingest)
    return request


def test_sigterm_while_waiting_for_the_reply_spools_the_frame_once(instance: Instance) -> None:
    # A reply deadline far away: the frame is spooled because of the signal, not a timeout.
    env = {"MEMD_HOOK_TIMEOUT": "30"}
    with MuteServer(instance) as server, spawn(instance, "Stop", {**env, "MEMD_SOCKET": server.path}) as proc:
        feed(proc, prompt(event="Stop"))
        _, sent = server.take_frame()
        status, took = terminate(proc)
        assert status == 0, proc.stderr.read()  # type: ignore[union-attr]
    assert took < QUICK
    assert spool_files(instance) == ([sent], [])


@pytest.mark.parametrize("cut", ["half", "whole line, stdin still open"])
def test_sigterm_while_stdin_is_read_spools_what_was_read(instance: Instance, cut: str) -> None:
    raw = prompt(session="s-partial", event="Stop").rstrip(b"\n")  # no newline: the client waits for more
    written = raw[: len(raw) // 2] if cut == "half" else raw
    r, w = os.pipe()
    try:
        with spawn(instance, "Stop", {}, stdin=r) as proc:
            os.close(r)
            os.write(w, written)
            wait_until(lambda: queued(w) == 0)  # the client has it (its handler was in place before it read)
            time.sleep(0.2)  # and is waiting for the rest
            status, took = terminate(proc)
            assert status == 0, proc.stderr.read()  # type: ignore[union-attr]
    finally:
        os.close(w)
    assert took < QUICK
    request = spooled_ingest(instance)
    assert (request.event, request.payload, request.size) == ("Stop", written, len(written))
    assert request.truncated is (cut == "half")  # a whole JSON object is kept whole

    instance.start()  # the daemon drains the spool: a cut payload keeps its identifying fields
    instance.wait_for(lambda: not instance.spooled())
    ((key, truncated),) = instance.query("SELECT idem_key, truncated FROM events WHERE event != 'memd'")
    assert key.startswith("Stop:s-partial:") and truncated == (cut == "half")
    assert instance.stop() == 0


def test_sigterm_after_the_acknowledgement_spools_nothing(instance: Instance) -> None:
    with (
        MuteServer(instance) as server,
        spawn(instance, "UserPromptSubmit", {"MEMD_SOCKET": server.path}, stdout=subprocess.PIPE) as proc,
    ):
        out = proc.stdout.fileno()  # type: ignore[union-attr]
        feed(proc, prompt())
        conn, _ = server.take_frame()
        # Acknowledged, with more context than the stdout pipe holds: the client blocks
        # printing it, after the acknowledgement and before it exits.
        conn.sendall(encode_frame(Ingested(event_id=1, stdout="x" * (1 << 20))))
        wait_until(lambda: queued(out) >= fcntl.fcntl(out, fcntl.F_GETPIPE_SZ))
        assert proc.poll() is None
        status, took = terminate(proc)
        assert status == 0, proc.stderr.read()  # type: ignore[union-attr]
    assert took < QUICK
    assert spool_files(instance) == ([], [])


SIGNAL_IN_SPOOL = """
import os, signal, sys
sys.path.insert(0, {client!r})
real_write = os.write
def write(fd, data):
    if fd > 2 and len(data) > 16:  # the spool file: a SIGTERM halfway through writing it
        os.write = real_write
        done = real_write(fd, data[:16])
        os.kill(os.getpid(), signal.SIGTERM)
        return done + real_write(fd, data[16:])
    return real_write(fd, data)
os.write = write
from handoff import main
main()
"""
"""The hook client, with a SIGTERM sent to itself halfway through writing its spool file."""


@pytest.mark.parametrize("spooler", ["the client (no daemon)", "the signal handler"])
def test_a_signal_while_the_spool_file_is_written_leaves_one_whole_file(instance: Instance, spooler: str) -> None:
    argv = [PYTHON, "-I", "-S", "-c", SIGNAL_IN_SPOOL.format(client=os.path.dirname(memd_wire.__file__)), "Stop"]
    raw = prompt(event="Stop")
    if spooler == "the signal handler":  # it spools on a SIGTERM, and a second one hits its write
        env = {"MEMD_HOOK_TIMEOUT": "30"}
        with MuteServer(instance) as server, spawn(instance, "", {**env, "MEMD_SOCKET": server.path}, argv) as proc:
            feed(proc, raw)
            server.take_frame()
            status, _ = terminate(proc)
            assert status == 0, proc.stderr.read()  # type: ignore[union-attr]
    else:  # nothing listens: the client spools, and the SIGTERM hits that write
        with spawn(instance, "", {}, argv) as proc:
            feed(proc, raw)
            assert proc.wait(timeout=30) == 0, proc.stderr.read()  # type: ignore[union-attr]
    request = spooled_ingest(instance)  # one file, whole, and no temp file left
    assert (request.payload, request.truncated) == (raw, False)


def test_a_burst_of_sigtermed_clients_loses_no_event(daemon: Instance) -> None:
    """200 prompts, each client SIGTERMed 0-60 ms after its handler is in place: every one stored once.

    The clock starts when /proc shows the client's SIGTERM handler: a client killed while
    Python itself is still starting cannot keep anything, whatever it does (which is why
    the end-of-run hooks are registered synchronously).
    """
    total = 200
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    delays = [rng.uniform(0.0, 0.060) for _ in range(total)]
    raws = [prompt(session=f"s-burst-{n % 8}", text=f"burst prompt {n}: {PROMPT}") for n in range(total)]

    def run(n: int) -> tuple[int, bytes]:
        with spawn(daemon, "UserPromptSubmit", {}) as proc:
            feed(proc, raws[n])
            # The handler in place, or the client done: a loaded machine may take seconds to start it.
            wait_until(lambda: catches(proc.pid, signal.SIGTERM) or proc.poll() is not None, timeout=30)
            time.sleep(delays[n])
            proc.send_signal(signal.SIGTERM)  # nothing if it has exited and been reaped
            return proc.wait(timeout=30), proc.stderr.read()  # type: ignore[union-attr]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, range(total)))
    assert [r for r in results if r[0] != 0] == [], f"seed {seed}"
    daemon.wait_for(lambda: not daemon.spooled(), timeout=30)  # the daemon drains what was spooled
    keys = [k for (k,) in daemon.query("SELECT idem_key FROM events WHERE idem_key LIKE 'UserPromptSubmit:%'")]
    expected = {f"UserPromptSubmit:s-burst-{n % 8}:{hashlib.sha256(raw).hexdigest()}" for n, raw in enumerate(raws)}
    assert len(keys) == len(set(keys)), f"seed {seed}: an event stored twice"
    assert set(keys) == expected, f"seed {seed}: {len(expected - set(keys))} of {total} events lost"


def signalled_before_start(ignored: bool):  # type: ignore[no-untyped-def]
    """A ``preexec_fn``: the client starts as under memd's signal guard, the terminating signals
    blocked, and with a SIGTERM already pending (it came while the interpreter started);
    ``ignored``: SIGTERM ignored besides, as the plugin's launcher leaves it."""

    def preexec() -> None:
        if ignored:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
        os.kill(os.getpid(), signal.SIGTERM)

    return preexec


@pytest.mark.parametrize("ignored", [False, True], ids=["blocked", "blocked and ignored (the plugin)"])
def test_a_sigterm_before_python_started_keeps_the_whole_event(instance: Instance, ignored: bool) -> None:
    """Claude Code's SIGTERM at the end of ``claude -p`` can reach a hook spawned a few ms
    before: under the guard it waits for the handler, which spools the event and exits."""
    raw = prompt(session="s-early")
    stdin = instance.root + "/event.json"
    with open(stdin, "wb") as f:
        f.write(raw)
    env = {"MEMD_HOOK_TIMEOUT": "30"}  # the normal path would wait 30 s on the mute server
    with MuteServer(instance) as server, open(stdin, "rb") as event:
        started = time.monotonic()
        with spawn(instance, "UserPromptSubmit", {**env, "MEMD_SOCKET": server.path}, stdin=event,
                   preexec_fn=signalled_before_start(ignored)) as proc:  # fmt: skip
            status = proc.wait(timeout=10)
            assert status == 0, proc.stderr.read()  # type: ignore[union-attr]
    assert time.monotonic() - started < QUICK
    request = spooled_ingest(instance)
    assert (request.event, request.payload, request.truncated) == ("UserPromptSubmit", raw, False)


def test_the_guard_blocks_the_terminating_signals_before_python_starts() -> None:
    """Every memd hook command starts with it on Linux (GNU coreutils' env)."""
    from memd_client.memctl.claude import hook_command
    from memd_wire.launcher import signal_guard

    guard = signal_guard()
    assert guard == ("/usr/bin/env", "--block-signal=TERM,HUP,INT")
    assert hook_command("PostToolUse").startswith("/usr/bin/env --block-signal=TERM,HUP,INT ")
    show = "import _signal; print(sorted(int(s) for s in _signal.pthread_sigmask(_signal.SIG_BLOCK, [])))"
    blocked = subprocess.run([*guard, PYTHON, "-I", "-S", "-c", show], capture_output=True, text=True, check=True)
    assert json.loads(blocked.stdout) == sorted([signal.SIGHUP, signal.SIGINT, signal.SIGTERM])
