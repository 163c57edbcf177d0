"""A blocking client for the daemon's socket: memctl's (and later the MCP server's) transport."""

from __future__ import annotations

import socket
from typing import TypeVar

from memd.protocol import (
    Error,
    ProtocolError,
    Reply,
    Request,
    decode_reply,
    encode_frame,
)

from .frame import HEADER_SIZE, MAX_FRAME

__all__ = ["Client", "DaemonError", "DaemonUnavailable"]

R = TypeVar("R", bound=Reply)


class DaemonUnavailable(Exception):
    """Nothing answers on the socket."""


class DaemonError(Exception):
    """The daemon answered with an ``Error`` reply."""

    def __init__(self, error: Error) -> None:
        super().__init__(error.message)
        self.code = error.code


class Client:
    """One connection, many requests: ``with Client(path) as c: c.call(Ping(), Pong)``."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except OSError as exc:
            self._sock.close()
            raise DaemonUnavailable(f"no daemon answers on {path}: {exc.strerror}") from None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def call(self, request: Request, expect: type[R]) -> R:
        """Send ``request``; return its reply, which must be an ``expect``."""
        try:
            self._sock.sendall(encode_frame(request))
            header = self._recv_exactly(HEADER_SIZE)
            length = int.from_bytes(header, "big")
            if length > MAX_FRAME:
                raise DaemonUnavailable(f"daemon announced a {length}-byte reply, over the frame limit")
            reply = decode_reply(self._recv_exactly(length))
        except (OSError, EOFError, ProtocolError) as exc:
            raise DaemonUnavailable(f"lost the connection to memd on {self.path}: {exc}") from None
        if isinstance(reply, Error):
            raise DaemonError(reply)
        if not isinstance(reply, expect):
            raise DaemonUnavailable(f"expected a {expect.__name__} reply, got {type(reply).__name__}")
        return reply

    def _recv_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self._sock.recv(min(n, 1 << 20))
            if not chunk:
                raise EOFError("daemon closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)
