"""Connections: a peer checked, then request after request until it leaves or must go.

A connection is served only if the peer runs as our own uid (``peer.peer_uid``).  It then
gets ``[daemon] silent_timeout`` to send its first request and ``idle_timeout`` between
requests; a connection waiting for a request is *idle*, and may be closed to make room for
a new one (``make_room``, longest waiting first) or at shutdown.  A request in flight is
never cut short by either.

A frame announced larger than the protocol allows is answered with an ``Error`` and the
connection closed (the stream cannot be resynced); a client that goes away mid-request
costs nothing but its reply, which nobody acknowledged.
"""

from __future__ import annotations

import os
import time

import anyio
import anyio.abc
import structlog
from anyio.abc import SocketAttribute

from ..config import DaemonConfig
from ..protocol import Error, FrameReader, FrameTooLarge, encode_frame
from ..services.activity import Activity
from .dispatch import Dispatch
from .peer import peer_uid

__all__ = ["Connections"]

log = structlog.get_logger("memd.server")


class Connections:
    """The open connections, counted in ``activity``; ``close`` ends the idle ones and lets
    the ones in flight finish, ``drained`` waits for them."""

    def __init__(self, config: DaemonConfig, dispatch: Dispatch, activity: Activity) -> None:
        self.config = config
        self.dispatch = dispatch
        self.activity = activity
        self.closing = False
        self._idle: dict[anyio.CancelScope, None] = {}
        """Scopes of connections waiting for a request, longest waiting first."""
        self._drained = anyio.Event()

    def make_room(self) -> bool:
        """Close the connection idle longest (it waits for a request: none is cut short);
        whether there was one."""
        for scope in self._idle:
            del self._idle[scope]
            scope.cancel()
            return True
        return False

    def close(self) -> None:
        """Serve no further request: end the idle connections now, the others after their reply."""
        self.closing = True
        for scope in self._idle:
            scope.cancel()
        if self.activity.connections == 0:
            self._drained.set()

    async def drained(self) -> None:
        """Wait, after ``close``, until every connection has ended."""
        await self._drained.wait()

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        """Serve one accepted connection to its end."""
        self.activity.opened()
        try:
            async with stream:
                uid = peer_uid(stream.extra(SocketAttribute.raw_socket))
                if uid != os.getuid():
                    log.warning("peer_refused", peer_uid=uid)
                    return
                await self._converse(stream)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            pass  # the client went away; nothing was acknowledged to it
        except Exception:
            log.exception("connection_failed")
        finally:
            self.activity.closed()
            if self.closing and self.activity.connections == 0:
                self._drained.set()

    async def _converse(self, stream: anyio.abc.SocketStream) -> None:
        reader = FrameReader()
        first = True
        while not self.closing:
            try:
                body = await self._next_frame(stream, reader, first)
            except FrameTooLarge as exc:
                log.warning("frame_refused", error=str(exc))
                await stream.send(encode_frame(Error(code=exc.code, message=str(exc))))
                return
            if body is None:
                return
            started = time.perf_counter()
            first = False
            op, hook, reply = await self.dispatch.respond(body)
            # Measured up to the reply being ready (the event committed), not past the write:
            # the write wakes the client, and on a busy machine the kernel may run it first.
            self.activity.answered(op, hook, (time.perf_counter() - started) * 1000)
            await stream.send(encode_frame(reply))

    async def _next_frame(self, stream: anyio.abc.SocketStream, reader: FrameReader, first: bool) -> bytes | None:
        """The next frame body; None at EOF, a timeout (``silent_timeout`` for the first,
        ``idle_timeout`` after), to make room for another connection, or at shutdown."""
        if self.closing:
            return None
        wait = self.config.silent_timeout if first else self.config.idle_timeout
        with anyio.CancelScope(deadline=anyio.current_time() + wait) as scope:
            self._idle[scope] = None
            try:
                while not isinstance(body := reader.next_frame(), bytes):
                    reader.receive_data(await stream.receive())
                return body
            except anyio.EndOfStream:
                if reader.buffered:
                    log.warning("truncated_frame", buffered=reader.buffered)
                return None
            finally:
                self._idle.pop(scope, None)
        return None
