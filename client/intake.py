"""What the hook client reads: the event on stdin, and where the session's transcript stands.

Stdin is read as bytes, never parsed (``json`` and ``re`` would cost the client
milliseconds of imports): at most ``PAYLOAD_CAP`` bytes are kept, the head and the last
``TAIL_KEEP`` bytes of a larger one, and the total size is counted.  ``Stdin`` holds what
has been read so far, so a terminating signal can keep even an event cut short.
"""

import posix
import select
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~ms); mypy takes the name as true
if TYPE_CHECKING:
    import signal as _signal  # typeshed has no stub for the C module

    from .frame import PAYLOAD_CAP, TAIL_KEEP
else:
    import _signal  # the C module, loaded at interpreter start: `signal` imports enum (~3 ms)

    if __package__:
        from .frame import PAYLOAD_CAP, TAIL_KEEP
    else:  # imported by the hook client as a top-level module: site-packages is not on sys.path
        from frame import PAYLOAD_CAP, TAIL_KEEP

STDIN_DEADLINE = 3.0
"""Seconds to wait for stdin to close: Claude Code sometimes never closes it."""
STDIN_SETTLE = 0.05
"""Once a line has arrived, seconds of silence after which it is taken as complete."""
SIGNALS = (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT)
"""The signals that would end the client: it keeps its event first (``handoff._on_signal``),
and they wait while a chunk of stdin is between the pipe and ``Stdin``."""
TRANSCRIPT_TAIL = 64 * 1024
"""Bytes at the end of the transcript searched for its last record's uuid."""


class Stdin:
    """What ``read_stdin`` has read so far: the signal handler spools it when cut short."""

    __slots__ = ("chunks", "done", "kept", "tail", "total")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.tail = b""
        self.kept = self.total = 0
        self.done = False

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.kept < PAYLOAD_CAP:
            head = chunk[: PAYLOAD_CAP - self.kept]
            self.chunks.append(head)
            self.kept += len(head)
            chunk = chunk[len(head) :]
        if chunk:
            self.tail = (self.tail + chunk)[-TAIL_KEEP:]

    def drain(self, fd: int = 0, budget: float = 0.2) -> None:
        """Add what ``fd`` holds right now, without waiting for more (the signal handler's read)."""
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        deadline = time.monotonic() + budget
        while poller.poll(0) and time.monotonic() < deadline:
            try:
                chunk = posix.read(fd, 1 << 16)
            except OSError:  # a closed or odd stdin: keep what was read
                return
            if not chunk:
                self.done = True  # EOF: all of it arrived
                return
            self.add(chunk)

    def payload(self) -> tuple[bytes, int]:
        """(At most PAYLOAD_CAP bytes of what was read: the head and the tail, the total size)."""
        head = b"".join(self.chunks)
        if not self.tail:
            return head, self.total
        return head[: PAYLOAD_CAP - len(self.tail)] + self.tail, self.total


def read_stdin(fd: int = 0, into: Stdin | None = None) -> tuple[bytes, int]:
    """Read the event from ``fd``: (at most PAYLOAD_CAP bytes of it, the total size).

    Stops at EOF; or when a newline-terminated line has been followed by
    STDIN_SETTLE seconds of silence (Claude Code writes one compact JSON line);
    or at STDIN_DEADLINE.  ``into`` holds what has been read meanwhile.
    """
    read = into if into is not None else Stdin()
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
        # Terminating signals wait while a chunk is read and recorded: their handler must not
        # run with the chunk out of the pipe but not yet in ``read`` (it spools what is there).
        mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, SIGNALS)
        try:
            chunk = posix.read(fd, 1 << 16)
            if chunk:
                read.add(chunk)
        except (BlockingIOError, InterruptedError):
            continue
        finally:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
        if not chunk:
            break
        last = chunk
    read.done = True
    return read.payload()


def transcript_position(payload: bytes) -> str:
    """The uuid of the last record of the session's transcript as the hook fires, or "".

    Two compactions in one prompt fire byte-identical SessionStart(compact) and PreCompact
    payloads; where the transcript stood tells them apart (``Ingest.position``), and a
    replay of the same frame, or a second registration of the same hook, still agrees.
    Plain byte searches: ``re`` and ``json`` would cost the client milliseconds of imports.
    """
    found = payload.find(b'"transcript_path"')
    if found < 0:
        return ""
    start = payload.find(b'"', payload.find(b":", found + 17) + 1)
    end = payload.find(b'"', start + 1)
    path = payload[start + 1 : end]
    if start < 0 or end < 0 or not path or b"\\" in path:  # an escaped path is too rare to decode here
        return ""
    try:  # non-blocking: a path naming a FIFO must not hold the hook up
        fd = posix.open(path, posix.O_RDONLY | posix.O_NONBLOCK)
    except OSError:  # a new session has no transcript yet
        return ""
    try:
        st = posix.fstat(fd)
        if st.st_mode & 0o170000 != 0o100000:  # a regular file, or nothing to read here
            return ""
        posix.lseek(fd, max(0, st.st_size - TRANSCRIPT_TAIL), 0)
        tail = posix.read(fd, TRANSCRIPT_TAIL)
    except OSError:
        return ""
    finally:
        posix.close(fd)
    at = len(tail)
    while (at := tail.rfind(b'"uuid":"', 0, at)) >= 0:
        if at and tail[at - 1] == 0x5C:  # \"uuid\": inside a string of some record, not a key
            continue
        end = tail.find(b'"', at + 8)
        uuid = tail[at + 8 : end]
        if 0 < len(uuid) <= 64:
            return uuid.decode("ascii", "replace")
    return ""
