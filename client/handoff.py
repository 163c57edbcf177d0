"""memd's Claude Code hook client: hand one hook event to the daemon, in milliseconds.

Claude Code runs ``<absolute python> -I -S hook.py <EventName>`` with the event's
JSON on stdin (``memctl hook-command EVENT`` prints the exact line), and hook.py calls
``main`` here.  It must cost little more than starting Python, so it imports no
third-party code, not even ``os`` (only C modules already loaded or nearly free), and
does not parse the JSON: it reads stdin as bytes, wraps them in a msgpack ``Ingest`` frame
written by hand (``memd/protocol.py`` is the schema), sends the frame over the Unix
socket and waits for the daemon's reply under a hard deadline.  It prints the
reply's ``stdout`` (the context for SessionStart and UserPromptSubmit), if any.

It always exits 0 and never blocks Claude Code for long.  When the daemon cannot be
reached, answers too slowly or answers with an error it cannot act on, the frame
is written to the spool directory atomically (temp file, fsync, rename; 0600 in a
0700 directory) and the daemon ingests it when it next starts or drains the spool.
Replays are harmless: the daemon deduplicates by idempotency key.  When nothing
listens on the socket at all (no daemon, as opposed to a slow one), the hook then
starts the daemon in the background (``autostart.py``: at most once per 10 s however
many hooks fire) and exits without waiting for it: the next events find it up.

Tunables (environment): ``MEMD_HOOK_TIMEOUT`` seconds to wait for the reply
(default 2.0); ``MEMD_AUTOSTART=0`` never starts the daemon (the event is spooled all
the same); ``MEMD_SOCKET`` and the XDG variables as in ``paths.py``.
"""

import _socket  # the C module: `socket` would cost ~10 ms of imports
import posix  # the C core of `os`, loaded at interpreter start; `os` costs ~2 ms more
import select
import sys
import time

if __package__:
    from . import paths
else:  # imported by hook.py as a top-level module: site-packages is not on sys.path
    import paths

PROTOCOL_VERSION = 1  # memd.protocol.PROTOCOL_VERSION
MAX_FRAME = 16 * 1024 * 1024  # memd.protocol.MAX_FRAME
PAYLOAD_CAP = 8 * 1024 * 1024
"""Bytes of stdin kept.  Past it the middle is dropped: the head and the last TAIL_KEEP
bytes are sent (Claude Code writes ids first and ``tool_use_id`` after a huge
``tool_response``), and the daemon records the full size."""
TAIL_KEEP = 64 * 1024
STDIN_DEADLINE = 3.0
"""Seconds to wait for stdin to close: Claude Code sometimes never closes it."""
STDIN_SETTLE = 0.05
"""Once a line has arrived, seconds of silence after which it is taken as complete."""
REPLY_DEADLINE = 2.0


# --- msgpack, the few types the wire needs ----------------------------------------------


def _str(s: str) -> bytes:
    b = s.encode()
    n = len(b)
    if n < 32:
        return bytes((0xA0 | n,)) + b
    if n < 0x100:
        return b"\xd9" + bytes((n,)) + b
    if n < 0x10000:
        return b"\xda" + n.to_bytes(2, "big") + b
    return b"\xdb" + n.to_bytes(4, "big") + b


def _uint(n: int) -> bytes:
    return bytes((n,)) if n < 0x80 else b"\xcf" + n.to_bytes(8, "big")


def ingest_frame(event: str, payload: bytes, size: int, truncated: bool) -> bytes:
    """The ``Ingest`` request of memd/protocol.py, msgpack-encoded and length-prefixed."""
    body = b"".join(
        (
            b"\x87",  # a map of 7 entries
            _str("op"), _str("ingest"),
            _str("v"), _uint(PROTOCOL_VERSION),
            _str("event"), _str(event),
            _str("sent_at_ns"), _uint(time.time_ns()),
            _str("payload"), b"\xc6", len(payload).to_bytes(4, "big"), payload,
            _str("truncated"), b"\xc3" if truncated else b"\xc2",
            _str("size"), _uint(size),
        )
    )  # fmt: skip
    return len(body).to_bytes(4, "big") + body


class _Reader:
    """Reads the msgpack subset msgspec emits for memd's replies."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        if len(chunk) != n:
            raise ValueError("truncated msgpack")
        self.pos += n
        return chunk

    def _int(self, n: int, signed: bool = False) -> int:
        return int.from_bytes(self._take(n), "big", signed=signed)

    def value(self):
        b = self._take(1)[0]
        if b < 0x80:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0xA0 <= b <= 0xBF:
            return self._take(b & 0x1F).decode()
        if 0x80 <= b <= 0x8F:
            return self._map(b & 0x0F)
        if 0x90 <= b <= 0x9F:
            return [self.value() for _ in range(b & 0x0F)]
        if b == 0xC0:
            return None
        if b in (0xC2, 0xC3):
            return b == 0xC3
        if b in (0xD9, 0xDA, 0xDB):
            return self._take(self._int(1 << (b - 0xD9))).decode()
        if b in (0xC4, 0xC5, 0xC6):
            return self._take(self._int(1 << (b - 0xC4)))
        if b in (0xCC, 0xCD, 0xCE, 0xCF):
            return self._int(1 << (b - 0xCC))
        if b in (0xD0, 0xD1, 0xD2, 0xD3):
            return self._int(1 << (b - 0xD0), signed=True)
        if b in (0xCA, 0xCB):
            import struct

            return struct.unpack(">f" if b == 0xCA else ">d", self._take(4 if b == 0xCA else 8))[0]
        if b in (0xDC, 0xDD):
            return [self.value() for _ in range(self._int(2 if b == 0xDC else 4))]
        if b in (0xDE, 0xDF):
            return self._map(self._int(2 if b == 0xDE else 4))
        raise ValueError(f"unsupported msgpack type byte 0x{b:02x}")

    def _map(self, n: int) -> dict:
        return {self.value(): self.value() for _ in range(n)}


def decode(data: bytes):
    return _Reader(data).value()


# --- IO ---------------------------------------------------------------------------------


def read_stdin(fd: int = 0) -> tuple[bytes, int]:
    """Read the event from ``fd``: (at most PAYLOAD_CAP bytes of it, the total size).

    Stops at EOF; or when a newline-terminated line has been followed by
    STDIN_SETTLE seconds of silence (Claude Code writes one compact JSON line);
    or at STDIN_DEADLINE.
    """
    chunks: list[bytes] = []
    tail = b""
    kept = total = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    deadline = time.monotonic() + STDIN_DEADLINE
    last = b""
    while True:
        now = time.monotonic()
        if now >= deadline:
            break
        wait = min(deadline - now, STDIN_SETTLE) if last.endswith(b"\n") else deadline - now
        if not poller.poll(wait * 1000):
            if last.endswith(b"\n"):
                break
            continue
        try:
            chunk = posix.read(fd, 1 << 16)
        except (BlockingIOError, InterruptedError):
            continue
        if not chunk:
            break
        last = chunk
        total += len(chunk)
        if kept < PAYLOAD_CAP:
            chunks.append(chunk[: PAYLOAD_CAP - kept])
            kept += len(chunks[-1])
            chunk = chunk[len(chunks[-1]) :]
        if chunk:
            tail = (tail + chunk)[-TAIL_KEEP:]
    head = b"".join(chunks)
    if not tail:
        return head, total
    return head[: PAYLOAD_CAP - len(tail)] + tail, total


def _recv_reply(sock) -> bytes:
    header = b""
    while len(header) < 4:
        chunk = sock.recv(4 - len(header))
        if not chunk:
            raise ConnectionError("daemon closed the connection")
        header += chunk
    length = int.from_bytes(header, "big")
    if length > MAX_FRAME:
        raise ConnectionError("oversized reply")
    parts: list[bytes] = []
    need = length
    while need:
        chunk = sock.recv(min(need, 1 << 16))
        if not chunk:
            raise ConnectionError("daemon closed the connection")
        parts.append(chunk)
        need -= len(chunk)
    return b"".join(parts)


class NotListening(Exception):
    """No daemon serves the socket: no socket file, or one nobody accepts on (ECONNREFUSED)."""


def send(socket_path: str, frame: bytes, timeout: float) -> dict | None:
    """Send one frame and return the decoded reply, or None if the daemon did not answer.

    Raises NotListening when there is no daemon to answer.  A daemon that is up but slow,
    busy (its listen backlog full: EAGAIN), closing the connection or not ours (EACCES)
    is not that: starting another would not help.
    """
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_path)
        except (FileNotFoundError, ConnectionRefusedError):
            raise NotListening from None
        sock.sendall(frame)
        reply = decode(_recv_reply(sock))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    finally:
        sock.close()
    return reply if isinstance(reply, dict) else None


def spool(spool_dir: str, frame: bytes) -> None:
    """Write ``frame`` to the spool as one file, atomically and privately."""
    import os  # the slow path only

    # The state directory too: makedirs gives the parents it creates the umask's mode.
    os.makedirs(os.path.dirname(spool_dir), mode=0o700, exist_ok=True)
    os.makedirs(spool_dir, mode=0o700, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}"
    tmp = os.path.join(spool_dir, f".tmp-{name}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, frame)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, os.path.join(spool_dir, f"{name}.frame"))


def _start_daemon(where: paths.Paths, env: dict[str, str]) -> None:
    """Start the daemon for the events to come (slow path: nothing listens on the socket)."""
    if __package__:
        from . import autostart
    else:
        import autostart
    try:
        autostart.start_daemon(where, sys.executable, env)
    except Exception as exc:  # the event is spooled: only the start failed, and says why
        sys.stderr.write(f"memd hook: event spooled, daemon not started: {type(exc).__name__}: {exc}\n")


def _deadline(env: dict[str, str]) -> float:
    try:
        return float(env.get("MEMD_HOOK_TIMEOUT", REPLY_DEADLINE))
    except ValueError:
        return REPLY_DEADLINE


def run(argv: list[str]) -> None:
    event = argv[1] if len(argv) > 1 else ""
    socket_flag = argv[argv.index("--socket") + 1] if "--socket" in argv[:-1] else None
    payload, size = read_stdin()
    if not payload or payload.isspace():
        return  # Claude Code sometimes sends nothing: there is no event to keep.
    frame = ingest_frame(event, payload, size, truncated=size > len(payload))
    env = paths.environ()
    where = paths.resolve(socket=socket_flag, env=env)
    try:
        reply = send(where.socket, frame, _deadline(env))
    except NotListening:
        # The event goes to disk first: the daemon drains the spool as it starts.
        spool(where.spool_dir, frame)
        _start_daemon(where, env)
        return
    op = reply.get("op") if reply else None
    if op != "ingested" and not (op == "error" and reply.get("code") == "invalid_payload"):
        # Unreachable, too slow, or refused for a reason a later daemon can fix (a protocol
        # version mismatch): keep the event.  A payload that is not JSON is refused for good
        # and the daemon has recorded its size; replaying it would be refused again.
        spool(where.spool_dir, frame)
        return
    if op == "error":
        sys.stderr.write(f"memd: {reply.get('message', 'event refused')}\n")
        return
    stdout = reply.get("stdout")
    if stdout:  # UTF-8 whatever the locale: Claude Code reads UTF-8
        sys.stdout.buffer.write(stdout.encode())
        sys.stdout.buffer.flush()


def main() -> None:
    try:
        run(sys.argv)
    except BaseException as exc:  # never break Claude Code, whatever happened
        import contextlib

        with contextlib.suppress(BaseException):  # stderr itself may be gone
            # Claude Code keeps a hook's stderr in its debug log.  No content: ids and errors only.
            sys.stderr.write(f"memd hook: event not handed over or spooled: {type(exc).__name__}: {exc}\n")
    sys.exit(0)
