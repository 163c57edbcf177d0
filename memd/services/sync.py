"""Sync through PostgreSQL (issue 20): one background task that pushes what this machine
captured, pulls what the others pushed, and applies it to the local store.

    connect ─► round: push tombstones and new local events (filtered again) ─► pull ─► apply
       ▲          └─ nothing moved: wait ``[sync] interval`` (or until new events arrive)
       └── any failure (server down, killed, unreachable): recorded, retried with backoff

The local store stays canonical and search stays local: sync only adds rows to it (and
forgets what another machine forgot).  Capture never waits for sync: the hook path does
not know it exists; events wait in the store's sync outbox for as long as the server is
away, and a round resumes from there: an event leaves the outbox, and the pull cursor
moves, only after the server or the store committed.  Nothing is applied twice (an event's idempotency key is
unique here, a push is idempotent there) and nothing is lost (a cursor never passes what
was not committed on the other side).

Each data dir pushes under a random id of its own (``machine_id``), never the host name, and
applies every row it pulls, its own id's too (a no-op for what it has), so two machines never
skip each other's rows; a row under its own id that it lacked says a copy of the data dir syncs
too (``memctl doctor``).

Privacy: content was filtered at capture; it is filtered again for secrets with today's
rules before it leaves (a rule added since then still applies; and always, even where the
local store keeps secrets by choice: ``[privacy] secrets = false``), the raw hook payload
never leaves, and private spans never reached the store.  Logs carry counts and error classes, never
content or the URL's password.

psycopg is imported when sync is configured, not at daemon start.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, Literal

import anyio
import msgspec
import structlog

from ..capture.privacy import Privacy
from ..config import PrivacyConfig, SyncConfig
from ..protocol import ExportedEvent, Share, Shared, SyncReport
from ..retrieve.layers import resolve_all
from ..store import Store, remote, sync
from ..store.forget import plan
from .erasure import erase
from .errors import cause_of, problem
from .indexer import Indexer

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    from .team import Team

__all__ = ["Syncer", "outgoing", "server_name"]

log = structlog.get_logger("memd.sync")

MAX_BACKOFF = 60.0
WORDS_MAX = 50_000
"""Characters of a text the server makes a team row's words of (a tsvector holds at most 1 MB)."""


def server_name(url: str) -> str:
    """The server as ``memctl sync status`` shows it: role, host, port, database; no password."""
    parts = urllib.parse.urlsplit(url)
    user = urllib.parse.unquote(parts.username or "")
    where = f"{parts.hostname or 'localhost'}{f':{parts.port}' if parts.port else ''}{parts.path}"
    return f"{user}@{where}" if user else where


class Syncer:
    """The sync task of one daemon (``run``), and its report."""

    def __init__(
        self, config: SyncConfig, store: Store, indexer: Indexer | None, privacy: PrivacyConfig, data_dir: str,
        team: Team,
    ) -> None:  # fmt: skip
        self.config = config
        self.team = team  # team rows' vectors
        self.url = os.environ.get("MEMD_SYNC_URL") or config.url
        self.data_dir = data_dir
        self.label = config.machine or socket.gethostname()  # shown, never compared
        self.machine = ""  # this data dir's id in the shared log (``machine_id``), read when sync starts
        self.shared_id_seen: float | None = None  # when another data dir's rows came under this id
        self.role = ""  # the server role this daemon syncs as: a pulled forget's owner is compared with it
        self.server = server_name(self.url) if self.url else ""
        self.store = store
        self.indexer = indexer
        # Secrets always, whatever this machine keeps for itself ([privacy] secrets = false is a
        # choice about the local store); private spans never reached the store.
        self.privacy = Privacy(msgspec.structs.replace(privacy, secrets=True)).secrets_only()
        self.state: Literal["connecting", "syncing", "failing"] = "connecting"
        self.pulled = 0
        self.lag_ms: float | None = None
        self._wake = anyio.Event()

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    def notify(self) -> None:
        """New local events: push them now rather than at the next interval."""
        self._wake.set()

    async def report(self) -> SyncReport | None:
        if not self.enabled:
            return None
        known = await self.store.readers.run(sync.state) or sync.NOT_YET
        return SyncReport(
            server=self.server, machine=f"{self.label} ({self.machine})" if self.machine else self.label,
            shared_id_seen=self.shared_id_seen, state=self.state, pending=known.pending, tombstones=known.tombstones,
            last_push=known.last_push, last_pull=known.last_pull, last_error=known.last_error,
            last_error_at=known.last_error_at, pulled=self.pulled, lag_ms=self.lag_ms,
        )  # fmt: skip

    async def run(self) -> None:
        """Sync until cancelled; never raises (a failure is recorded and retried)."""
        if not self.enabled:
            return
        import psycopg

        self.machine = await anyio.to_thread.run_sync(machine_id, self.data_dir)
        await self.store.writer.call(sync.begin, self.server, self.config.pull_teams)
        backoff = 1.0
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True, connect_timeout=10)
                async with conn:
                    if (server := await remote.server(conn)) is None:
                        raise SyncProblem("the server has no memd schema: run `memctl sync setup`")
                    await remote.listen(conn)
                    self.role = await remote.role(conn)
                    self.state = "syncing"
                    log.info("sync_connected", server=self.server, machine=self.machine, label=self.label)
                    while True:
                        moved = await self._round(conn, server)
                        backoff = 1.0  # a round went through: the next failure starts over
                        if not moved:
                            await self._idle(conn)
            except Exception as exc:  # the daemon serves on whatever sync meets; cancellation is not caught
                self.state = "failing"
                cause = cause_of(exc)
                said = problem(cause)
                expected = isinstance(cause, (psycopg.Error, OSError, SyncProblem))
                log.warning("sync_failed", server=self.server, error=said, retry_s=backoff, exc_info=not expected)
                await self.store.writer.call(sync.failed, said, time.time())
                await anyio.sleep(backoff)
                backoff = min(MAX_BACKOFF, backoff * 2)

    async def _idle(self, conn: AsyncConnection) -> None:
        """Until another machine pushed, this one captured or forgot (``notify``), or ``interval`` passed."""
        async with anyio.create_task_group() as race:

            async def local() -> None:
                await self._wake.wait()
                race.cancel_scope.cancel()

            async def server() -> None:
                await remote.wait(conn, self.config.interval)
                race.cancel_scope.cancel()

            race.start_soon(local)
            race.start_soon(server)
        self._wake = anyio.Event()

    async def _round(self, conn: AsyncConnection, server: remote.Server) -> bool:
        """Push, then pull and apply one batch each way; whether anything moved."""
        batch = self.config.batch
        out = await self.store.readers.run(sync.outbound, batch)
        rows = await self.team.vectors(outgoing(out, self.privacy, self.config.teams), server)
        if rows:
            await remote.push(conn, rows, self.machine, server)
            await self.store.writer.call(sync.pushed, out, time.time())
        known = await self.store.readers.run(sync.state)
        after = known.cursor if known else remote.Cursor(0, 0)
        incoming = await remote.pull(conn, after, batch, teams=self.config.pull_teams)
        roots = {row.project_key: _root(row.body) for row in incoming if row.op == "put" and row.body}
        projects = await self.store.writer.call(sync.projects_for, roots, time.time()) if roots else {}
        stored = 0
        for forgets, group in _runs(incoming, self.machine):
            if forgets:
                await self._forget(group)
            else:
                applied = await self.store.writer.call(sync.applied, group, projects, time.time())
                stored += len(applied)
                if claimed := sum(machine == self.machine for machine in applied.values()):
                    # rows under this id that this store lacked: a copy of this data dir pushed them
                    self.shared_id_seen = time.time()
                    log.warning("sync_machine_id_shared", machine=self.machine, rows=claimed)
        if stored:
            self.pulled += stored
            self.lag_ms = max(0.0, (time.time() - incoming[-1].pushed_at) * 1000)
            if self.indexer is not None:
                self.indexer.notify()
        if not incoming:
            await self.store.writer.call(sync.touched, time.time())
        log.debug("sync_round", pushed=len(rows), pulled=stored, read=len(incoming))
        return bool(rows) or bool(incoming)

    async def share(self, request: Share) -> Shared:
        """Promote memories to a team (pushed at the next round)."""
        found = await self.store.readers.run(resolve_all, request.ids)
        missing = [ref for ref, event_id in zip(request.ids, found, strict=True) if event_id is None]
        ids = [event_id for event_id in found if event_id is not None]
        shared = await self.store.writer.call(sync.share, ids, request.team) if ids else 0
        self.notify()
        return Shared(shared=shared, missing=missing, syncing=self.enabled)

    async def _forget(self, rows: list[remote.Incoming]) -> None:
        """Forget here what another machine forgot, if it may (``sync.forgettable``), down to the
        bytes; then move past it: a crash in between forgets again, never skips it."""
        ids = await self.store.readers.run(sync.forgettable, rows, self.role)
        if ids:
            planned = await self.store.readers.run(plan, ids)
            await erase(self.store, self.indexer, planned, "sync")
        await self.store.writer.call(sync.forgotten_here, rows, time.time())


def outgoing(out: sync.Outbound, privacy: Privacy, teams: dict[str, str]) -> list[remote.Outgoing]:
    """The rows a push sends for ``out``: each new event personal, and for its project's team if
    ``teams`` names one; each memory shared by hand, for its team; each forget, in every scope
    the memory was pushed to."""
    rows: list[remote.Outgoing] = []
    for project_key, event in out.events:
        body, words = _leaving(privacy, event)
        rows.append(remote.Outgoing("personal", "", "put", event.idem_key, project_key, body))
        if team := teams.get(project_key):
            rows.append(remote.Outgoing("team", team, "put", event.idem_key, project_key, body, words))
    for team, project_key, event in out.shares:
        rows.append(remote.Outgoing("team", team, "put", event.idem_key, project_key, *_leaving(privacy, event)))
    for tombstone in out.tombstones:
        key, project_key = tombstone.event_key, tombstone.project_key
        rows.append(remote.Outgoing("personal", "", "forget", key, project_key, None))
        for team in sorted({*tombstone.teams, teams.get(project_key, "")} - {""}):
            rows.append(remote.Outgoing("team", team, "forget", key, project_key, None))
    return rows


MACHINE_FILE = "machine-id"
_MACHINE_ID = re.compile(r"m-[0-9a-f]{16}")


def machine_id(data_dir: str) -> str:
    """This data dir's id in the shared log: random, made the first time sync starts and kept
    in ``machine-id`` (0600), so two machines never share one however alike their host names
    (containers, cloned VMs, CI runners) unless a data dir was copied with it."""
    path = os.path.join(data_dir, MACHINE_FILE)
    try:
        with open(path, encoding="ascii") as file:
            found = file.read().strip()
        if _MACHINE_ID.fullmatch(found):
            return found
        log.warning("sync_machine_id_unreadable", path=path)  # made again below
        os.unlink(path)
    except FileNotFoundError:
        pass
    made = f"m-{secrets.token_hex(8)}"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(made + "\n")
        file.flush()
        os.fsync(file.fileno())
    return made


def _runs(rows: list[remote.Incoming], machine: str) -> list[tuple[bool, list[remote.Incoming]]]:
    """``rows`` cut into runs of other machines' forgets (True) and of everything else, in order."""
    runs: list[tuple[bool, list[remote.Incoming]]] = []
    for row in rows:
        forget = row.op == "forget" and row.machine != machine
        if runs and runs[-1][0] == forget:
            runs[-1][1].append(row)
        else:
            runs.append((forget, [row]))
    return runs


def _leaving(privacy: Privacy, event: ExportedEvent) -> tuple[bytes, tuple[str, str]]:
    """An event as it leaves this machine: filtered again with today's rules, no payload; and
    what a team row's words are made of (its title and text as filtered, NULs out: PostgreSQL's
    text refuses them; the text cut to ``WORDS_MAX``)."""
    title, _ = privacy.text(event.title)
    text, _ = privacy.text(event.text)
    meta, _ = privacy.value(event.meta)
    body = msgspec.json.encode(msgspec.structs.replace(event, title=title, text=text, meta=meta, payload=""))
    return body, (title.replace("\0", " "), text[:WORDS_MAX].replace("\0", " "))


class SyncProblem(Exception):
    """A reason sync cannot go on that is not a connection error (the message says what to do)."""


def _root(body: bytes | None) -> str:
    """The project root an event had on the machine that pushed it ("" if the body is not memd's)."""
    try:
        decoded: Any = msgspec.json.decode(body or b"{}")
    except msgspec.DecodeError:
        return ""
    return str(decoded.get("project") or "") if isinstance(decoded, dict) else ""
