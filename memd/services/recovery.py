"""Tool calls a Claude Code session's hooks never delivered, read back from its transcript
when the session ends.

Claude Code runs the tool hooks asynchronously and SIGTERMs those still running when
``claude -p`` ends.  The hook client keeps its event then, unless the signal reaches the
shell Claude Code starts it with in its first milliseconds, before memd's signal guard holds
it (``bench/hook_kill.py``); the OOM killer, or a spool on a full disk, can lose one too.  The
transcript records every call with its result.  So when a session's SessionEnd is stored,
``Recovery`` waits ``SETTLE`` seconds (hooks still running land, or spool), reads the
session's transcript as ``memctl import`` does (``memd.capture.transcripts``), and has its
tool calls and failures imported: the importer stores those live capture has not (by
``tool_use_id``, the same key live and imported), each once, and the session's summary is
taken again.  As for ``memctl import``, retention's rule holds: a low-importance call older
than ``max_age_days`` is not stored.  A fork's copies of its parent's
calls are left out (they are the parent's).  Prompts and replies are not looked for: their
hooks are synchronous, and Claude Code waits for them.

Logs carry counts, never content; a failure is logged and costs nothing but the recovery.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import anyio
import msgspec
import structlog

from ..capture.prepare import NewEvent
from ..capture.transcripts import Reader, fork_copies, hook_events
from ..protocol import CLAUDE_CODE, Import, ImportEvent
from .background import lowest_priority
from .bulk import BulkLoad

__all__ = ["SETTLE", "Recovery", "tool_calls"]

log = structlog.get_logger("memd.recovery")

SETTLE = 2.0
"""Seconds after a session's end before its transcript is read: the last tool hooks land first."""
TOOL_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})
MAX_BYTES = 256 * 1024 * 1024
"""A transcript larger than this is left to ``memctl import``."""
QUEUED = 64


def tool_calls(path: str, session: str) -> list[ImportEvent]:
    """The tool calls (with their results) and failures ``session``'s transcript at ``path``
    records, as their hooks would have sent them; none when it cannot be read."""
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return []
        with open(path, "rb") as f:
            _parent, copied = fork_copies(f, session)
            f.seek(0)
            return [
                ImportEvent(
                    event=hook.event,
                    payload=msgspec.json.encode({**hook.payload, "hook_event_name": hook.event}),
                    at_ns=hook.at_ns,
                )
                for hook in hook_events(Reader().records_of(f), "", copied)
                if hook.event in TOOL_EVENTS and hook.payload.get("session_id") == session
            ]
    except OSError:
        return []


class Recovery:
    """Queues the sessions that ended, and imports the tool calls their hooks did not bring."""

    def __init__(self, bulk: BulkLoad) -> None:
        self.bulk = bulk
        self._ended: deque[tuple[float, str, str]] = deque(maxlen=QUEUED)
        self._wake = anyio.Event()
        # A long session's transcript takes seconds of CPU to read: at nice 19, after the hooks.
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="memd-recovery", initializer=lowest_priority)

    def ended(self, event: NewEvent) -> None:
        """A live SessionEnd was stored: look at its session's transcript in ``SETTLE`` s."""
        if event.event != "SessionEnd" or event.agent != CLAUDE_CODE or not event.session_id:
            return
        try:
            path = msgspec.json.decode(event.payload).get("transcript_path")
        except (msgspec.DecodeError, AttributeError):
            return
        if isinstance(path, str) and path:
            self._ended.append((time.monotonic() + SETTLE, event.session_id, path))
            self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._ended:
                due, session, path = self._ended.popleft()
                await anyio.sleep(max(0.0, due - time.monotonic()))
                try:
                    await self.recover(session, path)
                except Exception:  # a database error, a bug: this session's calls stay as they are
                    log.exception("recovery_failed")

    async def recover(self, session: str, path: str) -> int:
        """Import what the transcript holds of ``session``'s tool calls that memd lacks; how many."""
        read = self._reader.submit(tool_calls, path, session)
        calls = await anyio.to_thread.run_sync(read.result)  # waited for off the event loop
        if not calls:
            return 0
        stored = (await self.bulk.import_events(Import(events=calls))).stored
        if stored:  # the summary taken at SessionEnd did not know of them
            await self.bulk.import_events(Import(events=[], finished=[session]))
            log.warning("tool_calls_recovered", session=session, recovered=stored, calls=len(calls))
        return stored
