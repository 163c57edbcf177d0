"""The consolidator: one background task that consolidates the working sets now and then.

It runs (``store/consolidation.run`` on the writer's thread) when something new came and
one of ``[endless]``'s triggers holds: ``consolidate_every`` seconds since the last run,
``consolidate_after_events`` new events, or ``consolidate_idle`` seconds without any.
``run_now`` is ``memctl endless consolidate``.  A failure is logged and retried at the
next trigger; it never takes the daemon down.
"""

from __future__ import annotations

import time

import anyio
import structlog

from ..config import EndlessConfig
from ..continuity import consolidation
from ..store import StoreError, Writer

__all__ = ["Consolidator"]

log = structlog.get_logger("memd.consolidator")

CHECK = 5.0
"""Seconds between looks at the triggers."""


class Consolidator:
    def __init__(self, writer: Writer, config: EndlessConfig) -> None:
        self.writer = writer
        self.config = config
        self._new = 0
        self._last_event = self._last_run = time.monotonic()
        self._wake = anyio.Event()
        self._lock = anyio.Lock()

    def notify(self) -> None:
        """A new event was stored."""
        self._new += 1
        self._last_event = time.monotonic()
        if self._new >= self.config.consolidate_after_events:
            self._wake.set()

    def _due(self, now: float) -> bool:
        if self._new == 0:
            return False
        return (
            self._new >= self.config.consolidate_after_events
            or now - self._last_run >= self.config.consolidate_every
            or now - self._last_event >= self.config.consolidate_idle
        )

    async def run(self) -> None:
        while True:
            with anyio.move_on_after(CHECK):
                await self._wake.wait()
            self._wake = anyio.Event()
            if self._due(time.monotonic()):
                try:
                    await self.run_now()
                except StoreError as exc:  # the daemon is shutting down
                    log.info("consolidation_skipped", error=str(exc))
                except Exception:  # a database error, a bug: retried at the next trigger
                    log.exception("consolidation_failed")

    async def run_now(self) -> int:
        """Consolidate now; return how many memories were made."""
        async with self._lock:
            self._new = 0
            self._last_run = time.monotonic()
            started = time.perf_counter()
            made = await self.writer.call(consolidation.run, time.time())
        log.info("consolidated", memories=made, ms=round((time.perf_counter() - started) * 1000, 1))
        return made
