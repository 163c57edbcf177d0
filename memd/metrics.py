"""Request latencies measured inside the daemon, for `memctl status`, `memctl stats` and benchmarks.

The daemon keeps two sets, both timed from a whole request received to its reply ready:
per request kind (``ingest``, ``search``, ...: ``memctl status``) and, for ingests, per
hook event (``PostToolUse``, ...: ``memctl stats``).  The hook events' counts add up to
``ingest``'s until the windows fill (each key keeps its own last ``window`` samples).
"""

from __future__ import annotations

from collections import deque
from typing import Final

from .protocol import HOOK_EVENTS, Latency

__all__ = ["OTHER_HOOK", "Latencies", "hook_key", "percentile"]

OTHER_HOOK: Final = "other"
"""The key of ingests named by no hook event Claude Code sends."""


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of already sorted values, nearest-rank."""
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(q * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


def hook_key(event: str) -> str:
    """The key an ingest's latency is kept under: its hook event, or ``OTHER_HOOK``.

    The name comes from the client; taking any string as a key would let one misbehaving
    client grow the daemon's memory a window at a time.
    """
    return event if event in HOOK_EVENTS else OTHER_HOOK


class Latencies:
    """The last ``window`` durations per request kind."""

    def __init__(self, window: int = 4096) -> None:
        self._window = window
        self._samples: dict[str, deque[float]] = {}

    def record(self, kind: str, ms: float) -> None:
        samples = self._samples.get(kind)
        if samples is None:
            samples = self._samples[kind] = deque(maxlen=self._window)
        samples.append(ms)

    def snapshot(self) -> dict[str, Latency]:
        out = {}
        for kind, samples in self._samples.items():
            values = sorted(samples)
            out[kind] = Latency(
                count=len(values),
                p50=round(percentile(values, 0.50), 3),
                p95=round(percentile(values, 0.95), 3),
                p99=round(percentile(values, 0.99), 3),
            )
        return out
