"""What the server sees of its clients, kept where the services that report on it can read it.

The server writes here (a connection opened or closed, a request answered and how long it
took); ``memctl status`` and ``memctl stats`` read the counts and latencies, and the idle
exit reads the clock.  The spool drain touches the clock too: replaying frames is work.
"""

from __future__ import annotations

import time

from ..metrics import Latencies

__all__ = ["Activity"]


class Activity:
    """Connections open, when anything last happened, and the request latencies."""

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections
        """The server's connection cap (``limits.connection_cap``)."""
        self.connections = 0
        """Open now: counted by the server from accept to close."""
        self.started = time.time()
        self.last = time.monotonic()
        """When something last happened (``time.monotonic``): the idle clock's start."""
        self.latencies = Latencies()
        """Per request kind (``memctl status``)."""
        self.hook_latencies = Latencies()
        """Per hook event, ingests only (``memctl stats``): the same times as ``ingest``'s."""

    def touch(self) -> None:
        """Something happened: the idle clock starts again."""
        self.last = time.monotonic()

    def opened(self) -> None:
        self.connections += 1
        self.last = time.monotonic()

    def closed(self) -> None:
        self.connections -= 1
        self.last = time.monotonic()

    def answered(self, op: str, hook: str, ms: float) -> None:
        """A request of kind ``op`` (an ingest's hook event ``hook``, else "") took ``ms``."""
        self.latencies.record(op, ms)
        if hook:
            self.hook_latencies.record(hook, ms)
        self.last = time.monotonic()

    def uptime(self) -> float:
        """Seconds since the daemon started."""
        return time.time() - self.started
