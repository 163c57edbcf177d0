"""Claude Code's own memory, read into memd and kept current (``Mirror``), and what of it a
session has in its context already (``Transcripts``).

**Mirror.**  Each memory file of a project's Claude Code memory folder
(``memd.capture.claude_folder``) is stored as one ``claude-memory`` event of the project,
through capture like any event (the privacy filter, the idempotency key: the file's path
and content), so search, the timeline, the MCP tools and citations have it.  A folder is
looked at when a session starts, at each prompt, stop, compaction and session end (so a
memory written in the background, which the transcript records as ``memory_saved``, is
in by the next prompt), when a tool wrote inside it, and by ``memctl import``.  Looking is
a ``stat`` per file; only a file whose mtime or size moved is read.  A prompt's look is
skipped while the folder, its ``team/`` and ``MEMORY.md`` have not changed since the last
(three ``stat`` calls instead of one per file): a memory added, removed or renamed into
place changes its folder, a new one its index; an edit in place is seen by the tool's own
event, the transcript's ``memory_saved`` record, or the next stop.  A file whose content changed is stored
anew and its old version forgotten (stored first: a crash in between keeps both, never
neither); a deleted file's event is forgotten.

**Transcripts.**  What Claude Code's memory put into a session's context is in its
transcript (``relevant_memories`` attachments since the last compaction) and in
``MEMORY.md``, loaded into every session while Claude Code's memory is on, unless its
per-turn recall runs instead (its environment says so, ``Ingest.claude_memory``, or the
transcript shows a recall).  A transcript
is read incrementally: each call reads only what was appended since the last.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

import anyio
import msgspec
import structlog

from ..capture.claude_folder import auto_memory_on, claude_home, memory_folder
from ..capture.claude_memory import INDEX, index_lines, indexed_files, marked_lines, read_transcript_line
from ..capture.events import Skipped
from ..capture.prepare import Capture, InvalidPayload, NewEvent
from ..capture.project import project_root
from ..protocol import ClaudeMemoryMirrored, Ingest, MirrorClaudeMemory
from ..retrieve.native import InContext
from ..store import Store
from ..store.batch import atomically
from ..store.claude_memory import MirroredFile, drop_file, events_of_paths, files, put_file
from ..store.forget import plan
from ..store.projects import project_roots
from .erasure import erase
from .indexer import Indexer

__all__ = ["Folder", "Mirror", "Transcripts", "folder_of"]

log = structlog.get_logger("memd.native_memory")

MAX_FILES = 1000
MAX_FILE_BYTES = 256 * 1024
"""Bigger files are read up to this size (Claude Code itself cuts long memory files)."""
MAX_DEPTH = 3
"""Folder levels looked into: the memory folder, ``team/``, a team's mount."""
WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
FOLLOW_CHUNK = 4 * 1024 * 1024


class Folder(NamedTuple):
    home: str
    """Claude Code's home (``~/.claude``)."""
    root: str
    """The project root the memory belongs to."""
    path: str


class _Written(msgspec.Struct):
    file_path: str | None = None


class _Where(msgspec.Struct):
    """The two fields of a payload this module reads: decoded into a Struct, the rest of a
    large payload (a Write's content) is skipped, not built into Python objects."""

    transcript_path: str | None = None
    tool_input: _Written | None = None


_decode_where = msgspec.json.Decoder(_Where).decode


def _where(event: NewEvent) -> _Where:
    try:
        return _decode_where(event.payload)
    except msgspec.DecodeError:  # another shape (a tool_input that is no object): nothing to read
        return _Where()


def folder_of(event: NewEvent, where: _Where) -> Folder | None:
    """The memory folder of the project an event comes from, when its payload says which
    Claude Code home it comes from (``transcript_path``)."""
    home = claude_home(where.transcript_path) if where.transcript_path and event.cwd else None
    if home is None or not event.cwd:
        return None
    root = project_root(event.cwd)
    return Folder(home, root, memory_folder(home, root))


LOOKED_AT_ON = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "PreCompact")
"""Events that have their project's folder looked at (a prompt only when it changed), beside
a tool's write inside it."""


class _Seen(NamedTuple):
    path: str
    mtime_ns: int
    size: int


def _walk(folder: str) -> list[_Seen]:
    """The memory files of ``folder`` (``*.md`` but the index), at most ``MAX_FILES``."""
    found: list[_Seen] = []
    pending = [(folder, 0)]
    while pending and len(found) < MAX_FILES:
        directory, depth = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            try:
                if entry.is_dir(follow_symlinks=False) and depth + 1 < MAX_DEPTH and not entry.name.startswith("."):
                    pending.append((entry.path, depth + 1))
                elif entry.name.endswith(".md") and entry.name != INDEX and entry.is_file():
                    stat = entry.stat()
                    found.append(_Seen(entry.path, stat.st_mtime_ns, stat.st_size))
            except OSError:
                continue
    return found[:MAX_FILES]


def _stamp(folder: str) -> tuple[int, ...]:
    """When the folder, its ``team/`` and its index last changed: a file added, removed or
    renamed into place changes its folder's; Claude Code adds each new memory to the index."""
    stamps = []
    for path in (folder, os.path.join(folder, "team"), os.path.join(folder, INDEX)):
        try:
            stamps.append(os.stat(path).st_mtime_ns)
        except OSError:
            stamps.append(0)
    return tuple(stamps)


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


class Mirror:
    """Memory folders mirrored as ``claude-memory`` events (see the module doc)."""

    def __init__(
        self, store: Store, capture: Capture, indexer: Indexer | None, on_new_event: Callable[[], None] = lambda: None
    ) -> None:
        self.store = store
        self.capture = capture
        self.indexer = indexer
        self.on_new_event = on_new_event
        self._locks: dict[str, anyio.Lock] = {}
        self._stamps: dict[str, tuple[int, ...]] = {}
        self._thread = anyio.CapacityLimiter(1)

    async def heard(self, event: NewEvent) -> None:
        """A live hook event: its project's folder looked at, if the event calls for it."""
        if event.event not in LOOKED_AT_ON and event.tool not in WRITE_TOOLS:
            return  # decided before the payload is decoded: most events are tool calls
        where = _where(event)
        if (folder := folder_of(event, where)) is None:
            return
        written = where.tool_input.file_path if where.tool_input else None
        inside = written is not None and os.path.normpath(written).startswith(folder.path + os.sep)
        if event.event == "UserPromptSubmit" and _stamp(folder.path) == self._stamps.get(folder.path):
            return  # nothing added, removed or indexed since the last look: the prompt does not wait on one
        if event.event in LOOKED_AT_ON or inside:
            await self.look(folder)

    async def mirror(self, request: MirrorClaudeMemory) -> ClaudeMemoryMirrored:
        """``memctl import``: the memory folders of ``request.roots`` (all known projects' when
        empty) looked at now."""
        roots = request.roots or await self.store.readers.run(project_roots)
        done = ClaudeMemoryMirrored()
        for root in dict.fromkeys(roots):
            folder = Folder(request.home, root, memory_folder(request.home, root))
            if not await anyio.to_thread.run_sync(os.path.isdir, folder.path):
                continue
            looked = await self.look(folder)
            done.folders += looked.folders
            done.files += looked.files
            done.stored += looked.stored
            done.forgotten += looked.forgotten
        return done

    async def look(self, folder: Folder) -> ClaudeMemoryMirrored:
        """Bring the mirror of ``folder`` up to date (one look at a time per folder)."""
        async with self._locks.setdefault(folder.path, anyio.Lock()):
            self._stamps[folder.path] = _stamp(folder.path)  # before: a change during the look is seen next time
            return await self._look(folder)

    async def _look(self, folder: Folder) -> ClaudeMemoryMirrored:
        on_disk = await anyio.to_thread.run_sync(_walk, folder.path, limiter=self._thread)
        known = await self.store.readers.run(files, folder.path)
        done = ClaudeMemoryMirrored(folders=1, files=len(on_disk))
        stale: list[int] = []
        for seen in on_disk:
            row = known.pop(seen.path, None)
            if row is not None and (row.mtime_ns, row.size) == (seen.mtime_ns, seen.size):
                continue
            if (event_id := await self._store(folder, seen, row)) is not None:
                done.stored += 1
                if row is not None and row.event_id is not None and row.event_id != event_id:
                    stale.append(row.event_id)
        for gone in known.values() if len(on_disk) < MAX_FILES else ():  # deleted files (a cut listing tells none)
            if gone.event_id is not None:
                stale.append(gone.event_id)
            await self.store.writer.call(atomically(drop_file), gone.path)
        if stale:
            planned = await self.store.readers.run(plan, stale)
            done.forgotten = (await erase(self.store, self.indexer, planned, "claude-memory")).events
        if done.stored or done.forgotten:
            log.info("mirrored", folder_files=done.files, stored=done.stored, forgotten=done.forgotten)
            self.on_new_event()
            if self.indexer is not None:
                self.indexer.notify()
        return done

    async def _store(self, folder: Folder, seen: _Seen, row: MirroredFile | None) -> int | None:
        """Store one file that may have changed; its event id (None: unreadable, or a version
        forgotten by hand, which stays forgotten)."""
        content = await anyio.to_thread.run_sync(_read, seen.path, limiter=self._thread)
        if content is None:
            return None
        digest = hashlib.sha256(content.encode()).hexdigest()
        if row is not None and row.digest == digest:  # touched, not changed
            await self.store.writer.call(
                atomically(put_file), seen.path, folder.path, seen.mtime_ns, seen.size, digest, row.event_id
            )
            return None
        relative = os.path.relpath(seen.path, folder.path)
        payload = {
            "hook_event_name": "ClaudeMemory", "cwd": folder.root, "path": seen.path, "content": content,
            "scope": "team" if relative.split(os.sep, 1)[0] == "team" else "project",
        }  # fmt: skip
        ingest = Ingest(event="ClaudeMemory", sent_at_ns=seen.mtime_ns, payload=msgspec.json.encode(payload))
        try:
            event = await anyio.to_thread.run_sync(self.capture.prepare, ingest, time.time(), limiter=self._thread)
        except InvalidPayload:
            return None
        if isinstance(event, Skipped):
            return None
        committed = await self.store.writer.submit(event, folder.root)
        await self.store.writer.call(
            atomically(put_file), seen.path, folder.path, seen.mtime_ns, seen.size, digest, committed.event_id
        )
        return committed.event_id


class _Tail:
    """What one transcript said so far: read up to ``offset``."""

    def __init__(self) -> None:
        self.offset = 0
        self.recalled: dict[str, str] = {}
        self.recalls = False
        """Claude Code's per-turn recall has attached memories in this session: it runs
        instead of loading ``MEMORY.md``."""
        self.saved = False


def _follow(path: str, tail: _Tail) -> None:
    """Read what was appended to the transcript at ``path`` since ``tail.offset``, a chunk at a
    time (a transcript may be hundreds of MB; memory stays flat)."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < tail.offset:  # rewritten: start over
                tail.offset, tail.recalled = 0, {}
            f.seek(tail.offset)
            carry = b""
            while chunk := f.read(FOLLOW_CHUNK):
                data = carry + chunk
                end = data.rfind(b"\n") + 1  # a line still being written waits for the next call
                _take(tail, data[:end])
                tail.offset += end
                carry = data[end:]
    except OSError:
        return


def _take(tail: _Tail, lines: bytes) -> None:
    for line in marked_lines(lines):
        news = read_transcript_line(line)
        if news is None:
            continue
        if news.compacted:
            tail.recalled.clear()
        tail.recalled.update(news.recalled)
        tail.recalls = tail.recalls or bool(news.recalled)
        tail.saved = tail.saved or bool(news.saved)


def _index(folder: Folder) -> list[str]:
    """The lines of the folder's ``MEMORY.md`` Claude Code loads ([] when it loads none)."""
    if not auto_memory_on(folder.home, folder.root):
        return []
    content = _read(os.path.join(folder.path, INDEX))
    return index_lines(content) if content else []


class Transcripts:
    """What Claude Code's memory put into each session's context (see the module doc)."""

    KEPT = 256
    """Transcripts followed at once; the least recently asked about is dropped first."""

    def __init__(self, store: Store, mirror: Mirror) -> None:
        self.store = store
        self.mirror = mirror
        self._tails: OrderedDict[str, _Tail] = OrderedDict()

    async def in_context(self, event: NewEvent) -> InContext:
        """What the session of ``event`` has from Claude Code's memory now."""
        where = _where(event)
        folder, transcript = folder_of(event, where), where.transcript_path
        if folder is None or transcript is None:
            return InContext()
        tail = self._tails.pop(transcript, None) or _Tail()
        self._tails[transcript] = tail
        while len(self._tails) > self.KEPT:
            self._tails.popitem(last=False)
        await anyio.to_thread.run_sync(_follow, transcript, tail)
        if tail.saved:  # written in the background: mirrored before it is looked for
            tail.saved = False
            await self.mirror.look(folder)
        loaded = event.claude_memory == "" and not tail.recalls
        lines = await anyio.to_thread.run_sync(_index, folder) if loaded else []
        pointed = [os.path.normpath(os.path.join(folder.path, name)) for name in indexed_files(lines)]
        events = await self.store.readers.run(_events, list(tail.recalled), pointed)
        return InContext(
            recalled=frozenset(events[0].values()),
            indexed=frozenset(events[1].values()),
            texts=(*tail.recalled.values(), *lines),
        )


def _events(conn: sqlite3.Connection, recalled: list[str], pointed: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    return events_of_paths(conn, recalled), events_of_paths(conn, pointed)
