"""Each use of a memory is logged (``memd.store.usage``): injected, resolved or expanded."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from ..store import Store, usage

__all__ = ["record_uses"]


async def record_uses(
    store: Store, event_ids: Sequence[int], session: str | None, how: str,
    confidence: Mapping[int, float] | None = None,
) -> None:  # fmt: skip
    """Log one use of each of ``event_ids`` (``confidence``: what each was found with)."""
    if event_ids:
        await store.writer.call(usage.record, event_ids, session, how, time.time(), confidence)
