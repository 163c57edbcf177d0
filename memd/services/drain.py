"""The spool drain: frames the hook client could not hand over, ingested once memd is back.

Every ``[daemon] spool_drain_interval`` seconds (and at start) the spooled frames are
replayed, ``SPOOL_PARALLEL`` at a time, as ingests nobody waits for (no context).  A file
is deleted once its event is committed, or refused for good as its live hook would have
been (invalid JSON, recorded).  What fails for a reason of its own is counted in its name
and set aside after ``MAX_ATTEMPTS`` (``memd_wire/spooled.py`` says how); a failed commit fails
every frame alike and keeps them all for the next round.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable

import anyio
import structlog

from memd_wire import spooled

from ..protocol import BadRequest, Error, Ingest, Ingested, ProtocolError, Reply, VersionMismatch, decode_request
from ..store import Writer
from ..store.trouble import describe

__all__ = ["SPOOL_PARALLEL", "SpoolDrain"]

log = structlog.get_logger("memd.drain")

SPOOL_PARALLEL = 64
"""Frames replayed at once: enough to fill the writer's group commits."""


class SpoolDrain:
    """Replays the spool into the store, under the lock a forget takes to look at it."""

    def __init__(
        self,
        spool_dir: str,
        interval: float,
        lock: anyio.Lock,
        replay: Callable[[Ingest], Awaitable[Reply]],
        writer: Writer,
        touch: Callable[[], None],
    ) -> None:
        """``lock``: held by a forget from its look at the spool to its delete, so that no
        frame it missed is ingested in between.  ``touch``: a drain that found frames is
        activity, for the idle exit."""
        self.spool_dir = spool_dir
        self.interval = interval
        self.lock = lock
        self.replay = replay
        self.writer = writer
        self.touch = touch
        self._stuck: set[str] = set()
        """Frames kept but not tried again until a restart (another protocol, a read-only spool)."""

    async def run(self) -> None:
        settled = await self.drain()
        log.info("spool_checked_at_start", settled=settled)  # what hooks spooled while no daemon ran
        while True:
            await anyio.sleep(self.interval)
            await self.drain()

    async def drain(self) -> int:
        """Ingest every spooled frame; return how many files were settled."""
        async with self.lock:
            spooled.sweep_temp_files(self.spool_dir)
            files = [p for p in spooled.pending(self.spool_dir) if p not in self._stuck]
            settled = 0
            for start in range(0, len(files), SPOOL_PARALLEL):
                results: list[bool] = []
                async with anyio.create_task_group() as tg:
                    for path in files[start : start + SPOOL_PARALLEL]:
                        tg.start_soon(self._replay, path, results)
                settled += sum(results)
            if files:
                self.touch()
                log.info("spool_drained", files=len(files), settled=settled)
            return settled

    async def _replay(self, path: str, results: list[bool]) -> None:
        """Ingest one spooled frame.  Settled (deleted): stored, or refused for good as its live
        hook would have been (invalid JSON, recorded).  Kept for the next drain: a failed commit
        (every frame fails alike).  A failure of this frame's own (an exception, an event the
        writer could not store, a read error) counts, and the ``MAX_ATTEMPTS``-th sets the
        file aside; a frame that can never become an event is set aside at once."""
        try:
            request = decode_request(spooled.read_frame(path))
            if not isinstance(request, Ingest):
                raise BadRequest(f"spool holds a {type(request).__name__} request, not an event")
        except FileNotFoundError:
            return
        except VersionMismatch as exc:
            # Kept for a daemon that speaks its version; reported, not retried every round.
            self._stuck.add(path)
            log.warning("spool_version_mismatch", file=os.path.basename(path), error=str(exc))
            return
        except (spooled.CorruptSpoolFile, ProtocolError) as exc:
            await self.writer.reject("spool", _size(path), f"unreadable spool file: {exc}")
            self._set_aside(path, f"unreadable: {exc}", spooled.attempts(path))
            results.append(True)
            return
        except OSError as exc:  # perhaps passing (no file descriptor left): tried again
            self._failed(path, f"unreadable: {type(exc).__name__}: {exc.strerror}", results)
            return
        try:
            reply = await self.replay(request)
        except Exception as exc:  # a bug, which would fail this frame on every round
            self._failed(path, describe(exc), results)
            return
        if isinstance(reply, Ingested) or (isinstance(reply, Error) and reply.code == "invalid_payload"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            results.append(True)
        elif isinstance(reply, Error) and reply.code == "event_failed":
            self._failed(path, reply.message, results)

    def _failed(self, path: str, reason: str, results: list[bool]) -> None:
        """Count a failed replay of the frame at ``path``; set it aside after ``MAX_ATTEMPTS``."""
        try:
            path, count = spooled.count_failure(path)
        except FileNotFoundError:
            return
        except OSError as exc:  # cannot rename it (a read-only spool): stop trying it until a restart
            self._stuck.add(path)
            log.error("spool_replay_failed", file=os.path.basename(path), reason=reason, kept=exc.strerror)
            return
        if count < spooled.MAX_ATTEMPTS:
            log.warning("spool_replay_failed", file=os.path.basename(path), attempt=count, reason=reason)
            return
        self._set_aside(path, reason, count)
        results.append(True)

    def _set_aside(self, path: str, reason: str, attempts: int) -> None:
        """Move the frame at ``path`` into the spool's ``failed/``: kept, no longer replayed."""
        try:
            moved = spooled.move_aside(self.spool_dir, path)
        except OSError as exc:
            self._stuck.add(path)
            log.error("spool_file_not_set_aside", file=os.path.basename(path), reason=reason, error=exc.strerror)
            return
        log.warning(
            "spool_file_set_aside", file=os.path.basename(moved), to=os.path.dirname(moved), attempts=attempts,
            reason=reason, fix="memctl spool retry (or: memctl spool delete)",
        )  # fmt: skip


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
