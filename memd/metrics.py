"""Request latencies measured inside the daemon, for `memctl status` and benchmarks."""

from __future__ import annotations

from collections import deque

from .protocol import Latency

__all__ = ["Latencies", "percentile"]


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of already sorted values, nearest-rank."""
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(q * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


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
