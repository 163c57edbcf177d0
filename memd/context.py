"""What memd writes into an agent's context, rendered here: pure functions, no IO.

Claude Code reads a hook's stdout as JSON when it starts with ``{``: a
``systemMessage`` is shown to the user; ``hookSpecificOutput.additionalContext``
(always nested there, with the right ``hookEventName``) goes to the agent.  Output
over 10,000 characters is cut by Claude Code, so nothing here may exceed it: each
block is built line by line within a token budget (``memd.tokens``) and a character
cap well below that limit, and ``hook_output`` refuses anything longer.

The layers of progressive retrieval render as:

    index      [mem:Ab3xY9Kq] prompt · 2026-11-21 · 0.87 · ~120 tok: Fix the flaky login test.
    timeline   → [mem:Ab3xY9Kq] 14:05 tool_error Bash: pytest -x — Exit code 1 …
    details    a header, the stored text as a citable quote, the neighbours' ids

Injected blocks are wrapped in ``<memory-context …>`` with everything inside
XML-escaped, so stored text can never close the block or forge another one.  Only
``&``, ``<`` and the ``]]>`` sequence are escaped in text (all XML requires): a ``>``
stays, so markdown quotes read as quotes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, NamedTuple

from .cite import Quoted, label, render_quotes
from .protocol import CLAUDE_CODE, Detail, EntitiesResult, Entry, Hit, TeamHit, TimelineResult
from .retrieve.digest import LONG_FORM
from .tokens import estimate_tokens, truncate_to_tokens

if TYPE_CHECKING:  # the clients render with this module: the snapshot's rules stay unloaded
    from .capture.snapshot import Snapshot

__all__ = [
    "CONTINUATION_SECTIONS",
    "MAX_CONTEXT_CHARS",
    "MAX_OUTPUT",
    "UNCLOSED_PRIVATE_NOTICE",
    "Line",
    "block_body",
    "continuation_lines",
    "day",
    "detail_text",
    "entities_text",
    "escape",
    "expand_hint",
    "fit_detail",
    "hook_output",
    "index_line",
    "memory_block",
    "team_line",
    "timeline_text",
]

MAX_OUTPUT: Final = 10_000
"""Characters of hook stdout Claude Code keeps."""
MAX_CONTEXT_CHARS: Final = 8_000
"""Characters an injected block may take in the hook's JSON output (escapes included): the
rest of Claude Code's 10,000 is left for the wrapper and a notice to the user."""

UNCLOSED_PRIVATE_NOTICE: Final = (
    "memd: a <private> tag in this prompt was never closed, so everything after it was treated as private "
    "and not stored. Close it with </private> next time if only part was private."
)


def expand_hint(memctl: str = "memctl") -> str:
    """The line that tells an agent how to expand what a block cites (``memctl``: its path
    when it is not on PATH)."""
    where = f" (memctl is {memctl})" if memctl != "memctl" else ""
    return (
        "Expand a memory by its id: `memctl show mem:ID` (details), `memctl timeline mem:ID` (around it),"
        f" `memctl search QUERY` (more){where}; with memd's MCP server: mem_details, mem_timeline, mem_search."
    )


def hook_output(event: str, *, context: str = "", system_message: str = "", agent: str = CLAUDE_CODE) -> str:
    """The stdout for a hook, or ``""`` when there is nothing to say.  Codex CLI and Gemini CLI
    read the same JSON; Gemini CLI turns each ``<`` and ``>`` of the context into ``&lt;`` and
    ``&gt;``, so for it they are written U+2039 and U+203A (the blocks' tags; the text inside has its
    ``<`` XML-escaped already)."""
    if agent == "gemini":
        context = context.replace("<", "\u2039").replace(">", "\u203a")
    output: dict[str, object] = {}
    if system_message:
        output["systemMessage"] = system_message
    if context:
        output["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": context}
    if not output:
        return ""
    rendered = json.dumps(output, ensure_ascii=False)
    # Claude Code cuts a hook's output past 10,000 characters (Codex CLI past its own token
    # limit); Gemini CLI has no cap, and its first prompt carries the session-start block too.
    if len(rendered) > MAX_OUTPUT and agent != "gemini":
        raise ValueError(f"hook output of {len(rendered)} characters exceeds Claude Code's {MAX_OUTPUT}")
    return rendered


# --- the layers -------------------------------------------------------------------------


def day(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d")


def _clock(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _what(kind: str, tool: str | None) -> str:
    return f"{kind} {tool}" if tool else kind


def _by(agent: str) -> str:
    """Which agent's session it came from, said when it is not Claude Code's."""
    return "" if agent == CLAUDE_CODE else f" ({agent})"


def index_line(hit: Hit) -> str:
    """One hit of the index layer: citation id, kind (and the agent, when another than Claude
    Code), date, confidence, cost to expand, summary."""
    return (
        f"[{label(hit.cite)}] {_what(hit.kind, hit.tool)}{_by(hit.agent)} · {day(hit.client_ts or hit.received_at)}"
        f" · {hit.confidence:.2f} · ~{hit.tokens} tok: {hit.summary or hit.title}"
    )


def team_line(hit: TeamHit) -> str:
    """One memory found on the team server: citation id, kind, date, team, who shared it, whether
    only the server has it, title."""
    where = "" if hit.here else " · on the server only"
    return (
        f"[{label(hit.cite)}] {hit.kind} · {day(hit.client_ts)} · {hit.team}, shared by {hit.shared_by}{where}:"
        f" {hit.title[:100]}\n    {hit.snippet[:200]}"
    )


def _entry_line(entry: Entry) -> str:
    mark = "→" if entry.target else " "
    return f"{mark} [{label(entry.cite)}] {_clock(entry.client_ts)} {_what(entry.kind, entry.tool)}: {entry.preview}"


def timeline_text(result: TimelineResult) -> str:
    session = f"session {result.session_id[:8]}" if result.session_id else "no session"
    head = f"Timeline around [{label(result.target.cite)}] ({session}, oldest first, → marks it):"
    return "\n".join([head, *(_entry_line(e) for e in result.entries)])


def entities_text(result: EntitiesResult) -> str:
    """``memctl entities`` and ``mem_entities``: the most mentioned, or each entity asked for with
    where it was seen, what it goes with and the events that name it."""
    where = result.scope or "all projects"
    if result.notice:
        return result.notice
    if not result.details:
        if not result.entities:
            return f"No entities in {where} yet."
        lines = [f"Most mentioned in {where}:"]
        return "\n".join(lines + [f"{e.mentions:>6}  {e.kind:<8} {e.name}" for e in result.entities])
    parts = []
    for d in result.details:
        also = ", ".join(a for a in d.aliases if a != d.name.lower()) or "-"
        lines = [
            f"{d.kind} {d.name} (also: {also})",
            f"Named in {d.mentions} events of {d.sessions} sessions, first {_clock(d.first_seen)},"
            f" last {_clock(d.last_seen)}.",
        ]
        if d.related:
            lines.append("Goes with: " + ", ".join(f"{r.name} ({r.how}, {r.count})" for r in d.related))
        lines += [_entry_line(e) for e in d.events]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def detail_text(detail: Detail, style: str = "inline") -> str:
    """One memory in full: a header, its text as a citable quote, its neighbours."""
    head = f"[{label(detail.cite)}] {_what(detail.kind, detail.tool)}{_by(detail.agent)} · {_clock(detail.client_ts)}"
    if detail.project:
        head += f" · {detail.project}"
    lines = [head] if detail.kind in LONG_FORM else [head, f"Title: {detail.title}"]
    if detail.files:
        lines.append("Files: " + ", ".join(detail.files))
    body = detail.text or detail.title
    quote = Quoted(text=body, cite=detail.cite, when=day(detail.client_ts), session=detail.session_id)
    lines.append(render_quotes([quote], style))
    if detail.truncated:
        lines.append(f"(cut to fit the budget: `memctl show {label(detail.cite)} --budget 20000` has it all)")
    around = [f"previous {label(c)}" for c in [detail.previous] if c] + [f"next {label(c)}" for c in [detail.next] if c]
    if around:
        lines.append("Around it: " + ", ".join(around))
    return "\n".join(lines)


def fit_detail(detail: Detail, budget: int, style: str = "inline") -> Detail | None:
    """``detail`` with ``tokens`` set, its text cut if needed to fit ``budget``; None if even
    a cut one would not fit (less than ~a line of text left)."""
    detail.tokens = estimate_tokens(detail_text(detail, style))
    if detail.tokens <= budget:
        return detail
    text = detail.text
    detail.text, detail.truncated = "…", True
    room = budget - estimate_tokens(detail_text(detail, style)) - 2  # the frame of a cut detail, measured
    if room < MIN_TEXT_TOKENS:
        return None
    detail.text = truncate_to_tokens(text, room)
    detail.tokens = estimate_tokens(detail_text(detail, style))
    return detail if detail.tokens <= budget else None


MIN_TEXT_TOKENS: Final = 24


# --- injected blocks ----------------------------------------------------------------------


class Line(NamedTuple):
    """One item of an injected block: its section, its text (not yet escaped; a bullet
    line, or a multi-line quote when ``bullet`` is False), the memory it cites."""

    section: str
    text: str
    event_id: int
    bullet: bool = True
    quote: str = ""
    """The words of its memory the line shows, without citation, date or label: what is
    compared with what the agent has already (``memd.services.repeats``) when the memory
    says more than the line does."""


def escape(text: str) -> str:
    """``text`` safe inside an XML element: ``&``, ``<`` and ``]]>`` escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("]]>", "]]&gt;")


def block_body(block: str) -> str:
    """What a ``memory_block`` says, as plain text: without its opening and closing tags, and
    ``escape`` undone (for a page that escapes for itself: the web viewer)."""
    lines = block.strip().splitlines()
    if len(lines) >= 2 and lines[0].startswith("<memory-context") and lines[-1] == "</memory-context>":
        lines = lines[1:-1]
    return "\n".join(lines).strip().replace("]]&gt;", "]]>").replace("&lt;", "<").replace("&amp;", "&")


def _attribute(value: str) -> str:
    """``value`` safe inside a double-quoted XML attribute, on one line."""
    return escape(value).replace(">", "&gt;").replace('"', "&quot;").replace("\n", "&#10;")


def _item(line: Line) -> str:
    return f"- {escape(line.text)}" if line.bullet else escape(line.text)


def memory_block(
    attributes: dict[str, str],
    intro: str,
    sections: Sequence[str],
    candidates: Iterable[Line],
    *,
    root: str = "",
    hint: str = "",
    budget: int,
    max_chars: int = MAX_CONTEXT_CHARS,
) -> tuple[str, list[Line]]:
    """A ``<memory-context>`` block of the candidate lines that fit, and the lines kept.

    Candidates come in priority order and are taken while the whole block stays within
    ``budget`` tokens and ``max_chars`` characters; they are shown grouped by section,
    in the order of ``sections``.  Paths inside ``root`` are shown relative to it (the
    block names it once).  ``hint`` (``expand_hint()`` by default) closes the block.
    No line fits → ``""``: an empty block says nothing.
    """
    hint = escape(hint or expand_hint())
    if root:
        candidates = (line._replace(text=line.text.replace(root.rstrip("/") + "/", "")) for line in candidates)
    attrs = "".join(f' {name}="{_attribute(value)}"' for name, value in attributes.items())
    frame = f"<memory-context{attrs}>\n{escape(intro)}\n\n{hint}\n</memory-context>"
    headers = {section: f"{escape(section)}:" for section in sections}
    used_tokens, used_chars = estimate_tokens(frame), len(frame)
    kept: list[Line] = []
    opened: set[str] = set()
    for line in candidates:
        text = escape(line.text)
        if line.bullet and "\n" in text:
            raise ValueError("a bullet line of a memory block must be one line")
        cost_chars = len(text) + 3 + (0 if line.section in opened else len(headers[line.section]) + 2)
        cost_tokens = estimate_tokens(text) + 2 + (0 if line.section in opened else 4)
        if used_tokens + cost_tokens > budget or used_chars + cost_chars > max_chars:
            continue  # a shorter line of a later section may still fit
        kept.append(line)
        opened.add(line.section)
        used_tokens += cost_tokens
        used_chars += cost_chars
    # The running sums estimate; the rendered block decides (pieces do not add up exactly).
    while kept:
        block = _render(attrs, intro, hint, sections, headers, kept)
        if estimate_tokens(block) <= budget and _json_chars(block) <= max_chars:
            return block, kept
        kept.pop()
    return "", []


def _json_chars(text: str) -> int:
    """Characters ``text`` takes in hook output: JSON escapes quotes, backslashes, controls."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


def _render(
    attrs: str, intro: str, hint: str, sections: Sequence[str], headers: dict[str, str], kept: list[Line]
) -> str:
    body: list[str] = []
    for section in sections:
        lines = [_item(line) for line in kept if line.section == section]
        if lines:
            body += [headers[section], *lines]
    closing = ["", hint, "</memory-context>"]
    return "\n".join([f"<memory-context{attrs}>", escape(intro), "", *body, *closing])


# --- continuation (endless mode) -------------------------------------------------------------

CONTINUATION_SECTIONS: Final = (
    "Goal",
    "Open tasks",
    "Open errors",
    "Files in play",
    "Decisions",
    "Last reply",
    "Compaction summary",
    "Since then, in other sessions",
)
COMPACT_SUMMARY_TOKENS: Final = 600
"""Most of a compaction summary a continuation quotes: Claude Code's own summary is long."""


def continuation_lines(snapshot: Snapshot, since: Iterable[Line] = ()) -> list[Line]:
    """A snapshot's items as block lines, in the priority a tight budget keeps them."""
    lines = [Line("Goal", f"[mem:{i.cite}] {i.text}", i.id, quote=i.text) for i in snapshot.goal]
    lines += [Line("Open tasks", f"[mem:{i.cite}] {i.text}", i.id, quote=i.text) for i in snapshot.tasks]
    lines += [Line("Open errors", f"[mem:{i.cite}] {i.text}", i.id, quote=i.text) for i in snapshot.errors]
    lines += [
        Line("Files in play", f"[mem:{f.cite}] {f.path} ({f.edits} edits, {f.reads} reads)", f.id)
        for f in snapshot.files
    ]
    lines += [Line("Decisions", f"[mem:{i.cite}] {i.text}", i.id, quote=i.text) for i in snapshot.decisions]
    if reply := snapshot.last_reply:
        lines.append(Line("Last reply", f"[mem:{reply.cite}] {reply.text}", reply.id, quote=reply.text))
    if summary := snapshot.compact_summary:
        text = truncate_to_tokens(summary.text.strip(), COMPACT_SUMMARY_TOKENS)
        lines.append(Line("Compaction summary", f"[mem:{summary.cite}]\n{text}", summary.id, bullet=False))
    return [*lines, *since]
