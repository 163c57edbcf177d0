"""The frame format the hook client and the daemon share, in one place.

A frame is a ``HEADER_SIZE``-byte big-endian length followed by a msgpack body of that
length; ``memd/protocol.py`` is the schema of the bodies.  The daemon imports the
constants from here (``memd_client.frame``), and so does the hook client (``frame``, a
top-level module: it runs with ``python -I -S`` from its own directory), so the two
cannot drift apart.

The hook client cannot import msgspec (it costs milliseconds it does not have), so this
module also holds what it needs of msgpack, written by hand: the encoder of its one
request (``ingest_frame``) and a reader of the replies (``decode``); and its transport,
one frame out and one reply back over the Unix socket (``send``).  Like the rest of the
hook client it imports C modules only (``time``, and ``_socket`` when it sends), and no
``from __future__`` either (that is a real module, ~0.2 ms): ``tests/test_protocol.py``
holds both sides to the schema.
"""

import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~ms); mypy takes the name as true
if TYPE_CHECKING:
    import _socket

PROTOCOL_VERSION = 1
"""The version every request carries (``v``); a change that renames or retypes a field bumps it."""
HEADER_SIZE = 4
"""Bytes of the length prefix."""
MAX_FRAME = 16 * 1024 * 1024
"""Largest body either side accepts; the length prefix is checked before buffering."""
PAYLOAD_CAP = 8 * 1024 * 1024
"""Bytes of a hook's stdin the client sends.  Past it the middle is dropped: the head and
the last TAIL_KEEP bytes are sent (Claude Code writes ids first and ``tool_use_id`` after a
huge ``tool_response``), and the daemon records the full size."""
TAIL_KEEP = 64 * 1024
"""Bytes at the end of a payload cut at PAYLOAD_CAP that are kept (and salvaged from)."""


# --- the one request the hook client writes ----------------------------------------------


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


CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")
_TRUE = ("1", "true", "yes", "on")


def claude_memory_mode(env: dict[str, str]) -> str:
    """What Claude Code's own memory does in this session, as far as its environment tells
    (``Ingest.claude_memory``): "off", "recall" (per-turn recall, no ``MEMORY.md``) or ""."""
    if env.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "").lower() in _TRUE or env.get("CLAUDE_CODE_SIMPLE"):
        return "off"
    return "recall" if env.get("CLAUDE_MEMORY_STORES", "").strip() else ""


def ingest_frame(
    event: str,
    payload: bytes,
    size: int,
    truncated: bool,
    position: str = "",
    claude_memory: str = "",
    agent: str = "",
    agent_pid: int = 0,
) -> bytes:
    """The ``Ingest`` request of memd/protocol.py, msgpack-encoded and length-prefixed."""
    body = b"".join(
        (
            bytes((0x87 + bool(position) + bool(claude_memory) + bool(agent) + bool(agent_pid),)),  # 7 to 11 entries
            _str("position") + _str(position) if position else b"",
            _str("claude_memory") + _str(claude_memory) if claude_memory else b"",
            _str("agent") + _str(agent) if agent else b"",
            _str("agent_pid") + _uint(agent_pid) if agent_pid else b"",
            _str("op"), _str("ingest"),
            _str("v"), _uint(PROTOCOL_VERSION),
            _str("event"), _str(event),
            _str("sent_at_ns"), _uint(time.time_ns()),
            _str("payload"), b"\xc6", len(payload).to_bytes(4, "big"), payload,
            _str("truncated"), b"\xc3" if truncated else b"\xc2",
            _str("size"), _uint(size),
        )
    )  # fmt: skip
    return len(body).to_bytes(HEADER_SIZE, "big") + body


# --- the replies it reads -----------------------------------------------------------------


def decode(data: bytes) -> object:
    """One msgpack value (a reply's body) as Python's dict, list, str, bytes, int, float, bool
    or None: the subset msgspec emits for memd's replies.  Functions, not a class: a class
    costs the hook client ~20 us to create on every run."""
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        chunk = data[pos : pos + n]
        if len(chunk) != n:
            raise ValueError("truncated msgpack")
        pos += n
        return chunk

    def integer(n: int, signed: bool = False) -> int:
        return int.from_bytes(take(n), "big", signed=signed)

    def mapping(n: int) -> dict[object, object]:
        return {value(): value() for _ in range(n)}

    def value() -> object:
        b = take(1)[0]
        if b < 0x80:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0xA0 <= b <= 0xBF:
            return take(b & 0x1F).decode()
        if 0x80 <= b <= 0x8F:
            return mapping(b & 0x0F)
        if 0x90 <= b <= 0x9F:
            return [value() for _ in range(b & 0x0F)]
        if b == 0xC0:
            return None
        if b in (0xC2, 0xC3):
            return b == 0xC3
        if b in (0xD9, 0xDA, 0xDB):
            return take(integer(1 << (b - 0xD9))).decode()
        if b in (0xC4, 0xC5, 0xC6):
            return take(integer(1 << (b - 0xC4)))
        if b in (0xCC, 0xCD, 0xCE, 0xCF):
            return integer(1 << (b - 0xCC))
        if b in (0xD0, 0xD1, 0xD2, 0xD3):
            return integer(1 << (b - 0xD0), signed=True)
        if b in (0xCA, 0xCB):
            import struct  # floats: no reply of memd's holds one today

            number: float = struct.unpack(">f" if b == 0xCA else ">d", take(4 if b == 0xCA else 8))[0]
            return number
        if b in (0xDC, 0xDD):
            return [value() for _ in range(integer(2 if b == 0xDC else 4))]
        if b in (0xDE, 0xDF):
            return mapping(integer(2 if b == 0xDE else 4))
        raise ValueError(f"unsupported msgpack type byte 0x{b:02x}")

    return value()


class OversizedFrame(ConnectionError):
    """A length prefix over ``MAX_FRAME``: a peer of another protocol, or a corrupt stream."""


def recv_frame(sock: "_socket.socket") -> bytes:
    """The body of the next frame ``sock`` receives (a socket with a timeout: it may raise
    ``TimeoutError``, ``ConnectionError`` when the peer closes, ``OversizedFrame`` when it
    announces too much)."""
    header = b""
    while len(header) < HEADER_SIZE:
        chunk = sock.recv(HEADER_SIZE - len(header))
        if not chunk:
            raise ConnectionError("daemon closed the connection")
        header += chunk
    length = int.from_bytes(header, "big")
    if length > MAX_FRAME:
        raise OversizedFrame(f"the daemon announced a {length}-byte reply, over the {MAX_FRAME}-byte limit")
    parts: list[bytes] = []
    need = length
    while need:
        chunk = sock.recv(min(need, 1 << 16))
        if not chunk:
            raise ConnectionError("daemon closed the connection")
        parts.append(chunk)
        need -= len(chunk)
    return b"".join(parts)


# --- the transport: one frame out, one reply back --------------------------------------


class NotListening(Exception):
    """No daemon serves the socket: no socket file, or one nobody accepts on (ECONNREFUSED)."""


def send(socket_path: str, frame: bytes, timeout: float) -> dict[object, object] | None:
    """Send one frame and return the decoded reply, or None if the daemon did not answer.

    Raises NotListening when there is no daemon to answer.  A daemon that is up but slow,
    busy (its listen backlog full: EAGAIN), closing the connection or not ours (EACCES)
    is not that: starting another would not help.
    """
    import _socket  # here, not at the top: the daemon imports this module for its constants

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_path)
        except (FileNotFoundError, ConnectionRefusedError):
            raise NotListening from None
        sock.sendall(frame)
        reply = decode(recv_frame(sock))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    finally:
        sock.close()
    return reply if isinstance(reply, dict) else None
