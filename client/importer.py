"""``memctl import``: Claude Code transcripts (or a ``memctl export`` file) into memd.

Transcripts live in ``~/.claude/projects/<slug>/`` (``$CLAUDE_CONFIG_DIR/projects`` when
set): one ``<session>.jsonl`` per session, its subagents' in ``<session>/subagents/``
(older versions: ``agent-*.jsonl`` beside the sessions).  The slug is the project's path
with every character but ASCII letters and digits made ``-``; it is lossy, so it only
finds the folder: each event takes its ``cwd`` from its own record.

Files are read a line at a time (``memd.capture.transcripts``) and their events sent in
batches of at most ``BATCH_EVENTS`` events and ``BATCH_BYTES`` bytes; strings longer than
``MAX_STRING`` keep their head and tail (capture keeps far less of them anyway), so
memory stays flat whatever the file's size.  The daemon does the rest: the same capture
as live events, idempotency, summaries and embeddings.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from memd.capture.claude_memory import slug
from memd.capture.transcripts import HookEvent, Reader, fork_copies, hook_events, uuid_of
from memd.protocol import ExportedEvent, Import, Imported, ImportEvent, Restore

from .rpc import Client

__all__ = [
    "EXPORT_FORMAT",
    "Totals",
    "claude_projects",
    "import_files",
    "restore_file",
    "session_files",
    "slug",
    "transcripts",
]

BATCH_EVENTS = 200
BATCH_BYTES = 4 * 1024 * 1024
MAX_STRING = 256 * 1024
"""Longer strings keep their first and last MAX_STRING / 2 characters."""
EXPORT_FORMAT = "memd-export/1"
PROGRESS_EVERY = 0.2


def claude_projects(env: dict[str, str]) -> str:
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")
    return os.path.join(base, "projects")


def transcripts(folder: str) -> Iterator[tuple[str, str]]:
    """(path, agent type or "") of every transcript of one project folder: each session,
    then its subagents."""
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    for name in names:
        path = os.path.join(folder, name)
        if name.endswith(".jsonl") and os.path.isfile(path):
            if name.startswith("agent-"):  # older versions kept subagents beside the sessions
                yield path, "subagent"
            else:
                yield from session_files(path)


def session_files(path: str) -> Iterator[tuple[str, str]]:
    """One session's transcript and its subagents'."""
    yield path, ""
    yield from _subagents(os.path.join(path.removesuffix(".jsonl"), "subagents"))


def _subagents(folder: str) -> Iterator[tuple[str, str]]:
    if not os.path.isdir(folder):
        return
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            meta = os.path.join(folder, name.removesuffix(".jsonl") + ".meta.json")
            yield os.path.join(folder, name), _agent_type(meta)


def _agent_type(meta_path: str) -> str:
    try:
        with open(meta_path, "rb") as f:
            meta = msgspec.json.decode(f.read())
    except (OSError, msgspec.DecodeError):
        return "subagent"
    kind = meta.get("agentType") if isinstance(meta, dict) else None
    return kind if isinstance(kind, str) and kind else "subagent"


def _clip(value: Any) -> Any:
    if isinstance(value, str):
        half = MAX_STRING // 2
        return value if len(value) <= MAX_STRING else f"{value[:half]}\n[… cut by memctl import …]\n{value[-half:]}"
    if isinstance(value, dict):
        return {k: _clip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v) for v in value]
    return value


@dataclass
class Totals:
    """What an import did; the summary line prints it."""

    files: int = 0
    sessions: set[str] = field(default_factory=set)
    records: int = 0
    corrupt: int = 0
    repaired: int = 0
    """Lines read once their lone UTF-16 surrogates (half an emoji) were replaced by U+FFFD."""
    events: int = 0
    result: Imported = field(default_factory=Imported)

    def add(self, reply: Imported) -> None:
        for name in ("stored", "duplicates", "skipped", "refused", "cites_kept", "expired"):
            setattr(self.result, name, getattr(self.result, name) + getattr(reply, name))
        self.result.max_age_days = reply.max_age_days

    def line(self) -> str:
        r = self.result
        expired = f" {r.expired} left out by retention," if r.expired else ""
        return (
            f"{self.files} files · {len(self.sessions)} sessions · {self.events} events: {r.stored} stored,"
            f"{expired} {r.duplicates} already there, {r.skipped} skipped · {self.corrupt} unreadable lines skipped"
            + (f", {self.repaired} had lone surrogates replaced by U+FFFD" if self.repaired else "")
        )

    def retention_note(self) -> str:
        """Why events were left out, and how to keep them; "" when none were."""
        r = self.result
        if not r.expired:
            return ""
        return (
            f"{r.expired} events older than {r.max_age_days:g} days were low-importance (reads, searches,"
            " trivial commands), which retention removes: not imported. To keep them, raise [retention]"
            " max_age_days in config.toml (or set enabled = false), restart memd and import again."
        )


class Progress:
    """One status line on stderr, redrawn at most every PROGRESS_EVERY s (only on a terminal)."""

    def __init__(self, totals: Totals, of: int) -> None:
        self.totals, self.of = totals, of
        self.shown = 0.0
        self.live = sys.stderr.isatty()

    def update(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.live and (force or now - self.shown >= PROGRESS_EVERY):
            self.shown = now
            sys.stderr.write(f"\r\x1b[Kimporting [{self.totals.files}/{self.of}] {self.totals.line()}")
            sys.stderr.flush()

    def done(self) -> None:
        if self.live:
            sys.stderr.write("\r\x1b[K")


def import_files(
    client: Client, files: list[tuple[str, str]], since: float | None, on_file: Callable[[], None] | None = None
) -> Totals:
    """Send every event of ``files`` (from ``transcripts``) newer than ``since``."""
    totals = Totals()
    progress = Progress(totals, len(files))
    encode = msgspec.json.encode
    for path, agent_type in files:
        reader = Reader()
        batch: list[ImportEvent] = []
        size = 0
        sessions: set[str] = set()
        copied = _fork_copies(path) if not agent_type else set()
        with open(path, "rb") as f:
            for hook in hook_events(reader.records_of(f), agent_type, copied):
                if since is not None and hook.at_ns < since * 1e9:
                    continue
                sessions.add(hook.payload["session_id"])
                item = _item(hook, encode)
                batch.append(item)
                size += len(item.payload)
                if len(batch) >= BATCH_EVENTS or size >= BATCH_BYTES:
                    totals.add(client.call(Import(events=batch), Imported))
                    totals.events += len(batch)
                    batch, size = [], 0
                    progress.update()
        totals.add(client.call(Import(events=batch, finished=sorted(sessions)), Imported))
        totals.events += len(batch)
        totals.files += 1
        totals.records += reader.records
        totals.corrupt += reader.corrupt
        totals.repaired += reader.repaired
        totals.sessions |= sessions
        progress.update(force=True)
        if on_file:
            on_file()
    progress.done()
    return totals


def _fork_copies(path: str) -> set[str]:
    """The uuids of the records a fork's transcript copied from its parent (none for others)."""
    session = os.path.basename(path).removesuffix(".jsonl")
    with open(path, "rb") as f:
        parent, copied = fork_copies(f, session)
    if parent:
        try:
            with open(os.path.join(os.path.dirname(path), f"{parent}.jsonl"), "rb") as f:
                copied |= _uuids(f)  # every record of the parent
        except OSError:  # the parent's transcript is gone: the copies before its last reply are known
            pass
    return copied


def _uuids(lines: Iterable[bytes]) -> set[str]:
    return {uuid for line in lines if (uuid := uuid_of(line))}


def _item(hook: HookEvent, encode: Callable[[Any], bytes]) -> ImportEvent:
    payload = {**hook.payload, "hook_event_name": hook.event}
    return ImportEvent(event=hook.event, payload=encode(_clip(payload)), at_ns=hook.at_ns)


def restore_file(client: Client, path: str) -> Totals:
    """Send a ``memctl export`` file's events back, in batches; its first line must be the header."""
    totals = Totals()
    decode = msgspec.json.Decoder(ExportedEvent).decode
    batch: list[ExportedEvent] = []
    with open(path, "rb") as f:
        header = msgspec.json.decode(f.readline() or b"{}")
        if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
            raise ValueError(f"{path} is not a memctl export file (its first line names no {EXPORT_FORMAT!r} format)")
        for line in f:
            if not line.strip():
                continue
            try:
                batch.append(decode(line))
            except msgspec.DecodeError:
                totals.corrupt += 1
                continue
            if len(batch) >= BATCH_EVENTS:
                totals.add(client.call(Restore(events=batch), Imported))
                totals.events += len(batch)
                totals.sessions |= {e.session_id for e in batch if e.session_id}
                batch = []
    totals.add(client.call(Restore(events=batch), Imported))
    totals.events += len(batch)
    totals.sessions |= {e.session_id for e in batch if e.session_id}
    totals.files = 1
    return totals
