"""A blocking client for the daemon's socket: memctl's, the MCP server's and the viewer's transport.

Every failure is told by its cause, each a ``ClientError`` with the advice that fits it:

    DaemonUnavailable   nothing answers on the socket, or the connection was lost mid-call
                        (a daemon that stopped or crashed): start it
    ProtocolMismatch    a daemon answers, but speaks another protocol version, or a reply
                        this memd cannot read (another memd version): restart it
    UnexpectedReply     a well-formed reply of the wrong kind for the request: the same
    DaemonError         the daemon understood and refused the request (its ``Error`` reply,
                        whose ``code`` and message say why)

Frames are read with the hook client's own framer (``frame.recv_frame``): one implementation
of the length prefix and its cap on this side of the socket.
"""

from __future__ import annotations

import _socket  # the C module: `socket` adds ~3 ms of Python (enums, selectors) to every command
from typing import TypeVar

from memd.protocol import Error, ProtocolError, Reply, Request, VersionMismatch, decode_reply, encode_frame
from memd_wire.frame import OversizedFrame, recv_frame

__all__ = ["Client", "ClientError", "DaemonError", "DaemonUnavailable", "ProtocolMismatch", "UnexpectedReply"]

R = TypeVar("R", bound=Reply)

RESTART = "restart the daemon so it runs this memd version: memctl daemon restart"


class ClientError(Exception):
    """The daemon could not answer a request; ``advice`` says what the user can do."""

    advice = ""


class DaemonUnavailable(ClientError):
    """Nothing answers on the socket, or the connection was lost before the reply."""

    advice = "start it: memctl daemon start (or the service: memctl service install)"


class ProtocolMismatch(ClientError):
    """The daemon speaks another protocol version, or sent a reply this client cannot read."""

    advice = RESTART


class UnexpectedReply(ClientError):
    """The daemon answered with a reply of another kind than the request calls for."""

    advice = RESTART


class DaemonError(ClientError):
    """The daemon answered with an ``Error`` reply: it refused the request."""

    def __init__(self, error: Error) -> None:
        super().__init__(error.message)
        self.code = error.code


class Client:
    """One connection, many requests: ``with Client(path) as c: c.call(Ping(), Pong)``."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self._sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
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
            body = recv_frame(self._sock)
        except OversizedFrame as exc:
            raise ProtocolMismatch(f"memd on {self.path}: {exc}") from None
        except OSError as exc:  # closed, reset, timed out
            raise DaemonUnavailable(f"lost the connection to memd on {self.path}: {exc}") from None
        try:
            reply = decode_reply(body, expect)
        except ProtocolError as exc:
            raise ProtocolMismatch(f"memd on {self.path} sent a reply this memctl cannot read ({exc})") from None
        if isinstance(reply, Error):
            if reply.code == VersionMismatch.code:
                raise ProtocolMismatch(f"memd on {self.path} speaks another protocol: {reply.message}")
            raise DaemonError(reply)
        if not isinstance(reply, expect):
            raise UnexpectedReply(
                f"memd on {self.path} answered a {type(request).__name__} with a {type(reply).__name__},"
                f" not a {expect.__name__}"
            )
        return reply
