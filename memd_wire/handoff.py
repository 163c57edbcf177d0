"""memd's hook client: hand one hook event of an agent to the daemon, in milliseconds.

The agent runs ``<absolute python> -I -S hook.py <EventName> [--agent codex|gemini]`` with
the event's JSON on stdin (``memctl hook-command EVENT`` prints the exact line; no
``--agent`` is Claude Code), and hook.py calls ``main`` here. It must cost little more than
starting Python, so it imports no third-party code, not even ``os`` (only C modules already
loaded or nearly free), and does not parse the JSON: it reads stdin as bytes, wraps them in
a msgpack ``Ingest`` frame written by hand (``frame.py``; ``memd/protocol.py`` is the
schema), sends the frame over the Unix socket and waits for the daemon's reply under a hard
deadline. It prints the reply's ``stdout`` (the context for SessionStart and
UserPromptSubmit), if any.

It always exits 0 and never blocks the agent for long. When the daemon cannot be reached,
answers too slowly or with an error it cannot act on, the frame is spooled (``spool.py``,
imported only then) and the daemon ingests it when it next starts or drains the spool. A
terminating signal does not lose the event either (Claude Code SIGTERMs the async hooks
still running when ``claude -p`` ends; the hook command holds it back until Python has
started): ``run`` first installs a handler (``_on_signal``) that spools the frame unless the
daemon has acknowledged it, or a frame of what stdin gave so far (the daemon salvages its
fields), and exits 0 at once. It runs between bytecodes of the main flow, so ``_Progress``
tracks how far the event got: it is spooled at most once, and a signal during a spool write
waits for the rename (one between the daemon's reply and the flag that records it may
spool a duplicate: harmless, as above). When nothing listens on the socket at all, the hook
then starts the daemon in the background (``autostart.py``: at most once per 10 s however
many hooks fire) and exits without waiting: the next events find it up.

This module, ``frame.py`` and ``paths.py`` are all the hook client loads when the daemon
takes its event: each module more costs its bytecode's load on every hook, so the slow
path's code waits in ``spool.py``.

Tunables (environment): ``MEMD_HOOK_TIMEOUT`` seconds to wait for the reply
(default 2.0); ``MEMD_AUTOSTART=0`` never starts the daemon (the event is spooled all
the same); ``MEMD_SOCKET`` and the XDG variables as in ``paths.py``.
"""

import posix  # the C core of `os`, loaded at interpreter start; `os` costs ~2 ms more
import select
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~ms); mypy takes the name as true
if TYPE_CHECKING:
    import signal as _signal  # typeshed has no stub for the C module
    from typing import TextIO
else:
    import _signal  # the C module, loaded at interpreter start: `signal` imports enum (~3 ms)
if TYPE_CHECKING or __package__:
    from . import paths
    from .frame import CONTEXT_EVENTS, PAYLOAD_CAP, TAIL_KEEP, NotListening, claude_memory_mode, ingest_frame, send
else:  # imported by hook.py as a top-level module: site-packages is not on sys.path
    import paths
    from frame import CONTEXT_EVENTS, PAYLOAD_CAP, TAIL_KEEP, NotListening, claude_memory_mode, ingest_frame, send

REPLY_DEADLINE = 2.0
SIGNALS = (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT)
"""The signals that would end the client: it keeps its event first (``_on_signal``)."""
STDIN_DEADLINE = 3.0
"""Seconds to wait for stdin to close: Claude Code sometimes never closes it."""
STDIN_SETTLE = 0.05
"""Once a line has arrived, seconds of silence after which it is taken as complete."""
TRANSCRIPT_TAIL = 64 * 1024
"""Bytes at the end of the transcript searched for its last record's uuid."""
_TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
"""Events with an id of their own (``tool_use_id``): they need no ``position``."""
BACKGROUND_EVENTS = ("PostToolUse", "PostToolUseFailure")
"""Claude Code's events that memd registers asynchronously (other agents wait for every hook):
nothing waits for them, so their client yields the CPU (nice ``BACKGROUND_NICE``) to what
someone waits for.  Measured with bench/load.py at 32 sessions on 2 cores: the synchronous
hooks' p50 fell from 363 to 134 ms and a search's from 263 to 110 ms, the tool hooks' rose
from 91 to 223 ms, nothing spooled."""
BACKGROUND_NICE = 19


# --- reading the event: stdin, and where the transcript stands ---------------------------


class _Stdin:
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


def read_stdin(fd: int = 0, into: _Stdin | None = None) -> tuple[bytes, int]:
    """Read the event from ``fd``: (at most PAYLOAD_CAP bytes of it, the total size).  Stops at
    EOF, after STDIN_SETTLE s of silence after a newline (Claude Code writes one JSON line), or
    at STDIN_DEADLINE.  ``into`` holds what has been read meanwhile."""
    read = into if into is not None else _Stdin()
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


def transcript_position(payload: bytes, by_size: bool = False) -> str:
    """The uuid of the last record of the session's transcript as the hook fires (``by_size``:
    its size, for the other agents' transcripts, whose records have no uuid), or "".

    Two compactions in one prompt fire byte-identical SessionStart(compact) and PreCompact
    payloads, and Codex CLI a resumed session's SessionEnd as the first one's; where the
    transcript stood tells them apart (``Ingest.position``), and a replay of the same frame
    still agrees.  Plain byte searches: ``re`` and ``json`` would cost milliseconds of imports.
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
        if by_size:
            return f"size:{st.st_size}"
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


# --- the slow path: spool.py, imported only when the daemon did not take the event ----------


def _spool(spool_dir: str, frame: bytes) -> None:
    if TYPE_CHECKING or __package__:
        from .spool import spool
    else:
        from spool import spool
    spool(spool_dir, frame)


def _is_json(payload: bytes) -> bool:
    if TYPE_CHECKING or __package__:
        from .spool import is_json
    else:
        from spool import is_json
    return is_json(payload)


def _start_daemon(where: paths.Paths, env: dict[str, str]) -> None:
    if TYPE_CHECKING or __package__:
        from .spool import start_daemon
    else:
        from spool import start_daemon
    start_daemon(where, env)


def _deadline(env: dict[str, str]) -> float:
    try:
        return float(env.get("MEMD_HOOK_TIMEOUT", REPLY_DEADLINE))
    except ValueError:
        return REPLY_DEADLINE


# --- terminating signals ----------------------------------------------------------------


class _Progress:
    """How far this hook's event got, for ``_on_signal``: what it must still keep, if anything."""

    __slots__ = ("agent", "event", "frame", "safe", "signalled", "socket_flag", "spooling", "stdin", "where")

    def __init__(self, event: str = "", socket_flag: str | None = None, agent: str = "") -> None:
        self.event = event
        self.socket_flag = socket_flag
        self.agent = agent
        self.stdin = _Stdin()
        self.frame: bytes | None = None
        self.where: paths.Paths | None = None
        self.safe = False
        """Nothing left to keep: the daemon took it (or refused it for good), spooled, or none."""
        self.spooling = False
        """A spool file is being written (or about to be): whoever started it finishes it."""
        self.signalled = False
        """A signal came while spooling: exit once the file is in place."""

    def spool_dir(self) -> str:
        where = self.where or paths.resolve(socket=self.socket_flag, env=paths.environ())
        return where.spool_dir

    def signal_frame(self) -> bytes | None:
        """The frame to keep: the one built, else one of what stdin gave so far (None: nothing)."""
        if self.frame is not None:
            return self.frame
        if not self.stdin.done:
            self.stdin.drain()  # what Claude Code wrote and the client had not read yet
        payload, size = self.stdin.payload()
        if not payload or payload.isspace():
            return None
        # Cut short, the payload is likely no whole JSON object; marked truncated, the daemon
        # salvages its identifying fields.  All of it may have arrived already, though.
        cut = size > len(payload) or not (self.stdin.done or _is_json(payload))
        return ingest_frame(self.event, payload, size, truncated=cut, agent=self.agent)


_progress = _Progress()


def keep(frame: bytes) -> None:
    """Spool ``frame`` (the main flow's way), unless a signal handler is already doing so."""
    progress = _progress
    if progress.spooling or progress.safe:
        return
    progress.spooling = True  # a signal from here on waits for the file
    try:
        _spool(progress.spool_dir(), frame)
        progress.safe = True
    finally:
        progress.spooling = False
    if progress.signalled:  # it came while the file was being written: honour it now
        posix._exit(0)


def _on_signal(signum: int, _frame: object) -> None:
    """SIGTERM, SIGHUP, SIGINT: keep the event unless it is safe, then exit 0 at once."""
    progress = _progress
    if progress.spooling:  # a spool file is being written: let it be finished, exit after
        progress.signalled = True
        return
    if not progress.safe:
        progress.spooling = True  # at most one spool file, whatever signals follow
        try:
            frame = progress.signal_frame()
            if frame is not None:
                _spool(progress.spool_dir(), frame)
        except BaseException as exc:
            try:
                sys.stderr.write(f"memd hook: event not spooled on signal {signum}: {type(exc).__name__}: {exc}\n")
                sys.stderr.flush()
            except BaseException:  # stderr itself may be gone
                pass
    posix._exit(0)


def _install_handlers() -> None:
    """Take the terminating signals, then let in one that came while Python started: the hook
    command blocks them till now (``launcher.signal_guard``).  SIGTERM is taken even when
    ignored (the plugin's launcher ignores it); SIGHUP, SIGINT ignored (``nohup``) stay so."""
    try:
        for signum in SIGNALS:
            if signum == _signal.SIGTERM or _signal.getsignal(signum) != _signal.SIG_IGN:
                _signal.signal(signum, _on_signal)
    except ValueError:  # not the main thread (run called in-process, in a test): no handlers
        return
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, SIGNALS)  # a pending one runs its handler now


# --- the hook ---------------------------------------------------------------------------


def run(argv: list[str]) -> None:
    global _progress
    event = argv[1] if len(argv) > 1 else ""
    socket_flag = argv[argv.index("--socket") + 1] if "--socket" in argv[:-1] else None
    agent = argv[argv.index("--agent") + 1] if "--agent" in argv[:-1] else ""  # none: Claude Code
    progress = _progress = _Progress(event, socket_flag, agent)
    _install_handlers()
    if event in BACKGROUND_EVENTS and not agent:
        try:  # noqa: SIM105 (contextlib would cost the client an import)
            posix.nice(BACKGROUND_NICE)
        except OSError:  # refused: the hook runs at its usual priority
            pass
    payload, size = read_stdin(into=progress.stdin)
    if not payload or payload.isspace():
        progress.safe = True
        return  # Claude Code sometimes sends nothing: there is no event to keep.
    position = transcript_position(payload, by_size=bool(agent)) if event not in _TOOL_EVENTS else ""
    env = paths.environ()
    native = claude_memory_mode(env) if event in CONTEXT_EVENTS else ""
    progress.frame = frame = ingest_frame(
        event, payload, size, truncated=size > len(payload), position=position, claude_memory=native, agent=agent,
        agent_pid=posix.getppid() if event == "SessionStart" else 0,  # a fork's parent (Ingest.agent_pid)
    )  # fmt: skip
    progress.where = where = paths.resolve(socket=socket_flag, env=env)
    try:
        reply = send(where.socket, frame, _deadline(env))
    except NotListening:
        # The event goes to disk first: the daemon drains the spool as it starts.
        keep(frame)
        _start_daemon(where, env)
        return
    op = reply.get("op") if reply else None
    if reply is None or (op != "ingested" and not (op == "error" and reply.get("code") == "invalid_payload")):
        # Unreachable, too slow, or refused for a reason a later daemon can fix (a protocol
        # version mismatch): keep the event.  A payload that is not JSON is refused for good
        # and the daemon has recorded its size; replaying it would be refused again.
        keep(frame)
        return
    progress.safe = True
    if op == "error":
        sys.stderr.write(f"memd: {reply.get('message', 'event refused')}\n")
        return
    stdout = reply.get("stdout")
    if isinstance(stdout, str) and stdout:  # UTF-8 whatever the locale: Claude Code reads UTF-8
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
    # Out at once, 0: interpreter shutdown would first give SIGTERM its default action back
    # (a kill in that window ended the client by the signal), and costs time for nothing.
    _flush(sys.stdout)
    _flush(sys.stderr)
    posix._exit(0)


def _flush(stream: "TextIO") -> None:
    """Flush ``stream``; a closed pipe is no error here (``contextlib`` would cost an import)."""
    try:
        stream.flush()
    except BaseException:  # what the reader did not take, it does not need
        return
