"""A session's working state, taken from its events without an LLM.  ``take`` is pure.

    goal            the latest substantive prompts (newest first)
    tasks           the project's open tasks (``store.tasks.open_tasks``)
    files           files edited or read, with counts, the most recently touched first
    errors          failures not yet followed by a success of the same command or file
    decisions       sentences with a decision cue, from prompts and the agent's replies
    last_reply      the agent's last message
    compact_summary the latest compaction summary Claude Code wrote, if any
    aspects         the salient topics, files and entities, for the continuity score

Every item carries the citation id of the event it comes from.  The writer stores a
session's snapshot as a derived event (kind ``snapshot``, replaced in place) on
PreCompact, Stop and SessionEnd; SessionStart takes a fresh one from the events
themselves, so it never depends on an asynchronous PreCompact having landed first.
Both read the session's rows with ``store.state.session_rows``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import msgspec

from .extract import aspects, decisions, is_substantive
from .summary import EDIT_TOOLS, program
from .task_rules import OpenTask
from .text import strings

__all__ = ["FileInPlay", "Item", "Row", "Snapshot", "plain", "take"]

TEXT_HEAD: Final = 4000
"""Characters of each text a snapshot reads: items are a sentence or two, compaction summaries
are quoted in part."""
WINDOW: Final = 2000
"""The latest events of a session a snapshot reads: a working state is recent by nature."""
GOALS: Final = 3
TASKS: Final = 10
FILES: Final = 10
ERRORS: Final = 5
DECISIONS: Final = 5
ITEM_CHARS: Final = 300
READ_TOOLS: Final = frozenset({"Read", "NotebookRead"})
BOOKKEEPING: Final = frozenset({"session_start", "session_end", "instructions", "notification", "pre_compact"})
"""Kinds that are not work: a resume's own SessionStart does not make a working state newer."""


class Row(NamedTuple):
    id: int
    cite: str
    kind: str
    tool: str | None
    title: str
    text: str
    """The head of the text (``TEXT_HEAD``)."""
    meta: dict[str, Any]
    ts: float


class Item(msgspec.Struct, kw_only=True):
    text: str
    cite: str
    id: int = 0
    """The event it comes from."""
    ts: float = 0.0


class FileInPlay(msgspec.Struct, kw_only=True):
    path: str
    edits: int = 0
    reads: int = 0
    cite: str = ""
    id: int = 0
    ts: float = 0.0


class Snapshot(msgspec.Struct, kw_only=True):
    session_id: str | None
    taken_at: float
    last_event_id: int = 0
    last_ts: float = 0.0
    """When its last piece of work happened (``last_event_id``): how old the working state is."""
    goal: list[Item] = []
    tasks: list[Item] = []
    """``[in_progress] content`` lines, citing the event that last changed each task."""
    files: list[FileInPlay] = []
    errors: list[Item] = []
    decisions: list[Item] = []
    last_reply: Item | None = None
    compact_summary: Item | None = None
    topics: list[str] = []
    file_names: list[str] = []
    entities: list[str] = []

    @property
    def empty(self) -> bool:
        return not (self.goal or self.tasks or self.files or self.errors or self.decisions or self.last_reply)


def _flat(text: str, limit: int = ITEM_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _error_keys(row: Row) -> set[str]:
    """What a failure is about, so that a later success of the same thing closes it."""
    keys = {f"file:{path}" for path in strings(row.meta.get("files"))}
    command = row.meta.get("command")
    if isinstance(command, str) and command.strip():
        keys.add(f"command:{program(command)}")
    return keys or {f"tool:{row.tool}"}


def take(
    rows: Sequence[Row], open_tasks: Sequence[OpenTask], session: str | None, now: float, *, scored: bool = True
) -> Snapshot:
    """The working state of a session from its events, oldest first.  ``scored``: with the
    aspects the continuity score needs (a snapshot only shown, not stored, skips them)."""
    goal: list[Item] = []
    files: dict[str, FileInPlay] = {}
    errors: dict[str, Row] = {}
    last_reply = compact = None
    for row in rows:
        if row.kind == "prompt":
            prompt = row.text or row.title.removeprefix("Prompt: ")
            if is_substantive(prompt):
                goal.append(Item(text=_flat(prompt), cite=row.cite, id=row.id, ts=row.ts))
        elif row.kind == "assistant":
            last_reply = Item(text=_flat(row.text or row.title, 500), cite=row.cite, id=row.id, ts=row.ts)
        elif row.kind == "compact_summary":
            compact = Item(text=row.text, cite=row.cite, id=row.id, ts=row.ts)
        elif row.kind == "tool_error":
            for key in _error_keys(row):
                errors[key] = row
        elif row.kind == "tool":
            for key in _error_keys(row):
                errors.pop(key, None)
            if row.tool in EDIT_TOOLS or row.tool in READ_TOOLS:
                for path in strings(row.meta.get("files")):
                    seen = files.setdefault(path, FileInPlay(path=path))
                    seen.edits += row.tool in EDIT_TOOLS
                    seen.reads += row.tool in READ_TOOLS
                    seen.cite, seen.id, seen.ts = row.cite, row.id, row.ts
    work = [row for row in rows if row.kind not in BOOKKEEPING]
    open_errors = sorted({row.id: row for row in errors.values()}.values(), key=lambda r: -r.id)[:ERRORS]
    said: dict[str, Item] = {}  # the newest decisions, newest first: scanned backwards until there are enough
    for row in reversed(rows):
        if len(said) >= DECISIONS:
            break
        if row.kind in ("prompt", "assistant"):
            for sentence in reversed(decisions(row.text or row.title)):
                said.setdefault(_flat(sentence), Item(text=_flat(sentence), cite=row.cite, id=row.id, ts=row.ts))
    unique_decisions = list(said.values())[:DECISIONS]
    ordered = sorted(open_tasks, key=lambda t: t.session_id != session)[:TASKS]  # its own first (a stable sort)
    tasks = [
        Item(text=f"[{t.status}] {_flat(t.content)}", cite=t.cite, id=t.event_id, ts=t.updated_at) for t in ordered
    ]
    said_texts = [item.text for item in goal[-GOALS:]] + [item.text for item in unique_decisions]
    found = aspects(said_texts + [t.content for t in open_tasks], paths=list(files)) if scored else None
    return Snapshot(
        session_id=session,
        taken_at=now,
        last_event_id=work[-1].id if work else 0,
        last_ts=work[-1].ts if work else 0.0,
        goal=goal[-GOALS:][::-1],
        tasks=tasks,
        files=sorted(files.values(), key=lambda f: -f.ts)[:FILES],
        errors=[Item(text=_flat(r.title), cite=r.cite, id=r.id, ts=r.ts) for r in open_errors],
        decisions=unique_decisions,
        last_reply=last_reply,
        compact_summary=compact,
        topics=list(found.topics) if found else [],
        file_names=list(found.files) if found else [],
        entities=list(found.entities) if found else [],
    )


def plain(snapshot: Snapshot) -> str:
    """The snapshot as searchable text, one line per item."""
    lines = [f"Goal: {item.text}" for item in snapshot.goal]
    lines += [f"Task: {item.text}" for item in snapshot.tasks]
    lines += [f"File: {f.path} ({f.edits} edits, {f.reads} reads)" for f in snapshot.files]
    lines += [f"Open error: {item.text}" for item in snapshot.errors]
    lines += [f"Decision: {item.text}" for item in snapshot.decisions]
    if snapshot.last_reply:
        lines.append(f"Last reply: {snapshot.last_reply.text}")
    return "\n".join(lines)
