"""Import: transcript events through live capture's path, and exported events back in.

``Import`` events are prepared by the same ``Capture`` as hook events (the privacy
filter, the normalizer, the idempotency key), in a worker thread, since a batch holds
hundreds.  Before storing, an event live capture already stored is left out: by its
idempotency key, made of Claude Code's own ids, the same live and imported
(``tool_use_id``, ``prompt_id``, ``agent_id``, the compaction summary's body); and, for
rows stored before those keys (migration 9 rekeyed only what SQL could), prompts,
replies and compaction summaries by session, kind and text.  With retention on, an
event the next retention pass would remove (low importance, older than
``max_age_days``) is not stored either: importing months of
history must not fill the store with noise only to delete it again an instant later.
Then the batch goes to the writer at once (one transaction for all of it), and the
sessions whose transcripts are done get their summary and snapshot.

``Restore`` events come from ``memctl export``, filtered by the rules of the memd that
wrote them (an older one, another machine's config): today's secret rules run over them
again (``memd.capture.rescan``) before they are stored, and what they find is counted as
capture counts it.
"""

from __future__ import annotations

import json
import sqlite3
import time

import anyio
import msgspec
import structlog

from ..capture.events import Skipped
from ..capture.prepare import Capture, InvalidPayload, NewEvent, redaction_counts
from ..capture.privacy import Redactions
from ..capture.project import project_root
from ..capture.rescan import Content, Rescan
from ..config import RetentionConfig
from ..protocol import ExportedEvent, Import, Imported, Ingest, Restore
from ..store import Store
from ..store.batch import atomically
from ..store.imports import same_text_stored, stored_keys, summarize_session
from ..store.restore import restore
from ..store.retention import Policy, expired_on_arrival

__all__ = ["Importer"]

log = structlog.get_logger("memd.importer")

TEXT_KINDS = ("prompt", "assistant", "compact_summary", "subagent_stop")
"""Kinds whose live payload differs from the transcript's: matched by their text."""


class Importer:
    """``Import`` (transcripts) and ``Restore`` (an export) requests (see the module doc)."""

    def __init__(self, capture: Capture, store: Store, retention: RetentionConfig) -> None:
        self.capture = capture
        self.store = store
        self.retention = Policy.of(retention) if retention.enabled else None
        self._prepare_thread = anyio.CapacityLimiter(1)

    def _keys(self, ingests: list[Ingest]) -> list[str | None]:
        keys: list[str | None] = []
        for ingest in ingests:
            try:
                keys.append(self.capture.key(ingest))
            except InvalidPayload:
                keys.append(None)
        return keys

    def _prepare(self, ingests: list[Ingest]) -> tuple[list[NewEvent], int, int]:
        """(events to store, skipped, refused): capture's work, in a worker thread."""
        events, skipped, refused = [], 0, 0
        now = time.time()
        for ingest in ingests:
            try:
                prepared = self.capture.prepare(ingest, now)
            except InvalidPayload:
                refused += 1
                continue
            if isinstance(prepared, Skipped):
                skipped += 1
            else:
                events.append(prepared)
        return events, skipped, refused

    async def import_events(self, request: Import) -> Imported:
        now = time.time()
        ingests = [Ingest(event=e.event, sent_at_ns=e.at_ns, payload=e.payload) for e in request.events]
        # Events stored before (a second import) cost a key, not the privacy filter.
        keys = await anyio.to_thread.run_sync(self._keys, ingests, limiter=self._prepare_thread)
        stored_before = await self.store.readers.run(stored_keys, [k for k in keys if k])
        new = [ingest for ingest, key in zip(ingests, keys, strict=True) if key not in stored_before]
        events, skipped, refused = await anyio.to_thread.run_sync(self._prepare, new, limiter=self._prepare_thread)
        prepared = len(events)
        if self.retention is not None:
            policy = self.retention
            events = [e for e in events if not expired_on_arrival(policy, e.kind, e.importance, e.client_ts, now)]
        fresh = await self.store.readers.run(_not_captured, events)
        results = [False] * len(fresh)

        async def submit(index: int, event: NewEvent) -> None:
            committed = await self.store.writer.submit(event, project_root(event.cwd) if event.cwd else None)
            results[index] = committed.duplicate

        async with anyio.create_task_group() as group:  # all at once: the writer commits them together
            for index, event in enumerate(fresh):
                group.start_soon(submit, index, event)
        for session in request.finished:
            await self.store.writer.call(atomically(summarize_session), session, now)
        duplicates = len(ingests) - len(new) + len(events) - len(fresh) + sum(results)
        stored, expired = len(fresh) - sum(results), prepared - len(events)
        log.info("imported", stored=stored, duplicates=duplicates, skipped=skipped, refused=refused, expired=expired)
        return Imported(
            stored=stored, duplicates=duplicates, skipped=skipped, refused=refused, expired=expired,
            max_age_days=self.retention.max_age_days if self.retention is not None else 0.0,
        )  # fmt: skip

    async def restore(self, request: Restore) -> Imported:
        events, found = await anyio.to_thread.run_sync(
            _refiltered, self.capture.rescan, request.events, limiter=self._prepare_thread
        )
        counts = redaction_counts(found)
        stored, duplicates, kept = await self.store.writer.call(atomically(restore), events, counts, time.time())
        log.info("restored", stored=stored, duplicates=duplicates, cites_kept=kept, secrets=found.secrets)
        return Imported(stored=stored, duplicates=duplicates, cites_kept=kept)


def _refiltered(rescan: Rescan, events: list[ExportedEvent]) -> tuple[list[ExportedEvent], Redactions]:
    """Exported events with what today's secret rules find redacted, and the sum found."""
    out: list[ExportedEvent] = []
    total = Redactions()
    for event in events:
        meta = event.meta if isinstance(event.meta, str) else json.dumps(event.meta, ensure_ascii=False)
        changed = rescan.content(Content(event.title, event.text, meta, event.payload or "{}"))
        if changed is None:
            out.append(event)
            continue
        content, found = changed
        total += found
        payload = content.payload if event.payload else ""
        out.append(msgspec.structs.replace(event, title=content.title, text=content.text, meta=content.meta,
                                           payload=payload))  # fmt: skip
    return out, total


def _not_captured(conn: sqlite3.Connection, events: list[NewEvent]) -> list[NewEvent]:
    """``events`` without those live capture stored already (text kinds: same session,
    kind and text; the others carry live's key and the writer drops them)."""
    return [
        e
        for e in events
        if e.kind not in TEXT_KINDS or not e.session_id or not same_text_stored(conn, e.session_id, e.kind, e.text)
    ]
