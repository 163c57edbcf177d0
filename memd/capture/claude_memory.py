"""Claude Code's own memory (2.1): its file format, its index, and what its transcripts say of it.

Claude Code keeps a project's memory as one Markdown file per fact in a folder (where:
``memd.capture.claude_folder``), each with a frontmatter the model is told to write::

    ---
    name: cookie-ttl
    description: Session cookies expire after 3600 s; set in auth/session.py
    metadata:
      type: project
    ---

    The session cookie TTL is 3600 s. **Why:** ... **How to apply:** ... see [[user-pytest]].

``type`` is one of ``user``, ``feedback``, ``project``, ``reference``; files under
``team/`` are shared with the project's other users.  ``MEMORY.md`` is the index, one
``- [Title](file.md) — hook`` line per memory, loaded into every session's context (its
first ``INDEX_LINES`` lines, at most ``INDEX_BYTES``).  A transcript records what reached
the model: ``{"type": "attachment", "attachment": {"type": "relevant_memories",
"memories": [{"path", "content", ...}]}}`` when the per-turn recall attached files, and
``{"type": "system", "subtype": "memory_saved", "writtenPaths": [...]}`` when a memory
was written in the background.  A ``compact_boundary`` record ends what the model still has.

Everything here is pure: text in, structures out.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import msgspec

from .text import string

__all__ = [
    "INDEX",
    "INDEX_BYTES",
    "INDEX_LINES",
    "NAME",
    "TYPES",
    "MemoryFile",
    "TranscriptNews",
    "index_entry",
    "index_lines",
    "indexed_files",
    "marked_lines",
    "parse",
    "promoted",
    "read_transcript_line",
    "render",
    "slug",
]

INDEX: Final = "MEMORY.md"
INDEX_LINES: Final = 200
INDEX_BYTES: Final = 25_000
"""How much of ``MEMORY.md`` Claude Code loads: the first 200 lines, at most 25 KB."""
TYPES: Final = ("user", "feedback", "project", "reference")

_FRONTMATTER: Final = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_FIELD: Final = re.compile(r"^(\s*)([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_LINK: Final = re.compile(r"\[\[([^\[\]\n|]{1,120})(?:\|[^\]\n]*)?\]\]")
_INDEX_ENTRY: Final = re.compile(r"\[[^\]]*\]\(([^)\s]+\.md)\)")


class MemoryFile(msgspec.Struct, kw_only=True):
    """One memory file as Claude Code reads it."""

    name: str
    description: str
    type: str
    """One of ``TYPES``, or ``""`` when the file names none (or another)."""
    body: str
    links: list[str] = []
    """The ``[[name]]`` links of the body, in order, once each."""


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            found = json.loads(value)  # YAML's double-quoted scalars escape as JSON does
        except ValueError:
            return value[1:-1]
        return found if isinstance(found, str) else value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def parse(text: str, fallback_name: str) -> MemoryFile:
    """A memory file's fields; a file without frontmatter is all body, named ``fallback_name``
    (its file name), as Claude Code still reads it."""
    fields: dict[str, str] = {}
    body = text
    if match := _FRONTMATTER.match(text):
        body = text[match.end() :]
        for line in match.group(1).splitlines():
            if found := _FIELD.match(line):
                indent, key, value = found.groups()
                if value and (not indent or key == "type"):  # ``type`` sits under ``metadata:``
                    fields.setdefault(key, _unquote(value))
    kind = fields.get("type", "").lower()
    body = body.strip()
    links = list(dict.fromkeys(m.group(1).strip() for m in _LINK.finditer(body)))
    return MemoryFile(
        name=fields.get("name") or fallback_name,
        description=fields.get("description", ""),
        type=kind if kind in TYPES else "",
        body=body,
        links=links,
    )


def _one_line(value: str) -> str:
    return " ".join(value.split())


_NEEDS_QUOTES: Final = re.compile(r"^[-?:,\[\]{}#&*!|>'\"%@`]|: | #|:$")


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar on one line: plain when YAML reads it back as written, else
    double-quoted (``Note: ...`` would be a mapping)."""
    value = _one_line(value)
    return json.dumps(value, ensure_ascii=False) if _NEEDS_QUOTES.search(value) else value


def render(memory: MemoryFile) -> str:
    """The file Claude Code would write for ``memory``: its frontmatter, then the body."""
    return (
        f"---\nname: {_scalar(memory.name)}\ndescription: {_scalar(memory.description)}\n"
        f"metadata:\n  type: {memory.type or 'project'}\n---\n\n{memory.body.strip()}\n"
    )


_PREFIX: Final = re.compile(r"^(?:Remember|Prompt|Decision|Fix|Fixed|Error|Edited|Wrote|Ran)\s*:\s*", re.I)


def promoted(cite: str, title: str, text: str, kind_of_fact: str = "") -> MemoryFile:
    """The Claude Code memory a memd memory (``mem:`` ``cite``) becomes (``memctl promote``):
    its title, without memd's prefix, as the description Claude Code's recall decides on; its
    text as the body, citing where it came from; ``kind_of_fact`` as the type (by default
    ``project``: a decision, a fix, a fact of the project)."""
    description = _one_line(_PREFIX.sub("", title))[:150]
    words = re.findall(r"[a-z0-9]+", description.lower())
    name = "-".join(words)[:48].strip("-") or f"memd-{cite.lower()}"
    body = text.strip() or description
    return MemoryFile(
        name=name,
        description=description,
        type=kind_of_fact if kind_of_fact in TYPES else "project",
        body=f"{body}\n\nFrom memd: mem:{cite} (`memctl show mem:{cite}` has its context).",
    )


NAME: Final = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")
"""A memory's name as it may be a file's: Claude Code asks for a short kebab-case slug."""


def index_entry(memory: MemoryFile, file_name: str) -> str:
    """``MEMORY.md``'s line for a memory, as Claude Code writes them."""
    title = memory.name.replace("-", " ").capitalize()
    return f"- [{title}]({file_name}) — {memory.description}"


def index_lines(text: str) -> list[str]:
    """The lines of ``MEMORY.md`` Claude Code loads, blank ones left out."""
    loaded = text.encode("utf-8")[:INDEX_BYTES].decode("utf-8", "ignore")
    return [line.strip() for line in loaded.splitlines()[:INDEX_LINES] if line.strip()]


def indexed_files(lines: list[str]) -> list[str]:
    """The files the index lines point to (``[Title](file.md)``), as written (relative)."""
    return [m.group(1) for line in lines for m in _INDEX_ENTRY.finditer(line)]


class TranscriptNews(msgspec.Struct, kw_only=True):
    """What one transcript line says of Claude Code's memory."""

    recalled: list[tuple[str, str]] = []
    """(path, content) of each memory the recall attached."""
    saved: list[str] = []
    """Paths of memory files written in the background (``memory_saved``)."""
    compacted: bool = False
    """A compaction boundary: what was attached before it left the model's context."""


_MARKERS: Final = (b'"relevant_memories"', b'"memory_saved"', b'"compact_boundary"')
_decode_record = msgspec.json.Decoder(dict[str, Any]).decode


def marked_lines(data: bytes) -> list[bytes]:
    """The lines of ``data`` (whole lines of a transcript) that name one of the records, in
    order: found by a search for each marker, so the megabytes of the other lines are
    scanned at C speed and never split or decoded."""
    starts: set[int] = set()
    for marker in _MARKERS:
        at = data.find(marker)
        while at != -1:
            start = data.rfind(b"\n", 0, at) + 1
            starts.add(start)
            end = data.find(b"\n", at)
            at = data.find(marker, end) if end != -1 else -1
    lines = []
    for start in sorted(starts):
        end = data.find(b"\n", start)
        lines.append(data[start : end if end != -1 else len(data)])
    return lines


def read_transcript_line(line: bytes) -> TranscriptNews | None:
    """What a transcript line says of Claude Code's memory, or None (most lines: no JSON
    is decoded for a line that names none of the records)."""
    if not any(marker in line for marker in _MARKERS):
        return None
    try:
        record = _decode_record(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    if record.get("type") == "system":
        if record.get("subtype") == "compact_boundary":
            return TranscriptNews(compacted=True)
        paths = record.get("writtenPaths") or record.get("written_paths")
        if record.get("subtype") == "memory_saved" and isinstance(paths, list):
            return TranscriptNews(saved=[p for p in paths if isinstance(p, str)])
        return None
    attachment = record.get("attachment")
    if record.get("type") != "attachment" or not isinstance(attachment, dict):
        return None
    memories = attachment.get("memories")
    if attachment.get("type") != "relevant_memories" or not isinstance(memories, list):
        return None
    recalled = [
        (m["path"], string(m.get("content")))
        for m in memories
        if isinstance(m, dict) and isinstance(m.get("path"), str)
    ]
    return TranscriptNews(recalled=recalled) if recalled else None


def slug(path: str) -> str:
    """Claude Code's folder name for a project: every UTF-16 code unit outside
    ``[A-Za-z0-9]`` becomes ``-``; past 200 characters, a hash of the path is appended."""
    units = path.encode("utf-16-le")
    chars = [
        chr(unit) if chr(unit).isascii() and chr(unit).isalnum() else "-"
        for unit in (int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2))
    ]
    name = "".join(chars)
    if len(name) <= 200:
        return name
    h = 0
    for i in range(0, len(units), 2):  # Java's String.hashCode over UTF-16 units, as 32-bit signed
        h = (31 * h + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits = ""
    while True:
        h, r = divmod(h, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        if not h:
            break
    return f"{name[:200]}-{digits}"
