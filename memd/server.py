"""The daemon's IO layer: a Unix-socket server over the protocol, capture and store.

Lifecycle, as structured concurrency (every task has an owner, nothing is
fire-and-forget)::

    run()                       instance lock, store, writer task, indexer task, listener
      Daemon.serve()            background: signal watcher, spool drain loop, retention (janitor), idle exit
        Daemon._accept_loop()   one task per connection, in the `handlers` group

Shutdown (SIGTERM, SIGINT, a ``Shutdown`` request or idle exit) calls ``Daemon.close``:
stop accepting and unlink the socket; close connections that are idle between requests;
give requests in flight ``shutdown_grace`` seconds to finish; then the writer commits
what is queued, the database closes and ``run`` returns.

**Socket activation.**  systemd can own the listening socket (``systemd/memd.socket``)
and start memd on the first connection, passing the socket as fd 3 with ``LISTEN_PID``
and ``LISTEN_FDS`` set (sd_listen_fds(3)).  memd then serves on that socket instead of
binding one, and leaves its file alone at exit: it is systemd's, and connections that
arrive while no daemon runs wait in it until systemd has started the next one.  Only
such a daemon honours ``[daemon] idle_exit``: it exits once nothing happened for that
long (no connection open, no request, no event left to embed), as cleanly as on SIGTERM
and with status 0, after a consolidation pass (the next daemon does not know what is new).

A peer never takes the daemon down: a bad frame gets a typed ``Error`` reply (or, when
the stream cannot be resynced, a closed connection), and an unexpected exception in
one request is logged and answered with ``Error(code="internal")``.

**Many peers** never do either.  At start the soft limit on open files is raised to the
hard one (``raise_file_limit``).  Connections are capped (``[daemon] max_connections``,
and below the file limit with room for the store's own files): at the cap, the connection
idle longest makes room, and with none idle the new one is closed at once (its hook
client spools).  A new connection gets ``silent_timeout`` to send its first request, an
open one ``idle_timeout`` between requests.  An error of ``accept()`` itself (out of
files, a connection aborted before it was taken) is logged at most once per
``ACCEPT_WARN_EVERY`` with how many there were, the idle connection oldest is closed when
files ran out, and accepting resumes after a short back-off: the loop never ends on one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import signal
import socket
import time
from collections.abc import Mapping

import anyio
import anyio.abc
import structlog
from anyio.abc import SocketAttribute

from memd_client.paths import Paths

from . import __version__, spool
from .capture import Capture, InvalidPayload, NewEvent, Skipped, project_root
from .config import Config
from .consolidator import Consolidator
from .context import UNCLOSED_PRIVATE_NOTICE, hook_output
from .continuity import working_set
from .instance import InstanceLock, prepare_private_dir
from .janitor import Janitor
from .metrics import Latencies, hook_key
from .peer import peer_uid
from .privacy import Privacy
from .protocol import (
    CONTEXT_EVENTS,
    NEED_DATA,
    PROTOCOL_VERSION,
    BadRequest,
    CommitsFailing,
    Continuation,
    Details,
    EmbeddingStatus,
    Endless,
    Error,
    Events,
    Forget,
    FrameReader,
    FrameTooLarge,
    Gc,
    History,
    Import,
    Imported,
    Ingest,
    Ingested,
    Ok,
    Ping,
    Pong,
    ProtocolError,
    Rebuild,
    Rebuilt,
    Remember,
    Reply,
    RequestType,
    Restore,
    Scan,
    Search,
    Sessions,
    Shutdown,
    SmartSearch,
    Stats,
    Status,
    StatusReport,
    Tasks,
    Timeline,
    Verify,
    VersionMismatch,
    decode_request,
    encode_frame,
)
from .services.errors import NotFound
from .services.importer import Importer
from .services.indexer import Indexer
from .services.lifecycle import Lifecycle
from .services.recall import Recall
from .services.search import Retriever
from .store import EventError, Store, StoreError, open_store, outbox, queries
from .store.schema import rebuild_keyword_indexes
from .store.writer import CommitHealth, describe

__all__ = ["Daemon", "run"]

log = structlog.get_logger("memd.server")

MAX_LIMIT = 1000
INLINE_CAPTURE_BYTES = 64 * 1024
"""Payloads up to this size are prepared on the event loop (~0.1-0.3 ms); larger ones
(a 1 MB Read takes tens of ms to filter) in a worker thread, so the loop keeps serving."""
SPOOL_PARALLEL = 64
IMPORT_QUIET = 3.0
"""Seconds the indexer waits after an import or restore batch: the next batch usually comes first."""
SD_LISTEN_FDS_START = 3
"""The first file descriptor systemd passes to a socket-activated service."""
LISTEN_VARIABLES = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")
BUSY_RECHECK = 5.0
"""Seconds between looks, once idle long enough to exit, at background work that holds the exit back."""
FILE_RESERVE = 128
"""File descriptors kept for the store, the model, the logs and the spool, below the limit
the connection cap must stay under."""
ACCEPT_WARN_EVERY = 10.0
"""Seconds between two warnings about failing ``accept()`` calls (the count in between is logged)."""
ACCEPT_BACKOFF = (0.01, 0.5)
"""The first and the longest pause after a failed ``accept()``; it doubles while they fail."""


def _commits_failing(health: CommitHealth) -> CommitsFailing | None:
    if health.failing_since is None or health.trouble is None:
        return None
    return CommitsFailing(
        since=health.failing_since, failures=health.failures, reason=health.trouble.reason,
        fix=health.trouble.fix, detail=health.detail,
    )  # fmt: skip


def file_limit() -> int:
    """The soft limit on this process's open files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def raise_file_limit() -> tuple[int, int]:
    """Raise the soft limit on open files to the hard one (systemd user services and most
    shells start at 1,024, which a flood of connections exhausts); (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):  # a limit a container will not let go
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return soft, file_limit()


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


class Daemon:
    """Serves one store on one listener; ``close`` begins a graceful shutdown."""

    def __init__(
        self,
        paths: Paths,
        config: Config,
        store: Store,
        indexer: Indexer | None = None,
        consolidator: Consolidator | None = None,
        *,
        idle_exit: float = 0.0,
        owns_socket: bool = True,
    ) -> None:
        """``idle_exit``: seconds of idleness after which the daemon closes itself (0: never).
        ``owns_socket``: False when the listener came from systemd, whose socket file stays."""
        self.paths = paths
        self.config = config
        self.store = store
        self.indexer = indexer
        self.consolidator = consolidator or Consolidator(store.writer, config.endless)
        self.retriever = Retriever(store.readers, indexer, config.retrieval)
        self.recall = Recall(store, self.retriever, config)
        self.capture = Capture(config.capture, Privacy(config.privacy))
        self.importer = Importer(self.capture, store, config.retention)
        self.lifecycle = Lifecycle(
            store,
            self.retriever,
            indexer,
            lambda request: self.ingest(request, live=False),
            capture=self.capture,
            spool_dir=paths.spool_dir,
        )
        self.janitor = Janitor(store, self.lifecycle, config.retention, paths.database, indexer)
        self.skipped = 0
        self._capture_thread = anyio.CapacityLimiter(1)
        self.started = time.time()
        self.latencies = Latencies()
        """Per request kind (``memctl status``)."""
        self.hook_latencies = Latencies()
        """Per hook event, ingests only (``memctl stats``): the same times as ``ingest``'s."""
        self._closing = False
        self._accept_scope = anyio.CancelScope()
        self._idle: dict[anyio.CancelScope, None] = {}
        """Scopes of connections waiting for a request, longest waiting first."""
        self.max_connections = min(config.daemon.max_connections, max(8, file_limit() - FILE_RESERVE))
        self._active = 0
        self._drained = anyio.Event()
        self._stuck_spool: set[str] = set()
        self.idle_exit = idle_exit
        self.owns_socket = owns_socket
        self._last_activity = time.monotonic()

    # --- lifecycle ------------------------------------------------------------------

    async def serve(
        self,
        listener: anyio.abc.Listener[anyio.abc.SocketStream],
        *,
        task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        async with anyio.create_task_group() as background:
            background.start_soon(self._watch_signals)
            background.start_soon(self._spool_loop)
            background.start_soon(self.janitor.run)
            if self.idle_exit:
                background.start_soon(self._idle_exit_loop)
            log.info("serving", socket=self.paths.socket, pid=os.getpid(), version=__version__)
            task_status.started(self.paths.socket)
            await self._accept_loop(listener)
            background.cancel_scope.cancel()

    def close(self) -> None:
        """Stop accepting, end idle connections, let requests in flight finish."""
        if self._closing:
            return
        self._closing = True
        log.info("shutting_down", connections=self._active)
        self._accept_scope.cancel()
        for scope in self._idle:
            scope.cancel()
        if self._active == 0:
            self._drained.set()

    async def _watch_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("signal", signal=signal.Signals(signum).name)
                self.close()
                return

    # --- idle exit ------------------------------------------------------------------

    def _touch(self) -> None:
        """Something happened: the idle clock starts again."""
        self._last_activity = time.monotonic()

    def _idle_left(self) -> float:
        """Seconds until the daemon has been idle for ``idle_exit``; an open connection
        counts as activity, so with one open the whole period is left."""
        if self._active:
            return self.idle_exit
        return max(0.0, self._last_activity + self.idle_exit - time.monotonic())

    async def _idle_exit_loop(self) -> None:
        while True:
            await anyio.sleep(self._idle_left())
            if self._idle_left() > 0:
                continue  # a client came meanwhile
            if await self._background_busy():
                await anyio.sleep(min(self.idle_exit, BUSY_RECHECK))
                continue
            await self._consolidate_before_exit()
            if self._idle_left() == 0:  # and nobody came while it ran
                log.info("idle_exit", seconds=self.idle_exit, uptime=round(time.time() - self.started, 1))
                self.close()
                return

    async def _background_busy(self) -> bool:
        if self.indexer is None:
            return False
        backlog = (await self.store.readers.run(outbox.stats, time.time())).backlog
        return embedding_pending(self.indexer.state, backlog)

    async def _consolidate_before_exit(self) -> None:
        """Consolidate now what the consolidator's triggers would have taken later: it
        counts new events in memory, so the next daemon would not know about them (and a
        running consolidation is waited for: ``run_now`` takes the same lock)."""
        try:
            await self.consolidator.run_now()
        except Exception:  # the next daemon's triggers retry it
            log.exception("consolidation_failed")

    async def _accept_loop(self, listener: anyio.abc.Listener[anyio.abc.SocketStream]) -> None:
        failures = AcceptFailures()
        async with anyio.create_task_group() as handlers:
            async with listener:
                with self._accept_scope:
                    while True:
                        try:
                            stream = await listener.accept()
                        except (OSError, anyio.BrokenResourceError) as exc:
                            error = exc if isinstance(exc, OSError) else exc.__cause__  # anyio wraps it
                            if not isinstance(error, OSError):
                                raise
                            if error.errno in (errno.EMFILE, errno.ENFILE):
                                self._make_room()
                            await anyio.sleep(failures.failed(error))
                            continue
                        failures.succeeded()
                        if self._active >= self.max_connections and not self._make_room():
                            log.warning("connection_refused", open=self._active, limit=self.max_connections)
                            await stream.aclose()  # every connection is busy: this client spools
                            continue
                        handlers.start_soon(self._handle, stream)
            if self.owns_socket:  # new clients now get ENOENT at once and spool
                _unlink(self.paths.socket)
            # else they wait in systemd's socket, which starts the next daemon once this one is gone
            with anyio.move_on_after(self.config.daemon.shutdown_grace):
                await self._drained.wait()
            handlers.cancel_scope.cancel()

    # --- connections ----------------------------------------------------------------

    def _make_room(self) -> bool:
        """Close the connection idle longest (it waits for a request: none is cut short);
        whether there was one."""
        for scope in self._idle:
            del self._idle[scope]
            scope.cancel()
            return True
        return False

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        self._active += 1
        self._touch()
        try:
            async with stream:
                uid = peer_uid(stream.extra(SocketAttribute.raw_socket))
                if uid != os.getuid():
                    log.warning("peer_refused", peer_uid=uid)
                    return
                await self._serve_connection(stream)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            pass  # the client went away; nothing was acknowledged to it
        except Exception:
            log.exception("connection_failed")
        finally:
            self._active -= 1
            self._touch()
            if self._closing and self._active == 0:
                self._drained.set()

    async def _serve_connection(self, stream: anyio.abc.SocketStream) -> None:
        reader = FrameReader()
        first = True
        while not self._closing:
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
            op, hook, reply = await self._respond(body)
            # Measured up to the reply being ready (the event committed), not past the write:
            # the write wakes the client, and on a busy machine the kernel may run it first.
            ms = (time.perf_counter() - started) * 1000
            self.latencies.record(op, ms)
            if hook:
                self.hook_latencies.record(hook, ms)
            self._touch()
            await stream.send(encode_frame(reply))

    async def _next_frame(self, stream: anyio.abc.SocketStream, reader: FrameReader, first: bool) -> bytes | None:
        """The next frame body; None at EOF, a timeout (``silent_timeout`` for the first,
        ``idle_timeout`` after), to make room for another connection, or at shutdown."""
        if self._closing:
            return None
        wait = self.config.daemon.silent_timeout if first else self.config.daemon.idle_timeout
        with anyio.CancelScope(deadline=anyio.current_time() + wait) as scope:
            self._idle[scope] = None
            try:
                while (body := reader.next_frame()) is NEED_DATA:
                    reader.receive_data(await stream.receive())
                return body
            except anyio.EndOfStream:
                if reader.buffered:
                    log.warning("truncated_frame", buffered=reader.buffered)
                return None
            finally:
                self._idle.pop(scope, None)
        return None

    async def _respond(self, body: bytes) -> tuple[str, str, Reply]:
        """The request's kind, its hook event (an ingest's; else ""), and the reply."""
        try:
            request = decode_request(body)
        except ProtocolError as exc:
            log.warning("request_refused", code=exc.code, size=len(body))
            return "invalid", "", Error(code=exc.code, message=str(exc))
        op = type(request).__name__.lower()
        hook = hook_key(request.event) if isinstance(request, Ingest) else ""
        try:
            return op, hook, await self.dispatch(request)
        except NotFound as exc:
            return op, hook, Error(code=exc.code, message=str(exc))
        except Exception as exc:
            log.exception("request_failed", op=op)
            return op, hook, Error(code="internal", message=f"{type(exc).__name__}: see the memd log")

    # --- requests -------------------------------------------------------------------

    async def dispatch(self, request: RequestType) -> Reply:
        match request:
            case Ingest():
                return await self.ingest(request)
            case Ping():
                return Pong(version=__version__, pid=os.getpid())
            case Status():
                return await self.status()
            case History():
                rows = await queries.history(
                    self.store.reader,
                    _clamp(request.limit),
                    session=request.session,
                    kind=request.kind,
                    tool=request.tool,
                    project=request.project,
                )
                return Events(events=rows)
            case SmartSearch():  # before Search: a SmartSearch is a Search
                request.limit = _clamp(request.limit)
                return await self.recall.smart(request)
            case Search():
                request.limit = _clamp(request.limit)
                return await self.retriever.search(request)
            case Timeline():
                return await self.recall.timeline(request)
            case Details():
                return await self.recall.details(request)
            case Verify():
                return await self.recall.verify(request)
            case Stats():
                report = await self.recall.stats(request)
                report.embedding = await self.embedding_status()
                report.hook_latency_ms = self.hook_latencies.snapshot()
                return report
            case Endless():
                made = await self.consolidator.run_now() if request.consolidate else 0
                reply = await self.recall.set_endless(request)
                reply.consolidated = made
                return reply
            case Continuation():
                return await self.recall.continuation(request)
            case Tasks():
                return await self.recall.tasks(request)
            case Import():
                self._bulk_load()
                return self._stored(await self.importer.import_events(request))
            case Restore():
                self._bulk_load()
                return self._stored(await self.importer.restore(request))
            case Remember():
                return await self.lifecycle.remember(request)
            case Forget():
                return await self.lifecycle.forget(request)
            case Scan():
                return await self.lifecycle.scan(request)
            case Gc():
                return await self.janitor.collect(request)
            case Sessions():
                return await self.lifecycle.sessions(request)
            case Rebuild():
                return await self.rebuild(request)
            case Shutdown():
                self.close()
                return Ok()

    def _bulk_load(self) -> None:
        """An import or restore batch: embedding waits, the next batch usually comes first."""
        if self.indexer is not None:
            self.indexer.defer(IMPORT_QUIET)

    def _stored(self, reply: Imported) -> Imported:
        """After events were stored in bulk: the background workers have work."""
        if reply.stored:
            self.consolidator.notify()
            if self.indexer is not None:
                self.indexer.notify()
        return reply

    async def ingest(self, request: Ingest, *, live: bool = True) -> Reply:
        """Commit one hook event; reply only once it is durable.

        A live SessionStart or UserPromptSubmit is answered with the context for the agent;
        a replayed one (``live=False``: from the spool) is not, as nobody reads the answer.
        """
        try:
            if len(request.payload) <= INLINE_CAPTURE_BYTES:
                event = self.capture.prepare(request, time.time())
            else:
                event = await anyio.to_thread.run_sync(
                    self.capture.prepare, request, time.time(), limiter=self._capture_thread
                )
        except InvalidPayload as exc:
            size = request.size or len(request.payload)
            await self.store.writer.reject(request.event or "?", size, str(exc))
            log.warning("payload_refused", hook_event=request.event, size=size)
            return Error(code="invalid_payload", message=f"{request.event} event not stored: {exc}")
        if isinstance(event, Skipped):
            self.skipped += 1
            log.debug("skipped", hook_event=request.event, reason=event.reason)
            return Ingested(event_id=0, skipped=event.reason)
        root = project_root(event.cwd) if event.cwd else None
        try:
            committed = await self.store.writer.submit(event, root)
        except EventError as exc:  # this event only, for good (it is in quarantine): not worth a retry soon
            return Error(code="event_failed", message=str(exc))
        except StoreError as exc:  # the batch's commit failed (a full disk, a lock): a later try may work
            return Error(code="store_error", message=str(exc))
        log.debug(
            "ingested",
            event_id=committed.event_id,
            kind=event.kind,
            size=event.size,
            duplicate=committed.duplicate,
            **{k: v for k, v in event.redactions.items() if v},
        )
        stdout = ""
        if live and not committed.duplicate:  # a hook that fired twice gets its context once
            stdout = await self._context(event)
        if not committed.duplicate:
            self.consolidator.notify()
            if self.indexer is not None:  # after the context: embedding would compete with the query's
                self.indexer.notify()
        return Ingested(event_id=committed.event_id, duplicate=committed.duplicate, stdout=stdout)

    async def _context(self, event: NewEvent) -> str:
        """The hook's stdout for Claude Code: context for the agent, a notice for the user.

        A failure here costs the agent its context for this event, never the event: it is
        committed already, so it is logged and the hook gets no context (a notice still goes out).
        """
        if event.event not in CONTEXT_EVENTS:
            return ""
        notice = UNCLOSED_PRIVATE_NOTICE if event.redactions.get("unclosed") else ""
        try:
            if event.event == "SessionStart":
                context = await self.recall.session_start(event)
            else:
                context = await self.recall.prompt(event)
            return hook_output(event.event, context=context, system_message=notice)
        except Exception:
            log.exception("context_failed", hook_event=event.event)
            return hook_output(event.event, system_message=notice)

    async def status(self) -> StatusReport:
        counts = await queries.counts(self.store.reader)
        return StatusReport(
            version=__version__,
            protocol=PROTOCOL_VERSION,
            pid=os.getpid(),
            uptime=round(time.time() - self.started, 3),
            socket=self.paths.socket,
            data_dir=self.paths.data_dir,
            database=self.paths.database,
            spool_backlog=spool.backlog(self.paths.spool_dir),
            spool_failed=len(spool.failed(self.paths.spool_dir)),
            db_bytes=queries.db_bytes(self.paths.database),
            latency_ms=self.latencies.snapshot(),
            redactions=await queries.redaction_totals(self.store.reader),
            skipped=self.skipped,
            lone_surrogates=await queries.lone_surrogate_events(self.store.reader),
            commits_failing=_commits_failing(self.store.writer.health),
            connections=self._active,
            max_connections=self.max_connections,
            open_files_limit=file_limit(),
            embedding=await self.embedding_status(),
            **counts,
        )

    async def embedding_status(self) -> EmbeddingStatus:
        waiting = await self.store.readers.run(outbox.stats, time.time())
        indexer = self.indexer
        return EmbeddingStatus(
            model=indexer.model if indexer else self.config.embedding.model,
            state=indexer.state if indexer else "disabled",
            reason=indexer.reason if indexer else "",
            index_vectors=len(indexer.index) if indexer and indexer.index is not None else 0,
            stored_vectors=waiting.vectors,
            backlog=waiting.backlog,
            unembedded=waiting.unembedded,
            oldest_pending_age=waiting.oldest_pending_age,
            failed=waiting.failed,
        )

    async def rebuild(self, request: Rebuild) -> Rebuilt:
        """Recreate derived data from the event log (``memctl rebuild``)."""
        reply = Rebuilt()
        if request.fts:
            reply.fts_rows = await self.store.writer.call(rebuild_keyword_indexes)
            log.info("keyword_indexes_rebuilt", rows=reply.fts_rows)
        if request.vectors:
            if self.indexer is not None:
                await self.indexer.reset()
            else:
                await self.store.writer.call(outbox.requeue_all)
            reply.vectors_queued = (await self.store.readers.run(outbox.stats, time.time())).backlog
            log.info("vectors_requeued", events=reply.vectors_queued)
        return reply

    # --- spool ----------------------------------------------------------------------

    async def _spool_loop(self) -> None:
        while True:
            await self.drain_spool()
            await anyio.sleep(self.config.daemon.spool_drain_interval)

    async def drain_spool(self) -> int:
        """Ingest every spooled frame; return how many files were settled.  Under the spool
        lock: a forget looks at the spool and deletes with no frame ingested in between."""
        async with self.lifecycle.spool_lock:
            return await self._drain_spool()

    async def _drain_spool(self) -> int:
        spool.sweep_temp_files(self.paths.spool_dir)
        files = [p for p in spool.pending(self.paths.spool_dir) if p not in self._stuck_spool]
        settled = 0
        for start in range(0, len(files), SPOOL_PARALLEL):
            chunk = files[start : start + SPOOL_PARALLEL]
            results: list[bool] = []
            async with anyio.create_task_group() as tg:
                for path in chunk:
                    tg.start_soon(self._replay, path, results)
            settled += sum(results)
        if files:
            self._touch()
            log.info("spool_drained", files=len(files), settled=settled)
        return settled

    async def _replay(self, path: str, results: list[bool]) -> None:
        """Ingest one spooled frame.  Settled (deleted): stored, or refused for good as its live
        hook would have been (invalid JSON, recorded).  Kept for the next drain: a failed commit
        (every frame fails alike).  A failure of this frame's own (an exception, an event the
        writer could not store, a read error) counts, and the ``MAX_ATTEMPTS``-th sets the
        file aside; a frame that can never become an event is set aside at once."""
        try:
            body = spool.read_frame(path)
            request = decode_request(body)
            if not isinstance(request, Ingest):
                raise BadRequest(f"spool holds a {type(request).__name__} request, not an event")
        except FileNotFoundError:
            return
        except VersionMismatch as exc:
            # Kept for a daemon that speaks its version; reported, not retried every round.
            self._stuck_spool.add(path)
            log.warning("spool_version_mismatch", file=os.path.basename(path), error=str(exc))
            return
        except (spool.CorruptSpoolFile, ProtocolError) as exc:
            await self.store.writer.reject("spool", _size(path), f"unreadable spool file: {exc}")
            self._set_aside(path, f"unreadable: {exc}", spool.attempts(path))
            results.append(True)
            return
        except OSError as exc:  # perhaps passing (no file descriptor left): tried again
            self._failed_replay(path, f"unreadable: {type(exc).__name__}: {exc.strerror}", results)
            return
        try:
            reply = await self.ingest(request, live=False)
        except Exception as exc:  # a bug, which would fail this frame on every round
            self._failed_replay(path, describe(exc), results)
            return
        if isinstance(reply, Ingested) or (isinstance(reply, Error) and reply.code == "invalid_payload"):
            _unlink(path)
            results.append(True)
        elif isinstance(reply, Error) and reply.code == "event_failed":
            self._failed_replay(path, reply.message, results)

    def _failed_replay(self, path: str, reason: str, results: list[bool]) -> None:
        """Count a failed replay of the frame at ``path``; set it aside after ``MAX_ATTEMPTS``."""
        try:
            path, count = spool.count_failure(path)
        except FileNotFoundError:
            return
        except OSError as exc:  # cannot rename it (a read-only spool): stop trying it until a restart
            self._stuck_spool.add(path)
            log.error("spool_replay_failed", file=os.path.basename(path), reason=reason, kept=exc.strerror)
            return
        if count < spool.MAX_ATTEMPTS:
            log.warning("spool_replay_failed", file=os.path.basename(path), attempt=count, reason=reason)
            return
        self._set_aside(path, reason, count)
        results.append(True)

    def _set_aside(self, path: str, reason: str, attempts: int) -> None:
        """Move the frame at ``path`` into the spool's ``failed/``: kept, no longer replayed."""
        try:
            moved = spool.move_aside(self.paths.spool_dir, path)
        except OSError as exc:
            self._stuck_spool.add(path)
            log.error("spool_file_not_set_aside", file=os.path.basename(path), reason=reason, error=exc.strerror)
            return
        log.warning(
            "spool_file_set_aside", file=os.path.basename(moved), to=os.path.dirname(moved), attempts=attempts,
            reason=reason, fix="memctl spool retry (or: memctl spool delete)",
        )  # fmt: skip


def embedding_pending(state: str, backlog: int) -> bool:
    """Whether the indexer has work that an idle exit would interrupt: a model loading or
    an index opening, or events waiting with a model ready to embed them.  Without a model
    (disabled, unavailable) the backlog waits for a daemon that has one, so it keeps
    nobody up."""
    return state in ("loading", "indexing") or (state == "ready" and backlog > 0)


def _clamp(limit: int) -> int:
    return max(1, min(MAX_LIMIT, limit))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


async def _listen(path: str) -> anyio.abc.Listener[anyio.abc.SocketStream]:
    try:
        return await anyio.create_unix_listener(path, mode=0o600)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG or len(path.encode()) > 100:
            raise OSError(f"socket path is too long for a Unix socket ({len(path)} chars): {path}") from exc
        raise


# --- socket activation ------------------------------------------------------------------


def listen_fds(env: Mapping[str, str], pid: int) -> int:
    """How many listening sockets systemd passed to process ``pid`` (sd_listen_fds(3)).

    ``LISTEN_FDS`` counts them from fd 3 on, but only when ``LISTEN_PID`` names this very
    process: otherwise they were meant for a parent that exec'd us and left the variables
    behind.  Anything malformed means none.
    """
    if env.get("LISTEN_PID", "").strip() != str(pid):
        return 0
    try:
        return max(0, int(env.get("LISTEN_FDS", "")))
    except ValueError:
        return 0


def adopt_socket(fd: int) -> socket.socket | str:
    """The listening Unix stream socket on ``fd`` bound to a file, or why it cannot be used.
    What is refused is left open as it was: it is not ours to close."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        return f"fd {fd} is not a socket ({exc.strerror})"
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
        reason = f"fd {fd} is an {sock.family.name} {sock.type.name} socket, not a Unix stream socket"
    elif not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        reason = f"fd {fd} is a Unix socket that is not listening"
    elif not isinstance(path := sock.getsockname(), str) or not path.startswith("/"):
        reason = f"fd {fd} is a Unix socket without a file path (abstract or unnamed)"
    else:
        os.set_inheritable(fd, False)  # systemd's sd_listen_fds sets FD_CLOEXEC as well
        return sock
    sock.detach()
    return reason


def inherited_socket() -> socket.socket | None:
    """The socket systemd passed to this process, if any; a socket that cannot be served
    is logged and ignored (the daemon then binds its own).  The ``LISTEN_*`` variables
    are removed from the environment either way, so that no child takes them for its own."""
    count = listen_fds(os.environ, os.getpid())
    for name in LISTEN_VARIABLES:
        os.environ.pop(name, None)
    if not count:
        return None
    adopted = adopt_socket(SD_LISTEN_FDS_START)
    if isinstance(adopted, str):
        log.warning("inherited_socket_refused", fds=count, reason=adopted)
        return None
    log.info("socket_activated", fd=SD_LISTEN_FDS_START, fds=count, socket=adopted.getsockname())
    return adopted


def _served_paths(paths: Paths, inherited: socket.socket | None) -> Paths:
    """``paths``, with the socket systemd listens on if it is not the one resolved: what
    the daemon reports, and where its instance lock lives, follow the socket it serves."""
    if inherited is None or (bound := inherited.getsockname()) == paths.socket:
        return paths
    log.warning("socket_path_differs", socket=bound, resolved=paths.socket)
    return Paths(bound, paths.data_dir, paths.state_dir, paths.config_file, owns_runtime_dir=False)


def _idle_exit_seconds(config: Config, inherited: socket.socket | None) -> float:
    """``[daemon] idle_exit``, if something will start the daemon again on the next connection."""
    seconds = config.daemon.idle_exit
    if seconds and inherited is None:
        log.info("idle_exit_off", seconds=seconds, reason="not socket-activated: no one would restart memd")
        return 0.0
    if seconds:
        log.info("idle_exit_on", seconds=seconds)
    return seconds


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
    paths = _served_paths(paths, inherited)
    idle_exit = _idle_exit_seconds(config, inherited)
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
                    listener = await _listen(paths.socket)
                async with anyio.create_task_group() as services:
                    services.start_soon(indexer.run)
                    services.start_soon(consolidator.run)
                    daemon = Daemon(
                        paths,
                        config,
                        store,
                        indexer,
                        consolidator,
                        idle_exit=idle_exit,
                        owns_socket=inherited is None,
                    )
                    await daemon.serve(listener, task_status=task_status)
                    services.cancel_scope.cancel()  # the indexer saves its index on the way out
            finally:
                store.writer.close()
        log.info("stopped")
    finally:
        if inherited is None:
            _unlink(paths.socket)
        lock.release()
