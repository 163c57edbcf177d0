"""Memories handed back, asked for and unasked: the server's one handle on them.

    asked     Timeline, Details, SmartSearch, Verify, Stats, Tasks    ``memd.services.lookups``
    unasked   starts.block(event), prompts.block(event) → a ``<memory-context>`` block, or ""
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
from typing import NamedTuple

from ..config import Config
from ..context import expand_hint
from ..store import Store
from .blocks import Blocks
from .lookups import Lookups
from .native_memory import Transcripts
from .prompt_context import PromptContext
from .repeats import Repeats
from .search import Retriever
from .session_start import SessionStart

__all__ = ["Recall", "memctl_command", "recall"]


def memctl_command() -> str:
    """How an agent's shell can run this installation's memctl: by name when that is the one
    on PATH, else by absolute path (a virtualenv's bin directory is rarely on PATH)."""
    beside = os.path.join(os.path.dirname(sys.executable), "memctl")
    if not os.access(beside, os.X_OK) or shutil.which("memctl") == beside:
        return "memctl"
    return shlex.quote(beside)


class Recall(NamedTuple):
    """Recall's three parts, built together because they share the blocks they render."""

    lookups: Lookups
    """Asked: Timeline, Details, SmartSearch, Verify, Stats, Tasks."""
    starts: SessionStart
    """Unasked at a session start (``block``), and the endless switch and Continuation."""
    prompts: PromptContext
    """Unasked at a prompt (``block``; ``anticipate`` starts its query's embedding early)."""


def recall(store: Store, retriever: Retriever, config: Config, transcripts: Transcripts | None = None) -> Recall:
    """``transcripts``: what Claude Code's own memory gave each session, left out of the blocks."""
    repeats = Repeats(store, transcripts)
    blocks = Blocks(store, config, expand_hint(memctl_command()), repeats)
    starts = SessionStart(store, retriever, config, blocks, repeats)
    prompts = PromptContext(store, retriever, config, blocks, starts, repeats)
    return Recall(Lookups(store, retriever, config), starts, prompts)
