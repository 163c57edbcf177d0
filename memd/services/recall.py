"""Memories handed back, asked for and unasked: the server's one handle on them.

    asked     Timeline, Details, SmartSearch, Verify, Stats, Tasks    ``memd.services.lookups``
    unasked   session_start(event), prompt(event) → a ``<memory-context>`` block, or ""
              ``memd.services.session_start``, ``memd.services.prompt_context``
    endless   Endless → EndlessStatus, Continuation → ContinuationResult
              ``memd.services.session_start``

Each use of a memory is logged (``memd.store.usage``): injected, resolved or expanded.
The rendering is ``memd.context``'s, what goes where within which budget these modules'.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

from ..capture.prepare import NewEvent
from ..config import Config
from ..context import expand_hint
from ..protocol import (
    Continuation,
    ContinuationResult,
    Details,
    DetailsResult,
    Endless,
    EndlessStatus,
    SmartResults,
    SmartSearch,
    Stats,
    StatsReport,
    TaskList,
    Tasks,
    Timeline,
    TimelineResult,
    Verification,
    Verify,
)
from ..store import Store
from .blocks import Blocks
from .lookups import Lookups
from .prompt_context import PromptContext
from .search import Retriever
from .session_start import SessionStart

__all__ = ["Recall", "memctl_command"]


def memctl_command() -> str:
    """How an agent's shell can run this installation's memctl: by name when that is the one
    on PATH, else by absolute path (a virtualenv's bin directory is rarely on PATH)."""
    beside = os.path.join(os.path.dirname(sys.executable), "memctl")
    if not os.access(beside, os.X_OK) or shutil.which("memctl") == beside:
        return "memctl"
    return shlex.quote(beside)


class Recall:
    """The lookups, the session-start and prompt context, and the endless switch, as one."""

    def __init__(self, store: Store, retriever: Retriever, config: Config) -> None:
        blocks = Blocks(store, config, expand_hint(memctl_command()))
        self.lookups = Lookups(store, retriever, config)
        self.starts = SessionStart(store, retriever, config, blocks)
        self.prompts = PromptContext(store, retriever, config, blocks, self.starts)

    # --- asked ------------------------------------------------------------------------

    async def timeline(self, request: Timeline) -> TimelineResult:
        return await self.lookups.timeline(request)

    async def details(self, request: Details) -> DetailsResult:
        return await self.lookups.details(request)

    async def smart(self, request: SmartSearch) -> SmartResults:
        return await self.lookups.smart(request)

    async def verify(self, request: Verify) -> Verification:
        return await self.lookups.verify(request)

    async def stats(self, request: Stats) -> StatsReport:
        return await self.lookups.stats(request)

    async def tasks(self, request: Tasks) -> TaskList:
        return await self.lookups.tasks(request)

    # --- unasked: context hooks -------------------------------------------------------

    async def session_start(self, event: NewEvent) -> str:
        return await self.starts.block(event)

    async def prompt(self, event: NewEvent) -> str:
        return await self.prompts.block(event)

    # --- endless ----------------------------------------------------------------------

    async def set_endless(self, request: Endless) -> EndlessStatus:
        return await self.starts.set_endless(request)

    async def continuation(self, request: Continuation) -> ContinuationResult:
        return await self.starts.continuation(request)
