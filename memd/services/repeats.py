"""Context memd leaves out because Claude Code's own memory gave the agent the same already.

Every block memd injects (the standard and continuation blocks at a session start, the
prompt's) asks ``Repeats`` which of its lines the agent has from Claude Code's memory
(``memd.retrieve.native``: a recalled file, a line of ``MEMORY.md``, a text that says the
same thing), leaves those out, and has what that saved counted (``memctl stats``): the
estimated tokens of the lines the block would have held.  A line is judged by the memory
it cites, and by what it shows of it (``Line.quote``: a prompt's first line, a working
state's item), since the memory may say more than the line does.  A session summary quotes its
goal (the first prompt) inside a longer line: ``said`` judges that goal alone, and the
summary is shown without it (not counted: the line stays).  A one-line entry (a bullet)
is a repeat of a file ``MEMORY.md`` points to; a memory given in full is not, since
``MEMORY.md`` holds one line of it, not its body.

Finding out must never cost the agent its context: a failure here is logged and nothing
is left out.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence

import structlog

from ..capture.prepare import NewEvent
from ..context import Line, escape
from ..retrieve.native import InContext, repeats, says_again
from ..store import Store
from ..store.batch import atomically
from ..store.claude_memory import save, texts_of
from ..tokens import estimate_tokens
from .native_memory import Transcripts

__all__ = ["Repeats"]

log = structlog.get_logger("memd.native_memory")


class Repeats:
    """Lines of memd's context that Claude Code's memory gave the agent already."""

    def __init__(self, store: Store, transcripts: Transcripts | None) -> None:
        self.store = store
        self.transcripts = transcripts

    async def context_of(self, event: NewEvent) -> InContext:
        """What Claude Code's memory put into the session of ``event`` (nothing when unknown)."""
        if self.transcripts is None:
            return InContext()
        try:
            return await self.transcripts.in_context(event)
        except Exception as exc:  # cancellation is not caught
            log.warning("native_context_failed", error=type(exc).__name__)
            return InContext()

    async def left_out(self, context: InContext, lines: Sequence[Line]) -> set[int]:
        """The event ids of ``lines`` to leave out (see the module doc)."""
        if context.empty or not lines:
            return set()
        said = await self.store.readers.run(texts_of, {line.event_id for line in lines})
        as_lines = repeats(said, context, index_only=True)
        in_full = repeats(said, context, index_only=False)
        quoted = {line.event_id for line in lines if line.quote and says_again(line.quote, context)}
        return quoted | {line.event_id for line in lines if line.event_id in (as_lines if line.bullet else in_full)}

    @staticmethod
    def said(context: InContext) -> Callable[[str], bool]:
        """Whether a fact memd quotes inside a longer line (a session's goal in its summary)
        is one the agent has from Claude Code's memory."""
        return functools.partial(says_again, context=context) if context.texts else lambda _text: False

    async def count(self, session: str | None, hook: str, kept: Sequence[Line], left: set[int]) -> int:
        """Record what leaving ``left`` out of the block that kept ``kept`` saved; the tokens."""
        lines = [line for line in kept if line.event_id in left]
        if not lines:
            return 0
        tokens = sum(estimate_tokens(escape(line.text)) for line in lines)
        await self.store.writer.call(atomically(save), time.time(), session, hook, len(lines), tokens)
        log.info("repeats_left_out", hook_event=hook, lines=len(lines), tokens=tokens)
        return tokens
