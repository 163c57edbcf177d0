"""``scan``: today's secret rules over every stored event.

It reads every stored event in batches and runs today's secret rules over it
(``memd.capture.rescan``): what an older memd, or a store kept with ``privacy.secrets``
off, let through.  It lists what it found (titles redacted: the listing must not show the
secret it is about); with ``apply`` it rewrites those events in place (``memd.store.redact``)
with the vector index held still, as ``erase`` deletes, then purges the files
(``memd.services.erasure``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import anyio
import structlog

from ..capture.prepare import Capture, redaction_counts
from ..capture.rescan import Content, Rescan
from ..protocol import SECRET_KIND, Reply, Scan, Scanned
from ..store import Store
from ..store.forget import BATCH
from ..store.listings import listing
from ..store.redact import Rewrite, Stored, content_after, rewrite
from .erasure import purge, without_new_vectors
from .indexer import Indexer

__all__ = ["SCAN_READ", "scan"]

log = structlog.get_logger("memd.lifecycle")

SCAN_READ = 500
"""Events a scan reads at a time: each batch is one short read, filtered in a worker thread."""


async def scan(store: Store, indexer: Indexer | None, capture: Capture, request: Scan) -> Reply:
    """Today's secret rules over every stored event; with ``apply``, redacted in place."""
    started = time.perf_counter()
    found: list[Rewrite] = []
    checked = after = 0
    while stored := await store.readers.run(content_after, after, SCAN_READ):
        after, checked = stored[-1].id, checked + len(stored)
        found += await anyio.to_thread.run_sync(_rewrites, capture.rescan, stored)
    kinds = secret_kinds(item.counts for item in found)
    rows, _ = await store.readers.run(listing, [item.old.id for item in found])
    titles = {item.old.id: item.title for item in found}
    for row in rows:
        row.title = titles[row.id]
    reply = Scanned(checked=checked, events=rows, total=len(found), kinds=kinds)
    if request.apply and found:
        redacted = refreshed = 0

        async def write() -> list[int]:
            nonlocal redacted, refreshed
            keys: list[int] = []
            now = time.time()
            for start in range(0, len(found), BATCH):
                done = await store.writer.call(rewrite, found[start : start + BATCH], now)
                redacted, refreshed, keys = redacted + done.events, refreshed + done.sessions, keys + done.keys
            return keys

        vectors = await without_new_vectors(indexer, write)
        await purge(store.writer)
        reply.applied, reply.redacted, reply.refreshed, reply.vectors = True, redacted, refreshed, vectors
    log.info(
        "scanned", checked=checked, found=len(found), secrets=sum(kinds.values()), redacted=reply.redacted,
        vectors=reply.vectors, ms=round((time.perf_counter() - started) * 1000),
    )  # fmt: skip
    return reply


def secret_kinds(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """The secrets found, by kind (without ``SECRET_KIND``'s prefix), in name order."""
    kinds: dict[str, int] = {}
    for found in counts:
        for name, n in found.items():
            if name.startswith(SECRET_KIND):
                kinds[name[len(SECRET_KIND) :]] = kinds.get(name[len(SECRET_KIND) :], 0) + n
    return dict(sorted(kinds.items()))


def _rewrites(rescan: Rescan, rows: list[Stored]) -> list[Rewrite]:
    """The stored events today's secret rules would change, with their new fields."""
    rewrites = []
    for row in rows:
        changed = rescan.content(Content(row.title, row.text, row.meta, row.payload))
        if changed is not None:
            content, found = changed
            rewrites.append(Rewrite(row, *content, counts=redaction_counts(found)))
    return rewrites
