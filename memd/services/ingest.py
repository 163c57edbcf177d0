"""Ingest: one hook event from the wire to the event log, and the context the hook answers with.

The event is prepared by capture (privacy filter, classification), committed by the writer
(group commit: the reply goes out once the event is durable), and then the background
workers hear of it: the consolidator counts it, the indexer embeds it.  A live
SessionStart or UserPromptSubmit is answered with the context for the agent; a replayed
one (from the spool, or a restore) is not, as nobody reads the answer.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

import anyio
import structlog

from ..capture.agents import DEFERS_START, gemini_reply, own_event
from ..capture.events import Skipped
from ..capture.prepare import Capture, InvalidPayload, NewEvent
from ..capture.project import project_root
from ..context import UNCLOSED_PRIVATE_NOTICE, hook_output
from ..protocol import CONTEXT_EVENTS, Error, Ingest, Ingested, Reply
from ..store import EventError, Store, StoreError
from .consolidation import Consolidator
from .indexer import Indexer
from .native_memory import Mirror
from .recall import Recall
from .recovery import Recovery

__all__ = ["INLINE_CAPTURE_BYTES", "Ingester"]

log = structlog.get_logger("memd.ingest")

INLINE_CAPTURE_BYTES = 64 * 1024
"""Payloads up to this size are prepared on the event loop (~0.1-0.3 ms); larger ones
(a 1 MB Read takes tens of ms to filter) in a worker thread, so the loop keeps serving."""
TRANSCRIPT_TAIL = 256 * 1024
"""Bytes at the end of a Gemini CLI transcript read for the turn's reply."""


def _gemini_reply(request: Ingest) -> str:
    """Gemini CLI's reply to the turn, from the end of its transcript ("" when unreadable)."""
    if request.agent != "gemini":
        return ""
    try:
        path = json.loads(request.payload).get("transcript_path")
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - TRANSCRIPT_TAIL))
            return gemini_reply(f.read(TRANSCRIPT_TAIL))
    except (ValueError, TypeError, AttributeError, OSError):  # no JSON object, no path, no file
        return ""


class Ingester:
    """Commits hook events: ``ingest`` a hook's, ``replay`` one nobody waits for."""

    def __init__(
        self,
        capture: Capture,
        store: Store,
        recall: Recall,
        consolidator: Consolidator,
        indexer: Indexer | None,
        on_new_event: Callable[[], None] = lambda: None,
        mirror: Mirror | None = None,
        recovery: Recovery | None = None,
    ) -> None:
        """``on_new_event``: told after each new event is committed (the sync pushes it);
        ``mirror``: hears each live event, to keep Claude Code's memory files mirrored;
        ``recovery``: hears each session's end, to bring in the tool calls its hooks lost."""
        self.capture = capture
        self.store = store
        self.recall = recall
        self.consolidator = consolidator
        self.indexer = indexer
        self.on_new_event = on_new_event
        self.mirror = mirror
        self.recovery = recovery
        self.skipped = 0
        """Events capture chose not to store (``memctl status``)."""
        self._starts: dict[str, str] = {}
        """Session-start blocks waiting for their session's first prompt (``DEFERS_START``)."""
        self._capture_thread = anyio.CapacityLimiter(1)

    async def replay(self, request: Ingest) -> Reply:
        """A spooled or restored event: committed, with no context (nobody reads it)."""
        return await self.ingest(request, live=False)

    async def ingest(self, request: Ingest, *, live: bool = True) -> Reply:
        """Commit one hook event; reply only once it is durable, with context if ``live``
        and the hook wants some."""
        said = await anyio.to_thread.run_sync(_gemini_reply, request) if request.event == "AfterAgent" else ""
        try:
            if len(request.payload) <= INLINE_CAPTURE_BYTES:
                event = self.capture.prepare(request, time.time(), said)
            else:
                event = await anyio.to_thread.run_sync(
                    self.capture.prepare, request, time.time(), said, limiter=self._capture_thread
                )
        except InvalidPayload as exc:
            size = request.size or len(request.payload)
            await self.store.writer.reject(request.event or "?", size, str(exc))
            log.warning("payload_refused", hook_event=request.event, size=size)
            return Error(code="invalid_payload", message=f"{request.event} event not stored: {exc}")
        if isinstance(event, Skipped):
            self.skipped += 1
            log.debug("skipped", hook_event=request.event, reason=event.reason)
            return Ingested(event_id=0, skipped=event.reason)
        async with anyio.create_task_group() as tg:
            if live and event.event == "UserPromptSubmit":
                tg.start_soon(self._anticipate, event)  # beside the commit, on another thread
            if live and event.event != "SessionStart":  # a start's context waits for it (``_context``)
                tg.start_soon(self._mirror, event)
            reply = await self._commit(event, live)
        return reply

    async def _anticipate(self, event: NewEvent) -> None:
        """The prompt's query embedded early; nothing it meets may cancel the commit beside it."""
        try:
            await self.recall.prompts.anticipate(event)
        except Exception as exc:  # cancellation is not caught
            log.warning("anticipate_failed", error=type(exc).__name__)

    async def _mirror(self, event: NewEvent) -> None:
        """Claude Code's memory files of the event's project looked at (if it calls for it);
        nothing this meets may cancel the commit beside it."""
        if self.mirror is None:
            return
        try:
            await self.mirror.heard(event)
        except Exception as exc:  # cancellation is not caught
            log.warning("mirror_failed", error=type(exc).__name__)

    async def _commit(self, event: NewEvent, live: bool) -> Reply:
        """Commit a prepared event, then answer with its context (if ``live``)."""
        root = project_root(event.cwd) if event.cwd else None
        try:
            committed = await self.store.writer.submit(event, root)
        except EventError as exc:  # this event only, for good (it is in quarantine): not worth a retry soon
            return Error(code="event_failed", message=str(exc))
        except StoreError as exc:  # the batch's commit failed (a full disk, a lock): a later try may work
            return Error(code="store_error", message=str(exc))
        log.debug(
            "ingested",
            event_id=committed.event_id,
            kind=event.kind,
            size=event.size,
            duplicate=committed.duplicate,
            **{k: v for k, v in event.redactions.items() if v},
        )
        stdout = ""
        if live and not committed.duplicate:  # a hook that fired twice gets its context once
            stdout = await self._context(event)
        if not committed.duplicate:
            self.consolidator.notify()
            self.on_new_event()
            if self.recovery is not None:
                self.recovery.ended(event)
            if self.indexer is not None:  # after the context: embedding would compete with the query's
                self.indexer.notify()
        return Ingested(event_id=committed.event_id, duplicate=committed.duplicate, stdout=stdout)

    async def _context(self, event: NewEvent) -> str:
        """The hook's stdout for Claude Code: context for the agent, a notice for the user.

        A failure here costs the agent its context for this event, never the event: it is
        committed already, so it is logged and the hook gets no context (a notice still goes out).
        """
        if event.event not in CONTEXT_EVENTS:
            return ""
        notice = UNCLOSED_PRIVATE_NOTICE if event.redactions.get("unclosed") else ""
        name = own_event(event.agent, event.event)
        try:
            if event.event == "SessionStart":
                await self._mirror(event)  # the block leaves out what MEMORY.md gives, found by its events
                context = await self.recall.starts.block(event)
                if event.agent in DEFERS_START and event.session_id:
                    self._defer(event.session_id, context)
                    context = ""
            else:
                start = self._starts.pop(event.session_id, "") if event.session_id else ""
                context = "\n\n".join(filter(None, (start, await self.recall.prompts.block(event))))
            return hook_output(name, context=context, system_message=notice, agent=event.agent)
        except Exception:
            log.exception("context_failed", hook_event=event.event)
            return hook_output(name, system_message=notice, agent=event.agent)

    def _defer(self, session: str, block: str) -> None:
        """Keep ``block`` for the session's first prompt (the newest 256 sessions' only)."""
        self._starts.pop(session, None)
        if block:
            self._starts[session] = block
        while len(self._starts) > 256:
            del self._starts[next(iter(self._starts))]
