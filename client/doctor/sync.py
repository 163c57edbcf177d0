"""The ``sync`` check: whether sync through PostgreSQL works, what waits, and when it last moved."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from .findings import START, Finding, plural

if TYPE_CHECKING:
    from memd.protocol import SyncReport

STALE: Final = 3600.0
"""Seconds without a push while events wait: worth a warning even when nothing failed."""


def check_sync(configured: bool, up: bool, report: SyncReport | None, now: float | None = None) -> list[Finding]:
    if not configured:
        return [Finding("sync", "ok", "sync is off (README: Sync)")]
    if not up:
        return [Finding("sync", "warn", "sync is configured, but the daemon is down: nothing moves", START)]
    if report is None:
        return [Finding("sync", "warn", "sync is configured but this daemon does not sync: restart it", START)]
    now = time.time() if now is None else now
    waiting = f"{plural(report.pending, 'event')} and {plural(report.tombstones, 'forget')} to push"
    if report.shared_id_seen is not None:
        message = (
            f"another machine syncs under this one's id ({report.machine}): a copy of this data dir;"
            " each still applies the other's memories, but a forget made on one is not applied on the other"
        )
        fix = "on the copy: stop memd, delete machine-id in its data dir, start memd (a new id is made)"
        return [Finding("sync", "warn", message, fix)]
    if report.state == "failing":
        at = report.last_error_at
        since = f" since {time.strftime('%Y-%m-%d %H:%M', time.localtime(at))}" if at else ""
        message = f"sync with {report.server} fails{since}: {report.last_error}; {waiting}, kept until it works"
        fix = "check the server and [sync] url; `memctl sync status` shows progress"
        return [Finding("sync", "error", message, fix)]
    last = report.last_push or 0.0
    if report.pending and now - last > STALE:
        message = f"sync with {report.server}: {waiting}, none pushed for {int((now - last) // 60)} min"
        return [Finding("sync", "warn", message, "memctl sync status")]
    return [Finding("sync", "ok", f"syncing with {report.server} ({report.state}); {waiting}")]
