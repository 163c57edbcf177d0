"""The daemon: one process serving one store on one socket, until it is told to stop.

Lifecycle, as structured concurrency (every task has an owner, nothing is
fire-and-forget)::

    run()                   instance lock, store, writer task, listener
      workers               the indexer, the consolidator
        background          signal watcher, spool drain, retention (janitor), schema 14's backfill, idle exit
        Server.serve()      accept; one task per connection

Shutdown (SIGTERM, SIGINT, a ``Shutdown`` request or idle exit) calls ``Server.close``:
stop accepting and unlink the socket; close connections that are idle between requests;
give requests in flight ``shutdown_grace`` seconds to finish; then the background tasks
stop, the indexer saves its index, the writer commits what is queued, the database
closes and ``run`` returns.

This is where the daemon's parts meet: the instance lock (``memd.instance``) is taken
here, the services (``memd.services``) are built over the open store, and the server
(``memd.server``) gets the socket, the services and the ``Activity`` they read; the
server knows nothing of locks or paths.  Only a socket-activated daemon (one that
systemd restarts on the next connection) honours ``[daemon] idle_exit``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Callable

import anyio
import anyio.abc
import structlog

from memd_wire.paths import Paths

from .config import Config
from .instance import InstanceLock, prepare_private_dir
from .server.accept import Server, listen
from .server.activation import inherited_socket
from .services.activity import Activity
from .services.assembly import Services
from .services.backfill import Backfill
from .services.consolidation import Consolidator
from .services.idle import IdleExit
from .services.indexer import Indexer
from .services.limits import connection_cap, raise_file_limit
from .services.places import Places
from .store import open_store, working_set

__all__ = ["run"]

log = structlog.get_logger("memd.daemon")


async def run(
    paths: Paths,
    config: Config,
    *,
    task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run a daemon until it is told to stop (or, socket-activated, idles out); raise
    ``AlreadyRunning`` if one is running."""
    before, after = raise_file_limit()
    if after != before:
        log.info("open_files_limit", before=before, after=after)
    inherited = inherited_socket()
    paths = served_paths(paths, inherited)
    idle_exit = idle_exit_seconds(config, inherited)
    lock = InstanceLock(paths)
    lock.acquire(keep_socket=inherited is not None)
    try:
        prepare_private_dir(paths.state_dir)
        async with (
            open_store(
                paths.database,
                busy_timeout_ms=config.store.busy_timeout_ms,
                batch_max=config.store.batch_max,
                working=working_set.Limits(config.endless.working_set_hours, config.endless.working_set_size),
            ) as store,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(store.writer.run)
            indexer = Indexer(config.embedding, paths.database, paths.data_dir, store.writer)
            consolidator = Consolidator(store.writer, config.endless)
            try:
                if inherited is not None:
                    listener = await anyio.abc.SocketListener.from_socket(inherited)
                else:
                    listener = await listen(paths.socket)
                async with anyio.create_task_group() as workers:
                    workers.start_soon(indexer.run)
                    workers.start_soon(consolidator.run)
                    places = Places(paths.socket, paths.data_dir, paths.database, paths.spool_dir)
                    activity = Activity(connection_cap(config.daemon.max_connections))  # the file limit raised
                    services = Services(places, config, store, indexer, consolidator, activity)
                    await _serve(listener, services, idle_exit, inherited is None, task_status)
                    workers.cancel_scope.cancel()  # the indexer saves its index on the way out
            finally:
                store.writer.close()
        log.info("stopped")
    finally:
        if inherited is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(paths.socket)
        lock.release()


async def _serve(
    listener: anyio.abc.SocketListener,
    services: Services,
    idle_exit: float,
    owns_socket: bool,
    task_status: anyio.abc.TaskStatus[str],
) -> None:
    """Serve until closed, with the background services running beside the server."""
    server = Server(services, owns_socket=owns_socket)
    async with anyio.create_task_group() as background:
        background.start_soon(watch_signals, server.close)
        background.start_soon(services.drain.run)
        background.start_soon(services.janitor.run)
        background.start_soon(services.syncer.run)
        background.start_soon(Backfill(services.store.writer).run)
        background.start_soon(services.recovery.run)
        if idle_exit:
            readers, indexer, consolidator = services.store.readers, services.indexer, services.consolidator
            idle = IdleExit(idle_exit, services.activity, readers, indexer, consolidator, server.close)
            background.start_soon(idle.run)
        await server.serve(listener, task_status=task_status)
        background.cancel_scope.cancel()


async def watch_signals(close: Callable[[], None]) -> None:
    """Call ``close`` on the first SIGTERM or SIGINT."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("signal", signal=signal.Signals(signum).name)
            close()
            return


def served_paths(paths: Paths, inherited: socket.socket | None) -> Paths:
    """``paths``, with the socket systemd listens on if it is not the one resolved: what
    the daemon reports, and where its instance lock lives, follow the socket it serves."""
    if inherited is None or (bound := inherited.getsockname()) == paths.socket:
        return paths
    log.warning("socket_path_differs", socket=bound, resolved=paths.socket)
    return Paths(bound, paths.data_dir, paths.state_dir, paths.config_file, owns_runtime_dir=False)


def idle_exit_seconds(config: Config, inherited: socket.socket | None) -> float:
    """``[daemon] idle_exit``, if something will start the daemon again on the next connection."""
    seconds = config.daemon.idle_exit
    if seconds and inherited is None:
        log.info("idle_exit_off", seconds=seconds, reason="not socket-activated: no one would restart memd")
        return 0.0
    if seconds:
        log.info("idle_exit_on", seconds=seconds)
    return seconds
