"""Idle exit: a socket-activated daemon closes itself once nothing happened for a while.

Only such a daemon honours ``[daemon] idle_exit`` (systemd starts the next one on the next
connection; the daemon decides, in ``memd.daemon``).  Idle means no connection open, no
request and no spool frame for that long, and no background work an exit would cut short
(``embedding_pending``).  Before closing, the working sets are consolidated: the
consolidator counts new events in memory, so the next daemon would not know about them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import structlog

from ..store import Readers, outbox
from .activity import Activity
from .consolidation import Consolidator
from .indexer import Indexer

__all__ = ["BUSY_RECHECK", "IdleExit", "embedding_pending"]

log = structlog.get_logger("memd.idle")

BUSY_RECHECK = 5.0
"""Seconds between looks, once idle long enough to exit, at background work that holds the exit back."""


def embedding_pending(state: str, backlog: int) -> bool:
    """Whether the indexer has work that an idle exit would interrupt: a model loading or
    an index opening, or events waiting with a model ready to embed them.  Without a model
    (disabled, unavailable) the backlog waits for a daemon that has one, so it keeps
    nobody up."""
    return state in ("loading", "indexing") or (state == "ready" and backlog > 0)


class IdleExit:
    """Waits until the daemon has been idle for ``seconds``, then calls ``close``."""

    def __init__(
        self,
        seconds: float,
        activity: Activity,
        readers: Readers,
        indexer: Indexer | None,
        consolidator: Consolidator,
        close: Callable[[], None],
    ) -> None:
        self.seconds = seconds
        self.activity = activity
        self.readers = readers
        self.indexer = indexer
        self.consolidator = consolidator
        self.close = close

    def left(self) -> float:
        """Seconds until the daemon has been idle for ``seconds``; an open connection
        counts as activity, so with one open the whole period is left."""
        if self.activity.connections:
            return self.seconds
        return max(0.0, self.activity.last + self.seconds - time.monotonic())

    async def run(self) -> None:
        held = False  # said once per stretch that an open connection holds the exit back
        while True:
            await anyio.sleep(self.left())
            if self.left() > 0:  # a client came meanwhile, or one stays connected
                if self.activity.connections and not held:
                    log.info("idle_exit_held", connections=self.activity.connections)
                held = bool(self.activity.connections)
                continue
            if await self._background_busy():
                await anyio.sleep(min(self.seconds, BUSY_RECHECK))
                continue
            await self._consolidate()
            if self.left() == 0:  # and nobody came while it ran
                log.info("idle_exit", seconds=self.seconds, uptime=round(self.activity.uptime(), 1))
                self.close()
                return

    async def _background_busy(self) -> bool:
        if self.indexer is None:
            return False
        backlog = (await self.readers.run(outbox.stats, time.time())).backlog
        return embedding_pending(self.indexer.state, backlog)

    async def _consolidate(self) -> None:
        """Consolidate now what the consolidator's triggers would have taken later (and wait
        for a running consolidation: ``run_now`` takes the same lock)."""
        try:
            await self.consolidator.run_now()
        except Exception:  # the next daemon's triggers retry it
            log.exception("consolidation_failed")
