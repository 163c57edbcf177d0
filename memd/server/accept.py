"""Accept: the listening socket's loop, the connection cap, and a graceful close.

``Server.serve`` accepts connections until ``close`` (SIGTERM, SIGINT, a ``Shutdown``
request or the idle exit), each served in a task of its own (``connection.Connections``).
Then it stops accepting and, if the socket file is its own, unlinks it (new clients get
ENOENT at once and spool); a socket systemd passed is left alone, and connections that
arrive meanwhile wait in it for the next daemon.  Requests in flight get ``[daemon]
shutdown_grace`` seconds to finish before their tasks are cancelled.

**Many peers** never take the daemon down.  Connections are capped (``Activity``'s
``max_connections``, under the open-files limit): at the cap, the connection idle longest
makes room, and with none idle the new one is closed at once (its hook client spools).  An
error of ``accept()`` itself (out of files, a connection aborted before it was taken) is
logged at most once per ``ACCEPT_WARN_EVERY`` with how many there were, the idle
connection oldest is closed when files ran out, and accepting resumes after a short
back-off: the loop never ends on one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time

import anyio
import anyio.abc
import structlog

from .. import __version__
from ..protocol import Ok, Shutdown
from ..services.assembly import Services
from ..services.limits import file_limit
from .connection import Connections
from .dispatch import Dispatch, routes

__all__ = ["ACCEPT_BACKOFF", "ACCEPT_WARN_EVERY", "AcceptFailures", "Server", "listen"]

log = structlog.get_logger("memd.server")

ACCEPT_WARN_EVERY = 10.0
"""Seconds between two warnings about failing ``accept()`` calls (the count in between is logged)."""
ACCEPT_BACKOFF = (0.01, 0.5)
"""The first and the longest pause after a failed ``accept()``; it doubles while they fail."""


class AcceptFailures:
    """Failed ``accept()`` calls: how long to pause after each, and a warning at most every
    ``ACCEPT_WARN_EVERY`` seconds with how many failed since the last one."""

    def __init__(self) -> None:
        self.pause = 0.0
        self.count = 0
        self.warned_at = -ACCEPT_WARN_EVERY

    def failed(self, exc: OSError) -> float:
        self.count += 1
        now = time.monotonic()
        if now - self.warned_at >= ACCEPT_WARN_EVERY:
            name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
            log.warning("accept_failed", error=name, failures=self.count, open_files_limit=file_limit())
            self.warned_at, self.count = now, 0
        self.pause = min(ACCEPT_BACKOFF[1], self.pause * 2 or ACCEPT_BACKOFF[0])
        return self.pause

    def succeeded(self) -> None:
        self.pause = 0.0


class Server:
    """Serves the services' requests on one listener; ``close`` begins a graceful shutdown."""

    def __init__(self, services: Services, *, owns_socket: bool = True) -> None:
        """``owns_socket``: the socket file (``services.places.socket``) is unlinked at close;
        False when the listener came from systemd, whose socket file stays."""
        self.socket = services.places.socket
        self.config = services.config.daemon
        self.activity = services.activity
        self.owns_socket = owns_socket
        dispatch = Dispatch(routes(services, self._shutdown))
        self.connections = Connections(self.config, dispatch, self.activity)
        self._accept_scope = anyio.CancelScope()

    async def serve(
        self,
        listener: anyio.abc.SocketListener,
        *,
        task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept until ``close``, then wait for the connections (``shutdown_grace`` at most)."""
        log.info("serving", socket=self.socket, pid=os.getpid(), version=__version__)
        task_status.started(self.socket)
        async with anyio.create_task_group() as handlers:
            async with listener:
                with self._accept_scope:
                    await self._accept(listener, handlers)
            if self.owns_socket:  # new clients now get ENOENT at once and spool
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.socket)
            # else they wait in systemd's socket, which starts the next daemon once this one is gone
            with anyio.move_on_after(self.config.shutdown_grace):
                await self.connections.drained()
            handlers.cancel_scope.cancel()

    def close(self) -> None:
        """Stop accepting, end idle connections, let requests in flight finish."""
        if self.connections.closing:
            return
        log.info("shutting_down", connections=self.activity.connections)
        self._accept_scope.cancel()
        self.connections.close()

    async def _shutdown(self, request: Shutdown) -> Ok:
        self.close()
        return Ok()

    async def _accept(self, listener: anyio.abc.SocketListener, handlers: anyio.abc.TaskGroup) -> None:
        failures = AcceptFailures()
        activity = self.activity
        while True:
            try:
                stream = await listener.accept()
            except (OSError, anyio.BrokenResourceError) as exc:
                error = exc if isinstance(exc, OSError) else exc.__cause__  # anyio wraps it
                if not isinstance(error, OSError):
                    raise
                if error.errno in (errno.EMFILE, errno.ENFILE):
                    self.connections.make_room()
                await anyio.sleep(failures.failed(error))
                continue
            failures.succeeded()
            if activity.connections >= activity.max_connections and not self.connections.make_room():
                log.warning("connection_refused", open=activity.connections, limit=activity.max_connections)
                await stream.aclose()  # every connection is busy: this client spools
                continue
            handlers.start_soon(self.connections.handle, stream)


async def listen(path: str) -> anyio.abc.SocketListener:
    """A new listening socket at ``path``, private to the user (0600)."""
    try:
        return await anyio.create_unix_listener(path, mode=0o600)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG or len(path.encode()) > 100:
            raise OSError(f"socket path is too long for a Unix socket ({len(path)} chars): {path}") from exc
        raise
